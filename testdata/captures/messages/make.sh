#!/bin/sh
# Regenerates <capture>.tsv: tshark's per-message SIP fields for every
# public capture (testdata/captures/public), the truth the NDJSON test
# (core/report: TestMessagesJSONAgreesWithTshark) compares --json with.
# Run from this directory with tshark 4.0.17 (Debian 12): sh make.sh
set -eu
for f in ../public/*; do
  name=$(basename "$f")
  tshark -n -r "$f" -Y sip -T fields -E separator=/t -E occurrence=a -E aggregator=/s \
    -e frame.number -e frame.time_epoch -e ip.src -e ipv6.src -e ip.dst -e ipv6.dst \
    -e udp.srcport -e tcp.srcport -e udp.dstport -e tcp.dstport \
    -e sip.Method -e sip.Status-Code -e sip.Call-ID -e sip.CSeq.seq -e sip.CSeq.method \
    > "$name.tsv" 2>/dev/null || rm -f "$name.tsv"
  [ -s "$name.tsv" ] || rm -f "$name.tsv"
done
