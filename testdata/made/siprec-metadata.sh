#!/bin/sh
# Makes siprec-metadata.pcap: a SIPREC recording session (RFC 7866) on
# loopback, in a network namespace of its own (unshare -n). A sipp UAC
# playing the session recording client (siprec-uac.xml: INVITE with
# Require: siprec, +sip.src, and a multipart/mixed body of SDP with
# a=label lines and application/rs-metadata+xml) calls a stock sipp UAS
# playing the recording server; ACK, half a second, BYE. Bounded in time
# (dumpcap stops after 8 s, each sipp after 6 s). Run as root, from this
# directory: unshare -n sh siprec-metadata.sh
set -e
ip link set lo up
rm -f out.pcap
dumpcap -q -i lo -f 'udp port 5060 or udp port 5062' -P -w out.pcap -a duration:8 &
DP=$!
sleep 1.5
timeout 6 sipp -sn uas -i 127.0.0.1 -p 5060 -m 1 -nostdin >/dev/null 2>&1 &
UAS=$!
sleep 0.5
timeout 6 sipp -sf siprec-uac.xml 127.0.0.1:5060 -i 127.0.0.1 -p 5062 -m 1 -nostdin >/dev/null 2>&1 || true
wait $UAS || true
wait $DP
mv out.pcap siprec-metadata.pcap
