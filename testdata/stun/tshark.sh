#!/bin/sh
# tshark's decoding of every STUN attribute and ChannelData header in the
# capture: turn-relayed-call.pcapng.tshark.tsv is this script's output.
cd "$(dirname "$0")"
tshark -r turn-relayed-call.pcapng -Y stun -T fields -E separator=/t -E aggregator=, -E header=y \
  -e frame.number -e ip.src -e udp.srcport -e ip.dst -e udp.dstport \
  -e stun.type.class -e stun.type.method -e stun.id -e stun.att.type \
  -e stun.att.ipv4 -e stun.att.port -e stun.att.lifetime -e stun.att.error.class -e stun.att.error \
  -e stun.att.error.reason -e stun.att.software -e stun.att.realm -e stun.att.nonce \
  -e stun.att.crc32 -e stun.att.crc32.status -e stun.att.priority -e stun.att.tie-breaker \
  -e stun.att.channelnum -e stun.att.transp -e stun.channel -e stun.length > turn-relayed-call.pcapng.tshark.tsv
# RTP inside the ChannelData messages (tshark's RTP heuristic), under the
# outer addresses: turn-relayed-call.pcapng.rtp-streams.txt is this output.
tshark -r turn-relayed-call.pcapng -q -o rtp.heuristic_rtp:TRUE -z rtp,streams > turn-relayed-call.pcapng.rtp-streams.txt
