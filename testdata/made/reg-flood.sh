#!/bin/sh
# Makes reg-flood.pcap: SIPp 3.6 (Debian package sip-tester) in a network
# namespace of its own (unshare -n). A SIPp UAS on 10.97.0.2:5060 answers
# every REGISTER 401 with a fresh MD5 challenge (qop="auth"). From
# 10.97.0.1, a SIPp UAC sends 120 REGISTERs carrying Authorization at 200
# per second (a credential-guessing flood: 120 answered 401 in 0.6 s); from
# 10.97.0.3 another sends 30 at 20 per second (never more than 20 in one
# second: no flood). dumpcap keeps UDP port 5060 on lo. Run as root from
# this directory:
#   unshare -n sh reg-flood.sh
set -e
ip link set lo up
for i in 1 2 3; do ip addr add 10.97.0.$i/32 dev lo; done
D=$(mktemp -d)
cat > $D/uas.xml <<'XML'
<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="401 to every REGISTER">
  <recv request="REGISTER" />
  <send>
    <![CDATA[
      SIP/2.0 401 Unauthorized
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      WWW-Authenticate: Digest realm="sipnab.test", nonce="[pid]n[call_number]", algorithm=MD5, qop="auth"
      Content-Length: 0

    ]]>
  </send>
</scenario>
XML
cat > $D/uac.xml <<'XML'
<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="credentialed REGISTER">
  <send>
    <![CDATA[
      REGISTER sip:[remote_ip] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:1000@[remote_ip]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:1000@[remote_ip]>
      Call-ID: [call_id]
      CSeq: 2 REGISTER
      Contact: <sip:1000@[local_ip]:[local_port]>
      Authorization: Digest username="1000", realm="sipnab.test", nonce="guess", uri="sip:[remote_ip]", response="0123456789abcdef0123456789abcdef", algorithm=MD5, qop=auth, nc=00000001, cnonce="[call_number]"
      Max-Forwards: 70
      Expires: 3600
      User-Agent: reg-flood-uac
      Content-Length: 0

    ]]>
  </send>
  <recv response="401" />
</scenario>
XML
rm -f out.pcap
dumpcap -q -i lo -f 'udp port 5060' -P -w out.pcap -a duration:10 &
DP=$!
sleep 1.5
timeout 9 sipp -sf $D/uas.xml -i 10.97.0.2 -p 5060 -nostdin >/dev/null 2>&1 &
UP=$!
sleep 0.5
timeout 6 sipp -sf $D/uac.xml 10.97.0.2:5060 -i 10.97.0.1 -p 5062 -m 120 -r 200 -nostdin >/dev/null 2>&1 || true
timeout 6 sipp -sf $D/uac.xml 10.97.0.2:5060 -i 10.97.0.3 -p 5064 -m 30 -r 20 -nostdin >/dev/null 2>&1 || true
wait $DP
kill $UP 2>/dev/null || true
rm -rf $D
mv out.pcap reg-flood.pcap
