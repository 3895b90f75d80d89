#!/bin/sh
# Makes sipvicious-scan.pcap: SIPVicious 0.3.3 (Debian package sipvicious)
# scans from 10.98.0.1 in a network namespace of its own (unshare -n):
# svmap sweeps 10.98.0.2-10.98.0.9 with OPTIONS (only 10.98.0.2 runs a SIP
# server, kamailio 5.6 answering every request; the seven others are
# addresses nothing listens on), then svwar enumerates extensions 100-139
# on 10.98.0.2 with REGISTER. dumpcap keeps UDP port 5060 on lo. Bounded
# in time (dumpcap stops after 20 s). Run as root from this directory:
#   unshare -n sh sipvicious-scan.sh
set -e
ip link set lo up
for i in 1 2 3 4 5 6 7 8 9; do ip addr add 10.98.0.$i/32 dev lo; done
# svwar does not bind its socket to -b: the local route to the server names
# the scanner's address as its source, so its packets leave from 10.98.0.1
ip route replace local 10.98.0.2 dev lo table local src 10.98.0.1
cat > /tmp/sipnab-kam.cfg <<'CFG'
#!KAMAILIO
debug=0
log_stderror=yes
children=1
listen=udp:10.98.0.2:5060
loadmodule "sl.so"
loadmodule "pv.so"
loadmodule "textops.so"
request_route {
	if (is_method("ACK")) { exit; }
	if (is_method("OPTIONS")) { sl_send_reply("200", "OK"); exit; }
	# extensions 100-104 exist (they challenge), the rest do not
	if ($tU =~ "^10[0-4]$") { append_to_reply("WWW-Authenticate: Digest realm=\"sipnab.test\", nonce=\"$TS$ci\", algorithm=MD5, qop=\"auth\"\r\n"); sl_send_reply("401", "Unauthorized"); exit; }
	sl_send_reply("404", "Not Found");
}
CFG
kamailio -f /tmp/sipnab-kam.cfg -DD -E -w /tmp >/dev/null 2>&1 &
KP=$!
rm -f out.pcap
dumpcap -q -i lo -f 'udp port 5060' -P -w out.pcap -a duration:20 &
DP=$!
sleep 2
timeout 8 svmap -b 10.98.0.1 -P 5070 10.98.0.2-10.98.0.9 >/dev/null 2>&1 || true
sleep 1
timeout 8 svwar -b 10.98.0.1 -P 5071 -e100-139 -m REGISTER 10.98.0.2 >/dev/null 2>&1 || true
wait $DP
kill $KP
mv out.pcap sipvicious-scan.pcap
