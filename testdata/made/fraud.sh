#!/bin/sh
# Makes fraud.pcap: SIPp 3.6 (Debian package sip-tester) in a network
# namespace of its own (unshare -n). From 10.96.0.1, a SIPp UAC dials
# 441700001, 441700002, ... 441700005 in turn (To and Request-URI user:
# 44170000 followed by SIPp's call number) and a SIPp UAS on
# 10.96.0.2:5060 refuses each with 404 (a sequential number scan). From
# 10.96.0.3, SIPp's built-in UAC places 4 calls to 882300001 (2 per
# second), each answered 200 by SIPp's built-in UAS on 10.96.0.4:5060 and
# hung up after 1 s (short completed calls to one destination prefix:
# wangiri's pattern). dumpcap keeps UDP port 5060 on lo. Run as root from
# this directory:
#   unshare -n sh fraud.sh
set -e
ip link set lo up
for i in 1 2 3 4; do ip addr add 10.96.0.$i/32 dev lo; done
D=$(mktemp -d)
cat > $D/uas404.xml <<'XML'
<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="404 to every INVITE">
  <recv request="INVITE" />
  <send>
    <![CDATA[
      SIP/2.0 404 Not Found
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]>
  </send>
  <recv request="ACK" />
</scenario>
XML
cat > $D/uacseq.xml <<'XML'
<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="INVITE to consecutive numbers">
  <send>
    <![CDATA[
      INVITE sip:44170000[call_number]@[remote_ip] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:caller@[local_ip]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:44170000[call_number]@[remote_ip]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: <sip:caller@[local_ip]:[local_port]>
      Max-Forwards: 70
      Content-Length: 0

    ]]>
  </send>
  <recv response="404" />
  <send>
    <![CDATA[
      ACK sip:44170000[call_number]@[remote_ip] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:caller@[local_ip]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:44170000[call_number]@[remote_ip]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Max-Forwards: 70
      Content-Length: 0

    ]]>
  </send>
</scenario>
XML
rm -f out.pcap
dumpcap -q -i lo -f 'udp port 5060' -P -w out.pcap -a duration:12 &
DP=$!
sleep 1.5
timeout 10 sipp -sf $D/uas404.xml -i 10.96.0.2 -p 5060 -nostdin >/dev/null 2>&1 &
U1=$!
timeout 10 sipp -sn uas -i 10.96.0.4 -p 5060 -nostdin >/dev/null 2>&1 &
U2=$!
sleep 0.5
timeout 6 sipp -sf $D/uacseq.xml 10.96.0.2:5060 -i 10.96.0.1 -p 5062 -m 5 -r 5 -nostdin >/dev/null 2>&1 || true
timeout 8 sipp -sn uac 10.96.0.4:5060 -i 10.96.0.3 -p 5064 -s 882300001 -d 1000 -m 4 -r 2 -nostdin >/dev/null 2>&1 || true
wait $DP
kill $U1 $U2 2>/dev/null || true
rm -rf $D
mv out.pcap fraud.pcap
