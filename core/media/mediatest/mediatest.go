// Package mediatest feeds public captures to the media store and the dialog
// store the way the packet router does, for tests of core/media and
// core/analysis.
package mediatest

import (
	"errors"
	"io"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
)

// Walk reads a capture through core/capture (decoding with a gopacket stand-in
// until core/decode is complete) and calls fn for
// every transport payload. It returns the frames read.
func Walk(tb testing.TB, path string, fn func(p *packet.Packet)) (uint64, error) {
	tb.Helper()
	r, err := capture.Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Frames(), nil
		}
		if err != nil {
			return r.Frames(), err
		}
		for _, p := range decodeFrame(f) {
			fn(&p)
		}
	}
}

// decodeFrame is a stand-in for core/decode (Ethernet/SLL/NULL → IP → UDP,
// or a TCP segment's payload whole) until the decoder is complete.
func decodeFrame(f *packet.Frame) []packet.Packet {
	data := f.Data
	var first gopacket.Decoder = layers.LinkType(f.LinkType)
	switch f.LinkType {
	case 0, 108: // NULL/loopback
		first = layers.LinkTypeNull
	case 113: // Linux SLL v1: gopacket rejects some address lengths, so skip the header by hand
		if len(data) < 16 {
			return nil
		}
		switch uint16(data[14])<<8 | uint16(data[15]) {
		case 0x0800:
			first = layers.LayerTypeIPv4
		case 0x86dd:
			first = layers.LayerTypeIPv6
		default:
			return nil
		}
		data = data[16:]
	}
	pk := gopacket.NewPacket(data, first, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
	p := packet.Packet{TS: f.TS, Origin: packet.OriginWire, Frame: f}
	var src, dst netip.Addr
	if ip4, ok := pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		src, _ = netip.AddrFromSlice(ip4.SrcIP.To4())
		dst, _ = netip.AddrFromSlice(ip4.DstIP.To4())
		p.DSCP, p.HasDSCP = ip4.TOS>>2, true
	} else if ip6, ok := pk.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
		src, _ = netip.AddrFromSlice(ip6.SrcIP)
		dst, _ = netip.AddrFromSlice(ip6.DstIP)
		p.DSCP, p.HasDSCP = ip6.TrafficClass>>2, true
	} else {
		return nil
	}
	if u, ok := pk.Layer(layers.LayerTypeUDP).(*layers.UDP); ok {
		p.Transport = packet.TransportUDP
		p.Src = netip.AddrPortFrom(src, uint16(u.SrcPort))
		p.Dst = netip.AddrPortFrom(dst, uint16(u.DstPort))
		p.Payload = u.Payload
		return []packet.Packet{p}
	}
	if tc, ok := pk.Layer(layers.LayerTypeTCP).(*layers.TCP); ok && len(tc.Payload) > 0 {
		p.Transport = packet.TransportTCP
		p.Src = netip.AddrPortFrom(src, uint16(tc.SrcPort))
		p.Dst = netip.AddrPortFrom(dst, uint16(tc.DstPort))
		p.Payload = tc.Payload
		return []packet.Packet{p}
	}
	return nil
}

// Feed routes a capture: SIP goes to the dialog store (when ds is not nil)
// and its SDP to OnSDP; every other UDP payload goes to Observe.
func Feed(tb testing.TB, path string, st *media.Store, ds *dialog.Store) (uint64, error) {
	tb.Helper()
	return Walk(tb, path, func(p *packet.Packet) {
		if sip.Looks(p.Payload) {
			m, err := sip.Parse(p.Payload)
			if err != nil || m.CallID == "" {
				return
			}
			if ds != nil {
				ds.Apply(dialog.Observation{Msg: m, TS: p.TS, Src: p.Src, Dst: p.Dst, Transport: p.Transport, Origin: p.Origin, Frame: packet.RefOf(p.Frame)})
			}
			if body, ok := m.SDPBody(); ok {
				if s, err := sdp.Parse(body); err == nil {
					st.OnSDP(m.CallID, p.TS, s, m.IsRequest, p.Src)
				}
			}
			return
		}
		if p.Transport == packet.TransportUDP {
			st.Observe(p)
		}
	})
}
