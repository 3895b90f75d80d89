package decode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/packet"
)

const sipOptions = "OPTIONS sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10;branch=z9hG4bK1\r\nCall-ID: encap-1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"

// want is one expected packet.
type want struct {
	src, dst    string
	tr          packet.Transport
	payload     string
	reassembled bool
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func checkPackets(t *testing.T, got []packet.Packet, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		for i, p := range got {
			t.Logf("packet %d: %v -> %v %v reassembled=%v %.60q", i, p.Src, p.Dst, p.Transport, p.Reassembled, p.Payload)
		}
		t.Fatalf("got %d packets, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		p := got[i]
		if p.Src != ap(w.src) || p.Dst != ap(w.dst) {
			t.Errorf("packet %d: got %v -> %v, want %s -> %s", i, p.Src, p.Dst, w.src, w.dst)
		}
		if p.Transport != w.tr {
			t.Errorf("packet %d: got transport %v, want %v", i, p.Transport, w.tr)
		}
		if string(p.Payload) != w.payload {
			t.Errorf("packet %d: got payload %.80q, want %.80q", i, p.Payload, w.payload)
		}
		if p.Reassembled != w.reassembled {
			t.Errorf("packet %d: got reassembled %v, want %v", i, p.Reassembled, w.reassembled)
		}
	}
}

func checkUndecodable(t *testing.T, st Stats, want map[string]uint64) {
	t.Helper()
	got := st.UndecodableMap()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got undecodable %v, want %v", got, want)
	}
	var sum uint64
	for _, v := range want {
		sum += v
	}
	if st.UndecodableFrames != sum {
		t.Fatalf("got %d undecodable frames, want %d", st.UndecodableFrames, sum)
	}
}

// checkOther asserts the other-traffic counters (frames of non-VoIP
// traffic, not undecodable) by kind.
func checkOther(t *testing.T, st Stats, want map[string]uint64) {
	t.Helper()
	got := st.OtherTrafficMap()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got other traffic %v, want %v", got, want)
	}
	var sum uint64
	for _, v := range want {
		sum += v
	}
	if st.OtherTrafficFrames != sum || st.UndecodableFrames != 0 {
		t.Fatalf("got %d other-traffic frames and %d undecodable, want %d and 0", st.OtherTrafficFrames, st.UndecodableFrames, sum)
	}
}

func mplsLabel(label uint32, bottom bool) []byte {
	v := label<<12 | 64
	if bottom {
		v |= 0x100
	}
	return binary.BigEndian.AppendUint32(nil, v)
}

func sllHeader(proto uint16, addrLen []byte) []byte {
	b := []byte{0, 0, 0, 1}
	b = append(b, addrLen...)
	b = append(b, 2, 0, 0, 0, 0, 1, 0, 0)
	return binary.BigEndian.AppendUint16(b, proto)
}

func sll2Header(proto uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, proto)
	b = append(b, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6)
	return append(b, 2, 0, 0, 0, 0, 1, 0, 0)
}

func erspan3(ft byte, sub bool) []byte {
	b := []byte{0x20, 0x64, 0x00, 0x01, 0, 0, 0, 9, 0, 0, ft << 2, 0}
	if sub {
		b[11] |= 1
		b = append(b, 1, 2, 3, 4, 5, 6, 7, 8)
	}
	return b
}

var vxlanHeader = []byte{0x08, 0, 0, 0, 0, 0, 0x2a, 0}

// encapCase is one hand-built capture and what decoding it must yield.
type encapCase struct {
	name   string
	frames []*packet.Frame
	cfg    Config
	want   []want
	undec  map[string]uint64
	check  func(t *testing.T, st Stats)
}

func TestEncapsulations(t *testing.T) {
	for _, tc := range encapCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			c, st := decodeAll(t, tc.frames, tc.cfg)
			checkPackets(t, c.pkts, tc.want)
			checkUndecodable(t, st, tc.undec)
			if tc.check != nil {
				tc.check(t, st)
			}
			if len(tc.want) > 0 && c.pkts[0].Transport == packet.TransportUDP && !c.pkts[0].HasDSCP {
				t.Errorf("got no DSCP on a UDP packet")
			}
		})
	}
}

func encapCases(t *testing.T) []encapCase {
	sip := []byte(sipOptions)
	u4 := ipUDP(t, 5060, 5080, sip)
	u6 := ip6UDP(t, 5060, 5080, sip)
	w4 := []want{{"192.0.2.10:5060", "192.0.2.20:5080", packet.TransportUDP, sipOptions, false}}
	w6 := []want{{"[2001:db8::10]:5060", "[2001:db8::20]:5080", packet.TransportUDP, sipOptions, false}}

	outerA, outerB := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	ipip := ser(t, eth(layers.EthernetTypeIPv4), v4(outerA, outerB, layers.IPProtocolIPv4), gopacket.Payload(u4))
	sixin4 := ser(t, eth(layers.EthernetTypeIPv4), v4(outerA, outerB, layers.IPProtocolIPv6), gopacket.Payload(u6))

	tags := func(n int) []byte {
		var b []byte
		for i := 0; i < n; i++ {
			next := uint16(0x8100)
			if i == n-1 {
				next = 0x0800
			}
			b = append(b, vlanTag(uint16(i+1), next)...)
		}
		return withEth(t, 0x8100, append(b, u4...))
	}

	pppoe := append([]byte{0x11, 0x00, 0x00, 0x01}, binary.BigEndian.AppendUint16(nil, uint16(2+len(u4)))...)
	pppoe = append(append(pppoe, 0x00, 0x21), u4...)

	hepBytes, err := hep.Encode(&hep.Message{Version: 3, Protocol: 17, Src: ap("10.1.1.1:5060"), Dst: ap("10.1.1.2:5060"),
		HasTS: true, TS: t0, ProtoType: hep.ProtoSIP, HasAgentID: true, AgentID: 9, Payload: sip})
	if err != nil {
		t.Fatal(err)
	}

	big := strings.Repeat("a=x-attribute:0123456789\r\n", 120)
	bigSIP := "INVITE sip:bob@example.com SIP/2.0\r\nCall-ID: frag\r\nContent-Type: application/sdp\r\nContent-Length: " +
		fmt.Sprint(len(big)) + "\r\n\r\n" + big
	frag4 := fragments4(t, layers.IPProtocolUDP, 77, udpBody(t, 5060, 5080, []byte(bigSIP), false), 1200)
	frag6 := fragments6(t, layers.IPProtocolUDP, 0x01020304, udpBody(t, 5060, 5080, []byte(bigSIP), true), 1200)
	wBig4 := []want{{"192.0.2.10:5060", "192.0.2.20:5080", packet.TransportUDP, bigSIP, true}}
	wBig6 := []want{{"[2001:db8::10]:5060", "[2001:db8::20]:5080", packet.TransportUDP, bigSIP, true}}

	// An overlapping fragment rewrites bytes of the first one.
	overlap := fragments4(t, layers.IPProtocolUDP, 78, udpBody(t, 5060, 5080, []byte(bigSIP), false), 1200)
	ovIP := v4(ipA, ipB, layers.IPProtocolUDP)
	ovIP.Id, ovIP.FragOffset, ovIP.Flags = 78, 100, layers.IPv4MoreFragments
	overlap[1] = ser(t, eth(layers.EthernetTypeIPv4), ovIP, gopacket.Payload(bytes.Repeat([]byte{'X'}, 1200)))

	rtp := append([]byte{0x80, 0x08, 0x00, 0x01, 0, 0, 0, 160, 0x12, 0x34, 0x56, 0x78}, bytes.Repeat([]byte{0xd5}, 160)...)

	destOpts := []byte{byte(layers.IPProtocolUDP), 0, 1, 4, 0, 0, 0, 0}
	ip6do := ser(t, eth(layers.EthernetTypeIPv6), v6(ip6A, ip6B, layers.IPProtocolIPv6Destination),
		gopacket.Payload(append(destOpts, udpBody(t, 5060, 5080, sip, true)...)))

	icmpUnreach := ser(t, eth(layers.EthernetTypeIPv4), v4(ipB, ipA, layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(3, 3)}, gopacket.Payload(u4[:28]))
	icmpEcho := ser(t, eth(layers.EthernetTypeIPv4), v4(ipB, ipA, layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 1, Seq: 1}, gopacket.Payload([]byte("ping")))
	ospf := ser(t, eth(layers.EthernetTypeIPv4), v4(ipA, ipB, layers.IPProtocol(89)), gopacket.Payload([]byte{2, 1, 0, 44}))
	arp := withEth(t, 0x0806, bytes.Repeat([]byte{0}, 28))
	badIHL := append([]byte(nil), ethUDP(t, 5060, 5060, sip)...)
	badIHL[14] = 0x43

	snapped := frame(LinkEthernet, ethUDP(t, 5060, 5080, sip)[:14+28+20])
	snapped.OrigLen = 14 + 28 + len(sip)

	return []encapCase{
		{"ethernet ipv4 udp", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x0800, u4))}, Config{}, w4, nil, nil},
		{"ethernet ipv6 udp", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x86DD, u6))}, Config{}, w6, nil, nil},
		{"802.1Q", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x8100, append(vlanTag(100, 0x0800), u4...)))}, Config{}, w4, nil,
			func(t *testing.T, st Stats) { eq(t, "vlan tags", st.VLANTags, 1) }},
		{"QinQ 0x88a8", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x88A8, append(append(vlanTag(10, 0x8100), vlanTag(20, 0x86DD)...), u6...)))}, Config{}, w6, nil,
			func(t *testing.T, st Stats) { eq(t, "vlan tags", st.VLANTags, 2) }},
		{"QinQ 0x9100", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x9100, append(append(vlanTag(10, 0x8100), vlanTag(20, 0x0800)...), u4...)))}, Config{}, w4, nil,
			func(t *testing.T, st Stats) { eq(t, "vlan tags", st.VLANTags, 2) }},
		{"five tags fit the nesting budget", []*packet.Frame{frame(LinkEthernet, tags(5))}, Config{}, w4, nil, nil},
		{"six tags are over-nested", []*packet.Frame{frame(LinkEthernet, tags(6))}, Config{}, nil, map[string]uint64{"nesting_limit_exceeded": 1}, nil},
		{"MPLS two labels", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x8847, append(append(mplsLabel(100, false), mplsLabel(200, true)...), u4...)))}, Config{}, w4, nil,
			func(t *testing.T, st Stats) { eq(t, "mpls stacks", st.MPLSStacks, 1) }},
		{"PPPoE session", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x8864, pppoe))}, Config{}, w4, nil,
			func(t *testing.T, st Stats) { eq(t, "pppoe", st.PPPoE, 1) }},
		{"IP in IP", []*packet.Frame{frame(LinkEthernet, ipip)}, Config{}, w4, nil,
			func(t *testing.T, st Stats) { eq(t, "ip in ip", st.IPinIP, 1) }},
		{"6in4", []*packet.Frame{frame(LinkEthernet, sixin4)}, Config{}, w6, nil,
			func(t *testing.T, st Stats) { eq(t, "ip in ip", st.IPinIP, 1) }},
		{"GRE carrying IPv4", []*packet.Frame{frame(LinkEthernet, grePacket(t, 0x0800, false, u4))}, Config{}, w4, nil,
			func(t *testing.T, st Stats) { eq(t, "gre", st.GRE, 1) }},
		{"GRE transparent Ethernet bridging", []*packet.Frame{frame(LinkEthernet, grePacket(t, 0x6558, false, withEth(t, 0x0800, u4)))}, Config{}, w4, nil, nil},
		{"ERSPAN type I", []*packet.Frame{frame(LinkEthernet, grePacket(t, 0x88BE, false, withEth(t, 0x0800, u4)))}, Config{}, w4, nil,
			func(t *testing.T, st Stats) { eq(t, "erspan", st.ERSPAN, 1) }},
		{"ERSPAN type II", []*packet.Frame{frame(LinkEthernet, grePacket(t, 0x88BE, true, append([]byte{0x10, 0x64, 0x00, 0x01, 0, 0, 0, 0}, withEth(t, 0x0800, u4)...)))}, Config{}, w4, nil, nil},
		{"ERSPAN type II with a VLAN inside", []*packet.Frame{frame(LinkEthernet, grePacket(t, 0x88BE, true, append([]byte{0x10, 0x64, 0x00, 0x01, 0, 0, 0, 0}, withEth(t, 0x8100, append(vlanTag(5, 0x0800), u4...))...)))}, Config{}, w4, nil, nil},
		{"ERSPAN type III", []*packet.Frame{frame(LinkEthernet, grePacket(t, 0x22EB, true, append(erspan3(0, false), withEth(t, 0x0800, u4)...)))}, Config{}, w4, nil, nil},
		{"ERSPAN type III with subheader", []*packet.Frame{frame(LinkEthernet, grePacket(t, 0x22EB, true, append(erspan3(0, true), withEth(t, 0x86DD, u6)...)))}, Config{}, w6, nil, nil},
		{"ERSPAN type III carrying IP", []*packet.Frame{frame(LinkEthernet, grePacket(t, 0x22EB, true, append(erspan3(2, false), u4...)))}, Config{}, w4, nil, nil},
		{"ERSPAN type II bad version", []*packet.Frame{frame(LinkEthernet, grePacket(t, 0x88BE, true, append([]byte{0x30, 0x64, 0x00, 0x01, 0, 0, 0, 0}, withEth(t, 0x0800, u4)...)))}, Config{}, nil, map[string]uint64{"decode_error": 1}, nil},
		{"GRE carrying PPP", []*packet.Frame{frame(LinkEthernet, grePacket(t, 0x880B, false, []byte{0xff, 0x03, 0, 0x21}))}, Config{}, nil, map[string]uint64{"not_ip_ethertype_0x880b": 1}, nil},
		{"VXLAN", []*packet.Frame{frame(LinkEthernet, ethUDP(t, 49152, 4789, append(append([]byte(nil), vxlanHeader...), withEth(t, 0x0800, u4)...)))}, Config{}, w4, nil,
			func(t *testing.T, st Stats) { eq(t, "vxlan", st.VXLAN, 1) }},
		{"RTP on the VXLAN port stays RTP", []*packet.Frame{frame(LinkEthernet, ethUDP(t, 4000, 4789, rtp))}, Config{}, []want{{"192.0.2.10:4000", "192.0.2.20:4789", packet.TransportUDP, string(rtp), false}}, nil,
			func(t *testing.T, st Stats) { eq(t, "vxlan", st.VXLAN, 0) }},
		{"VXLAN flags but an undecodable inner frame stays UDP", []*packet.Frame{frame(LinkEthernet, ethUDP(t, 4000, 4789, append(append([]byte(nil), vxlanHeader...), withEth(t, 0x0800, []byte{0x45, 0, 0, 10, 0, 0})...)))}, Config{},
			[]want{{"192.0.2.10:4000", "192.0.2.20:4789", packet.TransportUDP, string(append(append([]byte(nil), vxlanHeader...), withEth(t, 0x0800, []byte{0x45, 0, 0, 10, 0, 0})...)), false}}, nil,
			func(t *testing.T, st Stats) { eq(t, "vxlan", st.VXLAN, 0) }},
		{"IPv4 fragments in order", frames(LinkEthernet, frag4...), Config{}, wBig4, nil,
			func(t *testing.T, st Stats) {
				eq(t, "fragments", st.Fragments, 3)
				eq(t, "reassembled", st.DatagramsReassembled, 1)
			}},
		{"IPv4 fragments reversed with a duplicate", frames(LinkEthernet, frag4[2], frag4[1], frag4[1], frag4[0]), Config{}, wBig4, nil,
			func(t *testing.T, st Stats) { eq(t, "duplicates", st.FragmentDuplicates, 1) }},
		{"IPv4 overlapping fragments refused", frames(LinkEthernet, overlap...), Config{}, nil, map[string]uint64{"decode_error": 1},
			func(t *testing.T, st Stats) { eq(t, "refused", st.FragmentsRefused, 1) }},
		{"IPv4 fragments not joined when reassembly is off", frames(LinkEthernet, frag4...), Config{NoIPReassembly: true}, nil, nil,
			func(t *testing.T, st Stats) { eq(t, "not joined", st.FragmentsNotJoined, 3) }},
		{"IPv4 fragment timeout", []*packet.Frame{frameAt(LinkEthernet, frag4[0], t0), frameAt(LinkEthernet, frag4[1], t0.Add(31*time.Second)), frameAt(LinkEthernet, frag4[2], t0.Add(32*time.Second))}, Config{}, nil, nil,
			func(t *testing.T, st Stats) {
				eq(t, "timeouts", st.FragmentTimeouts, 1)
				eq(t, "incomplete at flush", st.FragmentIncomplete, 1)
			}},
		{"IPv6 fragments", frames(LinkEthernet, frag6[1], frag6[0], frag6[2]), Config{}, wBig6, nil, nil},
		{"IPv6 destination options", []*packet.Frame{frame(LinkEthernet, ip6do)}, Config{}, w6, nil, nil},
		{"SCTP DATA chunks", []*packet.Frame{frame(LinkEthernet, sctpPacket(t, sctpData(1, sip), []byte{3, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, sctpData(2, []byte("second"))))}, Config{},
			[]want{{"192.0.2.10:5060", "192.0.2.20:5060", packet.TransportSCTP, sipOptions, false}, {"192.0.2.10:5060", "192.0.2.20:5060", packet.TransportSCTP, "second", false}}, nil,
			func(t *testing.T, st Stats) { eq(t, "data chunks", st.SCTPDataChunks, 2) }},
		{"HEP3 in UDP", []*packet.Frame{frame(LinkEthernet, ethUDP(t, 9060, 9060, hepBytes))}, Config{}, []want{{"192.0.2.10:9060", "192.0.2.20:9060", packet.TransportUDP, string(hepBytes), false}}, nil, nil},
		{"Linux SLL", []*packet.Frame{frame(LinkLinuxSLL, append(sllHeader(0x0800, []byte{0, 6}), u4...))}, Config{}, w4, nil, nil},
		{"Linux SLL with a byte-swapped address length", []*packet.Frame{frame(LinkLinuxSLL, append(sllHeader(0x0800, []byte{6, 0}), u4...))}, Config{}, w4, nil, nil},
		{"Linux SLL with VLAN", []*packet.Frame{frame(LinkLinuxSLL, append(sllHeader(0x8100, []byte{0, 6}), append(vlanTag(9, 0x0800), u4...)...))}, Config{}, w4, nil, nil},
		{"Linux SLL2", []*packet.Frame{frame(LinkLinuxSLL2, append(sll2Header(0x86DD), u6...))}, Config{}, w6, nil, nil},
		{"NULL little-endian IPv4", []*packet.Frame{frame(LinkNull, append([]byte{2, 0, 0, 0}, u4...))}, Config{}, w4, nil, nil},
		{"NULL big-endian IPv4", []*packet.Frame{frame(LinkNull, append([]byte{0, 0, 0, 2}, u4...))}, Config{}, w4, nil, nil},
		{"NULL Darwin IPv6", []*packet.Frame{frame(LinkNull, append([]byte{30, 0, 0, 0}, u6...))}, Config{}, w6, nil, nil},
		{"NULL FreeBSD IPv6", []*packet.Frame{frame(LinkNull, append([]byte{28, 0, 0, 0}, u6...))}, Config{}, w6, nil, nil},
		{"LOOP IPv6", []*packet.Frame{frame(LinkLoop, append([]byte{0, 0, 0, 24}, u6...))}, Config{}, w6, nil, nil},
		{"LOOP IPv4", []*packet.Frame{frame(LinkLoop, append([]byte{0, 0, 0, 2}, u4...))}, Config{}, w4, nil, nil},
		{"NULL unknown family", []*packet.Frame{frame(LinkNull, append([]byte{7, 0, 0, 0}, u4...))}, Config{}, nil, map[string]uint64{"not_ip_ethertype_0x0007": 1}, nil},
		{"raw 12 IPv4", []*packet.Frame{frame(LinkRaw, u4)}, Config{}, w4, nil, nil},
		{"raw 101 IPv6", []*packet.Frame{frame(LinkRawIP, u6)}, Config{}, w6, nil, nil},
		{"raw 14 IPv4", []*packet.Frame{frame(LinkRawOBSD, u4)}, Config{}, w4, nil, nil},
		{"bare IPv4 228", []*packet.Frame{frame(LinkIPv4, u4)}, Config{}, w4, nil, nil},
		{"bare IPv6 229", []*packet.Frame{frame(LinkIPv6, u6)}, Config{}, w6, nil, nil},
		{"bare IPv4 228 holding IPv6", []*packet.Frame{frame(LinkIPv4, u6)}, Config{}, nil, map[string]uint64{"decode_error": 1}, nil},
		{"PPP with HDLC address", []*packet.Frame{frame(LinkPPP, append([]byte{0xff, 0x03, 0x00, 0x21}, u4...))}, Config{}, w4, nil, nil},
		{"PPP compressed protocol", []*packet.Frame{frame(LinkPPP, append([]byte{0x21}, u4...))}, Config{}, w4, nil, nil},
		{"PPP serial IPv6", []*packet.Frame{frame(LinkPPPHDLC, append([]byte{0xff, 0x03, 0x00, 0x57}, u6...))}, Config{}, w6, nil, nil},
		{"PPP LCP is other traffic", []*packet.Frame{frame(LinkPPP, []byte{0xff, 0x03, 0xc0, 0x21, 1, 1, 0, 4})}, Config{}, nil, nil,
			func(t *testing.T, st Stats) { checkOther(t, st, map[string]uint64{"ethertype_0xc021": 1}) }},
		{"Cisco HDLC", []*packet.Frame{frame(LinkCHDLC, append([]byte{0x0f, 0x00, 0x08, 0x00}, u4...))}, Config{}, w4, nil, nil},
		{"PPPoE link type", []*packet.Frame{frame(LinkPPPoE, pppoe)}, Config{}, w4, nil, nil},
		{"unsupported link type", []*packet.Frame{frame(147, u4)}, Config{}, nil, map[string]uint64{"unsupported_link_type_147": 1}, nil},
		{"ARP is other traffic", []*packet.Frame{frame(LinkEthernet, arp)}, Config{}, nil, nil,
			func(t *testing.T, st Stats) { checkOther(t, st, map[string]uint64{"arp": 1}) }},
		{"OSPF is other traffic", []*packet.Frame{frame(LinkEthernet, ospf)}, Config{}, nil, nil,
			func(t *testing.T, st Stats) { checkOther(t, st, map[string]uint64{"ospf": 1}) }},
		{"ICMP echo is other traffic", []*packet.Frame{frame(LinkEthernet, icmpEcho)}, Config{}, nil, nil,
			func(t *testing.T, st Stats) { checkOther(t, st, map[string]uint64{"icmp": 1}) }},
		{"ICMP port unreachable", []*packet.Frame{frame(LinkEthernet, icmpUnreach)}, Config{}, nil, nil,
			func(t *testing.T, st Stats) { eq(t, "icmp errors", st.ICMPErrors, 1) }},
		{"truncated Ethernet", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x0800, nil)[:10])}, Config{}, nil, map[string]uint64{"truncated_frame": 1}, nil},
		{"truncated IPv4 header", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x0800, u4[:12]))}, Config{}, nil, map[string]uint64{"truncated_frame": 1}, nil},
		{"IPv4 header length below 5", []*packet.Frame{frame(LinkEthernet, badIHL)}, Config{}, nil, map[string]uint64{"decode_error": 1}, nil},
		{"snapped UDP keeps its captured bytes", []*packet.Frame{snapped}, Config{}, []want{{"192.0.2.10:5060", "192.0.2.20:5080", packet.TransportUDP, sipOptions[:20], false}}, nil,
			func(t *testing.T, st Stats) { eq(t, "snapped", st.SnappedFrames, 1) }},
		{"empty UDP datagram", []*packet.Frame{frame(LinkEthernet, ethUDP(t, 5060, 5060, nil))}, Config{}, nil, nil,
			func(t *testing.T, st Stats) { eq(t, "empty payloads", st.EmptyPayloads, 1) }},
		{"IPIP inside GRE inside VLAN", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x8100, append(vlanTag(1, 0x0800), grePacket(t, 0x0800, false, ser(t, v4(outerA, outerB, layers.IPProtocolIPv4), gopacket.Payload(u4)))[14:]...)))}, Config{}, w4, nil, nil},
		{"nesting budget of 2 refuses VLAN+GRE+IPIP", []*packet.Frame{frame(LinkEthernet, withEth(t, 0x8100, append(vlanTag(1, 0x0800), grePacket(t, 0x0800, false, ser(t, v4(outerA, outerB, layers.IPProtocolIPv4), gopacket.Payload(u4)))[14:]...)))}, Config{MaxNesting: 2}, nil, map[string]uint64{"nesting_limit_exceeded": 1}, nil},
		{"UDP over IPv4 fragments inside GRE", frames(LinkEthernet, func() [][]byte {
			var out [][]byte
			for _, f := range frag4 {
				out = append(out, grePacket(t, 0x0800, false, f[14:]))
			}
			return out
		}()...), Config{}, wBig4, nil, nil},
	}
}

func frames(lt uint16, data ...[]byte) []*packet.Frame {
	out := make([]*packet.Frame, len(data))
	for i, b := range data {
		out[i] = frame(lt, b)
		out[i].Ordinal = uint64(i + 1)
	}
	return out
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func TestDSCP(t *testing.T) {
	c, _ := decodeAll(t, []*packet.Frame{
		frame(LinkEthernet, ethUDP(t, 1, 2, []byte("x"))),
		frame(LinkEthernet, withEth(t, 0x86DD, ip6UDP(t, 1, 2, []byte("y")))),
	}, Config{})
	tests := []struct {
		name string
		i    int
		want uint8
	}{
		{"ipv4 TOS 0xb8 is EF", 0, 46},
		{"ipv6 traffic class 0x88 is AF41", 1, 34},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if p := c.pkts[tc.i]; !p.HasDSCP || p.DSCP != tc.want {
				t.Fatalf("got DSCP %d (has %v), want %d", p.DSCP, p.HasDSCP, tc.want)
			}
		})
	}
}

func TestHEPInUDPDecodes(t *testing.T) {
	payload := []byte(sipOptions)
	b, err := hep.Encode(&hep.Message{Version: 3, Protocol: 17, Src: ap("10.1.1.1:5060"), Dst: ap("10.1.1.2:5060"), ProtoType: hep.ProtoSIP, Payload: payload, Compressed: true})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := decodeAll(t, []*packet.Frame{frame(LinkEthernet, ethUDP(t, 9060, 9060, b))}, Config{})
	if len(c.pkts) != 1 || !hep.Looks(c.pkts[0].Payload) {
		t.Fatalf("got %d packets, want one HEP envelope", len(c.pkts))
	}
	m, err := hep.Decode(c.pkts[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Payload) != sipOptions || m.Src != ap("10.1.1.1:5060") {
		t.Fatalf("got inner %v %q, want 10.1.1.1:5060 %q", m.Src, m.Payload, sipOptions)
	}
}

func TestICMPErrorCallback(t *testing.T) {
	u4 := ipUDP(t, 5060, 5080, []byte(sipOptions))
	u6 := ip6UDP(t, 5060, 5080, []byte(sipOptions))
	icmp4 := ser(t, eth(layers.EthernetTypeIPv4), v4(ipB, ipA, layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(3, 3)}, gopacket.Payload(u4[:28]))
	icmp4Whole := ser(t, eth(layers.EthernetTypeIPv4), v4(ipB, ipA, layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(3, 3)}, gopacket.Payload(u4))
	// fragmentation needed: the next-hop MTU in the second half of the
	// header's last word (RFC 1191)
	icmp4Frag := ser(t, eth(layers.EthernetTypeIPv4), v4(ipB, ipA, layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(3, 4), Seq: 1400}, gopacket.Payload(u4[:40]))
	ip := v6(ip6B, ip6A, layers.IPProtocolICMPv6)
	ic6 := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(1, 4)}
	ic6.SetNetworkLayerForChecksum(ip)
	icmp6 := ser(t, eth(layers.EthernetTypeIPv6), ip, ic6, gopacket.Payload(append([]byte{0, 0, 0, 0}, u6[:48]...)))
	ip = v6(ip6B, ip6A, layers.IPProtocolICMPv6)
	ic6 = &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(2, 0)}
	ic6.SetNetworkLayerForChecksum(ip)
	icmp6Big := ser(t, eth(layers.EthernetTypeIPv6), ip, ic6, gopacket.Payload(append([]byte{0, 0, 0x05, 0x00}, u6...)))
	tests := []struct {
		name    string
		data    []byte
		want    ICMPError
		payload string
	}{
		{"ICMP port unreachable quoting 8 bytes is truncated and quotes no SIP", icmp4, ICMPError{Reporter: ipB, Type: 3, Code: 3, Quoted: true, Protocol: 17,
			Src: ap("192.0.2.10:5060"), Dst: ap("192.0.2.20:5080"), HasPorts: true, QuoteTruncated: true}, ""},
		{"ICMP port unreachable quoting the whole datagram hands its SIP bytes", icmp4Whole, ICMPError{Reporter: ipB, Type: 3, Code: 3, Quoted: true, Protocol: 17,
			Src: ap("192.0.2.10:5060"), Dst: ap("192.0.2.20:5080"), HasPorts: true}, sipOptions},
		{"ICMP fragmentation needed names the next-hop MTU", icmp4Frag, ICMPError{Reporter: ipB, Type: 3, Code: 4, Quoted: true, Protocol: 17,
			Src: ap("192.0.2.10:5060"), Dst: ap("192.0.2.20:5080"), HasPorts: true, QuoteTruncated: true, MTU: 1400}, sipOptions[:12]},
		{"ICMPv6 port unreachable", icmp6, ICMPError{Reporter: ip6B, V6: true, Type: 1, Code: 4, Quoted: true, Protocol: 17,
			Src: ap("[2001:db8::10]:5060"), Dst: ap("[2001:db8::20]:5080"), HasPorts: true, QuoteTruncated: true}, ""},
		{"ICMPv6 packet too big names the MTU and quotes the whole datagram", icmp6Big, ICMPError{Reporter: ip6B, V6: true, Type: 2, Code: 0, Quoted: true, Protocol: 17,
			Src: ap("[2001:db8::10]:5060"), Dst: ap("[2001:db8::20]:5080"), HasPorts: true, MTU: 1280}, sipOptions},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []ICMPError
			var payload []string
			d := New(Config{OnICMPError: func(e *ICMPError) {
				c := *e
				c.Frame, c.TS = nil, time.Time{}
				payload = append(payload, string(c.Payload))
				c.Payload = nil
				got = append(got, c)
			}})
			d.Decode(frame(LinkEthernet, tc.data), &collect{})
			if len(got) != 1 || !reflect.DeepEqual(got[0], tc.want) {
				t.Fatalf("got %+v, want [%+v]", got, tc.want)
			}
			if payload[0] != tc.payload {
				t.Errorf("quoted payload %q, want %q", payload[0], tc.payload)
			}
			if st := d.Stats(); st.ICMPErrors != 1 || st.UndecodableFrames != 0 {
				t.Fatalf("got icmp errors %d, undecodable %d, want 1 and 0", st.ICMPErrors, st.UndecodableFrames)
			}
		})
	}
}

func TestUndecodableReasonSlots(t *testing.T) {
	d := New(Config{})
	c := &collect{}
	for i := 0; i < 100; i++ {
		d.Decode(frame(uint16(300+i), []byte{1, 2, 3, 4}), c)
	}
	st := d.Stats()
	eq(t, "undecodable frames", st.UndecodableFrames, 100)
	eq(t, "reasons kept", len(st.Undecodable), reasonSlots)
	eq(t, "reasons dropped", st.UndecodableReasonsDropped, uint64(100-reasonSlots))
	eq(t, "first reason", st.Undecodable[0].Name, "unsupported_link_type_300")
	eq(t, "first reason code", st.Undecodable[0].Code, CodeNoLinkDecoder)
}

// Unknown EtherTypes are other traffic, counted by kind in a table of the
// same fixed size; kinds past it are counted as dropped, never lost.
func TestOtherTrafficKindSlots(t *testing.T) {
	d := New(Config{})
	c := &collect{}
	for i := 0; i < 100; i++ {
		d.Decode(frame(LinkEthernet, withEth(t, uint16(0x9000+i), []byte{1, 2, 3, 4})), c)
	}
	st := d.Stats()
	eq(t, "other-traffic frames", st.OtherTrafficFrames, 100)
	eq(t, "undecodable frames", st.UndecodableFrames, 0)
	eq(t, "kinds kept", len(st.OtherTraffic), reasonSlots)
	eq(t, "kinds dropped", st.OtherTrafficKindsDropped, uint64(100-reasonSlots))
	eq(t, "first kind", st.OtherTraffic[0].Name, "ethertype_0x9001")
}
