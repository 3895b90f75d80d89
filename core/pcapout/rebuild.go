package pcapout

import (
	"errors"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/packet"
)

// Rebuilt frames: a payload the store holds (a SIP message) written back as
// a frame of its own, for an export of what was analysed rather than what
// was on the wire (the captures bundle's export_capture).

// Largest UDP payloads one IPv4 / IPv6 datagram holds (RFC 768, RFC 791,
// RFC 8200 without jumbograms).
const (
	MaxUDP4Payload = 65535 - 20 - 8
	MaxUDP6Payload = 65535 - 8
)

// ErrNotRebuildable is UDPFrame's refusal of addressing it cannot write: an
// invalid address, IPv4 on one side and IPv6 on the other, or a payload
// longer than one datagram holds.
var ErrNotRebuildable = errors.New("cannot rebuild as one UDP datagram")

// Locally administered MAC addresses (IEEE 802: the second-least
// significant bit of the first octet set): no vendor's.
var (
	rebuiltSrcMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	rebuiltDstMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}
)

// UDPFrame rebuilds payload as one Ethernet/IPv4-or-IPv6/UDP frame
// (LINKTYPE_ETHERNET) from src to dst, lengths and checksums computed
// (IPv4 TTL and IPv6 hop limit 64, IPv4-mapped addresses written as IPv4).
// It returns ErrNotRebuildable when the addressing or size cannot be
// written.
func UDPFrame(src, dst netip.AddrPort, payload []byte) ([]byte, error) {
	if !src.IsValid() || !dst.IsValid() {
		return nil, ErrNotRebuildable
	}
	s, d := src.Addr().Unmap(), dst.Addr().Unmap()
	if s.Is4() != d.Is4() || s.Is4() && len(payload) > MaxUDP4Payload || len(payload) > MaxUDP6Payload {
		return nil, ErrNotRebuildable
	}
	udp := &layers.UDP{SrcPort: layers.UDPPort(src.Port()), DstPort: layers.UDPPort(dst.Port())}
	eth := &layers.Ethernet{SrcMAC: rebuiltSrcMAC, DstMAC: rebuiltDstMAC}
	var ip gopacket.SerializableLayer
	if s.Is4() {
		eth.EthernetType = layers.EthernetTypeIPv4
		a, b := s.As4(), d.As4()
		ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IP(a[:]), DstIP: net.IP(b[:])}
		_ = udp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		a, b := s.As16(), d.As16()
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: net.IP(a[:]), DstIP: net.IP(b[:])}
		_ = udp.SetNetworkLayerForChecksum(ip6)
		ip = ip6
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// AppendPcapHeader appends the classic pcap file header (nanosecond
// magic 0xa1b23c4d, version 2.4, snaplen Snaplen) of link type lt to b.
func AppendPcapHeader(b []byte, lt uint16) []byte { return append(b, pcapHeader(lt)...) }

// AppendPcapRecord appends f as one classic pcap record (its 16-byte
// header, nanosecond timestamp, then its bytes) to b.
func AppendPcapRecord(b []byte, f *packet.Frame) []byte {
	return append(append(b, pcapRecord(f)...), f.Data...)
}
