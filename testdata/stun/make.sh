#!/bin/sh
# Makes turn-relayed-call.pcapng (testdata/stun/README.md). Needs root,
# coturn (turnserver, turnutils_stunclient, turnutils_uclient, turnutils_peer),
# iptables and dumpcap. Three network namespaces, removed at the end:
#   stc  client 10.0.0.2 (behind the NAT; the capture point, veth c0)
#   str  NAT router 10.0.0.1 / 198.51.100.254 (iptables MASQUERADE)
#   sts  TURN server 198.51.100.1:3478 and peer 198.51.100.2
set -e
out=${1:-$(dirname "$0")/turn-relayed-call.pcapng}
(cd "$(dirname "$0")/turnrtp" && go build -o /tmp/turnrtp .)
trap 'for n in stc str sts; do ip netns del $n 2>/dev/null || true; done' EXIT
for n in stc str sts; do ip netns add $n; ip -n $n link set lo up; done
ip link add c0 netns stc type veth peer name r0 netns str
ip link add r1 netns str type veth peer name s1 netns sts
ip -n stc addr add 10.0.0.2/24 dev c0; ip -n stc link set c0 up; ip -n stc route add default via 10.0.0.1
ip -n str addr add 10.0.0.1/24 dev r0; ip -n str link set r0 up
ip -n str addr add 198.51.100.254/24 dev r1; ip -n str link set r1 up
ip -n sts addr add 198.51.100.1/24 dev s1; ip -n sts addr add 198.51.100.2/24 dev s1; ip -n sts link set s1 up
ip netns exec str sysctl -qw net.ipv4.ip_forward=1
ip netns exec str iptables -t nat -A POSTROUTING -o r1 -j MASQUERADE
ip netns exec sts timeout 30 turnserver --no-tls --no-dtls -L 198.51.100.1 -E 198.51.100.1 \
  --relay-ip 198.51.100.1 --min-port 49152 --max-port 49200 -a -u alice:secret -r example.org \
  --no-cli --log-file stdout --simple-log >/dev/null 2>&1 &
ip netns exec sts timeout 30 turnutils_peer -L 198.51.100.2 -p 3480 >/dev/null 2>&1 &
ip netns exec stc timeout 25 dumpcap -q -i c0 -f "not icmp6" -w "$out" >/dev/null 2>&1 & dc=$!
sleep 2
ip netns exec stc timeout 5 turnutils_stunclient 198.51.100.1
ip netns exec stc timeout 10 turnutils_uclient -u alice -w secret -e 198.51.100.2 -r 3480 -n 5 -m 1 -c 198.51.100.1 >/dev/null
ip netns exec sts timeout 12 /tmp/turnrtp peer &
sleep 0.5
ip netns exec stc timeout 12 /tmp/turnrtp client
sleep 2
kill -INT $dc || true
wait
