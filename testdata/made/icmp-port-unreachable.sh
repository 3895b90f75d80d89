#!/bin/sh
# Makes icmp-port-unreachable.pcap: a sipp UAC sends INVITEs to a port
# nothing listens on, in a network namespace of its own (unshare -n), and
# the kernel answers each with ICMP (IPv4) or ICMPv6 port unreachable.
# Bounded in time (dumpcap stops after 14 s, each sipp after 8 s). Run as
# root: unshare -n sh testdata/made/icmp-port-unreachable.sh
set -e
ip link set lo up
ip addr add 10.99.0.1/32 dev lo
ip addr add 10.99.0.2/32 dev lo
ip -6 addr add fd00:99::1/128 dev lo nodad
ip -6 addr add fd00:99::2/128 dev lo nodad
# answer every INVITE: no ICMP rate limit inside this namespace
sysctl -qw net.ipv4.icmp_ratelimit=0
sysctl -qw net.ipv6.icmp.ratelimit=0
rm -f out.pcap
dumpcap -q -i lo -f 'udp or icmp or icmp6' -P -w out.pcap -a duration:14 &
DP=$!
sleep 1.5
# two calls from one 5-tuple (only the quoted Call-ID tells them apart),
# each INVITE sent three times (Timer A), nothing listening on 5060
timeout 8 sipp -sn uac 10.99.0.2:5060 -i 10.99.0.1 -p 5062 -m 2 -r 2 -max_invite_retrans 2 -nostdin >/dev/null 2>&1 || true
timeout 6 sipp -sn uac '[fd00:99::2]:5060' -i fd00:99::1 -p 5064 -m 1 -max_invite_retrans 2 -nostdin >/dev/null 2>&1 || true
wait $DP
mv out.pcap icmp-port-unreachable.pcap
