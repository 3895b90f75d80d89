package decode

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/packet"
)

// Builders of hand-made frames for the encapsulation tests.

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
	ipA  = netip.MustParseAddr("192.0.2.10")
	ipB  = netip.MustParseAddr("192.0.2.20")
	ip6A = netip.MustParseAddr("2001:db8::10")
	ip6B = netip.MustParseAddr("2001:db8::20")
	t0   = time.Unix(1700000000, 0)
)

func ser(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatalf("serializing: %v", err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func eth(et layers.EthernetType) *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: macA, DstMAC: macB, EthernetType: et}
}

func v4(src, dst netip.Addr, proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, TOS: 0xb8, Protocol: proto, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

func v6(src, dst netip.Addr, next layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, HopLimit: 64, TrafficClass: 0x88, NextHeader: next, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

// ipUDP returns an IPv4/UDP packet (no link header).
func ipUDP(t testing.TB, sport, dport uint16, payload []byte) []byte {
	ip := v4(ipA, ipB, layers.IPProtocolUDP)
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	u.SetNetworkLayerForChecksum(ip)
	return ser(t, ip, u, gopacket.Payload(payload))
}

// ip6UDP returns an IPv6/UDP packet.
func ip6UDP(t testing.TB, sport, dport uint16, payload []byte) []byte {
	ip := v6(ip6A, ip6B, layers.IPProtocolUDP)
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	u.SetNetworkLayerForChecksum(ip)
	return ser(t, ip, u, gopacket.Payload(payload))
}

// ethUDP returns Ethernet/IPv4/UDP.
func ethUDP(t testing.TB, sport, dport uint16, payload []byte) []byte {
	return withEth(t, 0x0800, ipUDP(t, sport, dport, payload))
}

// withEth prefixes an Ethernet header of the given type (gopacket would pad
// a header serialized alone to the 60-byte minimum).
func withEth(t testing.TB, et uint16, rest []byte) []byte {
	b := append(append([]byte(nil), macB...), macA...)
	b = binary.BigEndian.AppendUint16(b, et)
	return append(b, rest...)
}

// vlanTag returns a 4-byte 802.1Q tag followed by EtherType next.
func vlanTag(id uint16, next uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, id&0x0fff)
	return binary.BigEndian.AppendUint16(b, next)
}

func frame(lt uint16, data []byte) *packet.Frame {
	return &packet.Frame{TS: t0, LinkType: lt, Data: data, OrigLen: len(data), Source: "test", Ordinal: 1}
}

func frameAt(lt uint16, data []byte, ts time.Time) *packet.Frame {
	f := frame(lt, data)
	f.TS = ts
	return f
}

// tcpSeg returns Ethernet/IPv4/TCP from ipA:sport to ipB:dport.
func tcpSeg(t testing.TB, sport, dport uint16, seq uint32, flags string, payload []byte) []byte {
	return tcpSegAddr(t, ipA, ipB, sport, dport, seq, flags, payload)
}

func tcpSegAddr(t testing.TB, src, dst netip.Addr, sport, dport uint16, seq uint32, flags string, payload []byte) []byte {
	ip := v4(src, dst, layers.IPProtocolTCP)
	tc := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Seq: seq, Ack: 1, Window: 65535}
	for _, c := range flags {
		switch c {
		case 'S':
			tc.SYN = true
		case 'A':
			tc.ACK = true
		case 'F':
			tc.FIN = true
		case 'R':
			tc.RST = true
		case 'P':
			tc.PSH = true
		}
	}
	tc.SetNetworkLayerForChecksum(ip)
	return ser(t, eth(layers.EthernetTypeIPv4), ip, tc, gopacket.Payload(payload))
}

// fragments4 splits an IPv4 payload (transport header included) into
// fragments of at most size bytes (a multiple of 8).
func fragments4(t testing.TB, proto layers.IPProtocol, id uint16, body []byte, size int) [][]byte {
	var out [][]byte
	for off := 0; off < len(body); off += size {
		end := min(off+size, len(body))
		ip := v4(ipA, ipB, proto)
		ip.Id = id
		ip.FragOffset = uint16(off / 8)
		if end < len(body) {
			ip.Flags = layers.IPv4MoreFragments
		}
		out = append(out, ser(t, eth(layers.EthernetTypeIPv4), ip, gopacket.Payload(body[off:end])))
	}
	return out
}

// fragments6 splits an IPv6 payload into fragments carrying a fragment
// header.
func fragments6(t testing.TB, next layers.IPProtocol, id uint32, body []byte, size int) [][]byte {
	var out [][]byte
	for off := 0; off < len(body); off += size {
		end := min(off+size, len(body))
		ip := v6(ip6A, ip6B, layers.IPProtocolIPv6Fragment)
		fh := []byte{byte(next), 0, 0, 0, 0, 0, 0, 0}
		fo := uint16(off/8) << 3
		if end < len(body) {
			fo |= 1
		}
		binary.BigEndian.PutUint16(fh[2:4], fo)
		binary.BigEndian.PutUint32(fh[4:8], id)
		out = append(out, ser(t, eth(layers.EthernetTypeIPv6), ip, gopacket.Payload(append(fh, body[off:end]...))))
	}
	return out
}

// udpBody returns a UDP header and payload (for fragmenting) with a correct
// checksum.
func udpBody(t testing.TB, sport, dport uint16, payload []byte, six bool) []byte {
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	if six {
		u.SetNetworkLayerForChecksum(v6(ip6A, ip6B, layers.IPProtocolUDP))
	} else {
		u.SetNetworkLayerForChecksum(v4(ipA, ipB, layers.IPProtocolUDP))
	}
	return ser(t, u, gopacket.Payload(payload))
}

// grePacket wraps inner in IPv4/GRE with the given protocol and options.
func grePacket(t testing.TB, proto uint16, seq bool, inner []byte) []byte {
	g := &layers.GRE{Protocol: layers.EthernetType(proto), SeqPresent: seq, Seq: 7}
	return ser(t, eth(layers.EthernetTypeIPv4), v4(netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2"), layers.IPProtocolGRE), g, gopacket.Payload(inner))
}

// sctpPacket returns Ethernet/IPv4/SCTP with the given chunks.
func sctpPacket(t testing.TB, chunks ...[]byte) []byte {
	b := []byte{0x13, 0xc4, 0x13, 0xc4, 0, 0, 0, 1, 0, 0, 0, 0}
	for _, c := range chunks {
		b = append(b, c...)
	}
	return ser(t, eth(layers.EthernetTypeIPv4), v4(ipA, ipB, layers.IPProtocolSCTP), gopacket.Payload(b))
}

// sctpData returns a DATA chunk (padded to 4 bytes).
func sctpData(tsn uint32, data []byte) []byte {
	c := []byte{0, 0x03, 0, 0}
	binary.BigEndian.PutUint16(c[2:4], uint16(16+len(data)))
	c = binary.BigEndian.AppendUint32(c, tsn)
	c = append(c, 0, 0, 0, 0, 0, 0, 0, 0)
	c = append(c, data...)
	for len(c)%4 != 0 {
		c = append(c, 0)
	}
	return c
}
