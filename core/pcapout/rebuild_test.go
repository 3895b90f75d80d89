package pcapout

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/packet"
)

// TestUDPFrameDecodesBack: a rebuilt frame decodes (core/decode, the
// engine's decoder) to the same addressing and payload, over IPv4 (mapped
// addresses unmapped) and IPv6; what one datagram cannot carry is refused.
func TestUDPFrameDecodesBack(t *testing.T) {
	payload := []byte("OPTIONS sip:a@b SIP/2.0\r\n\r\n")
	for _, tc := range []struct{ src, dst, wantSrc string }{
		{"192.0.2.1:5060", "192.0.2.2:5080", "192.0.2.1:5060"},
		{"[::ffff:192.0.2.1]:5060", "192.0.2.2:5080", "192.0.2.1:5060"},
		{"[2001:db8::1]:5060", "[2001:db8::2]:5080", "[2001:db8::1]:5060"},
	} {
		b, err := UDPFrame(netip.MustParseAddrPort(tc.src), netip.MustParseAddrPort(tc.dst), payload)
		if err != nil {
			t.Fatal(err)
		}
		var got *packet.Packet
		decode.New(decode.Config{}).Decode(&packet.Frame{Data: b, LinkType: 1, TS: time.Unix(1, 0)}, packet.SinkFunc(func(p *packet.Packet) {
			c := *p
			c.Payload = append([]byte(nil), p.Payload...)
			got = &c
		}))
		if got == nil || got.Src.String() != tc.wantSrc || got.Dst.Port() != 5080 || got.Transport != packet.TransportUDP || string(got.Payload) != string(payload) {
			t.Errorf("%s → %s: decoded %+v", tc.src, tc.dst, got)
		}
	}
	for _, tc := range []struct {
		src, dst string
		n        int
	}{
		{"192.0.2.1:5060", "[2001:db8::2]:5060", 10},
		{"192.0.2.1:5060", "192.0.2.2:5060", MaxUDP4Payload + 1},
	} {
		if _, err := UDPFrame(netip.MustParseAddrPort(tc.src), netip.MustParseAddrPort(tc.dst), []byte(strings.Repeat("x", tc.n))); !errors.Is(err, ErrNotRebuildable) {
			t.Errorf("%s → %s, %d bytes: %v, want ErrNotRebuildable", tc.src, tc.dst, tc.n, err)
		}
	}
	if _, err := UDPFrame(netip.AddrPort{}, netip.MustParseAddrPort("192.0.2.2:5060"), nil); !errors.Is(err, ErrNotRebuildable) {
		t.Errorf("no source: %v", err)
	}
}
