package stun

import (
	"net/netip"
	"testing"
	"time"
)

// FuzzParse feeds hostile bytes to the parser, the ChannelData reader and
// the tracker: errors, never panics, and what parses is self-consistent.
func FuzzParse(f *testing.F) {
	for _, s := range []string{rfc5769Request, rfc5769IPv4Response, rfc5769IPv6Response} {
		f.Add(unhex(f, s))
	}
	var w Builder
	f.Add(append([]byte(nil), w.Begin(ClassSuccess, MethodAllocate, [12]byte{1}).
		Address(AttrXORRelayedAddress, netip.MustParseAddrPort("[2001:db8::1]:9"), true).U32(AttrLifetime, 1).End(true)...))
	f.Add(AppendChannelData(nil, 0x4000, []byte{0x80, 1, 2, 3}, true))
	tr := NewTracker(Config{MaxTransactions: 16, MaxAllocations: 4, MaxMappings: 4, MaxICEPairs: 4})
	a := netip.MustParseAddrPort("10.0.0.1:1")
	b := netip.MustParseAddrPort("192.0.2.1:2")
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Message
		if err := Parse(data, &m); err == nil {
			if m.Length+HeaderLen != len(data) || m.NPeers > MaxPeers || len(m.Software) > maxSoftware || len(m.ErrorReason) > maxReason {
				t.Fatalf("inconsistent message %+v", m)
			}
			o := Obs{TS: time.Unix(int64(len(data)), 0), Src: a, Dst: b}
			if len(data)%2 == 0 {
				o.Src, o.Dst = b, a
			}
			tr.Observe(o, &m)
			_ = tr.Report(o.TS)
		}
		if cd, err := ParseChannelData(data); err == nil {
			if len(cd.Data) > len(data)-4 || cd.Channel < 0x4000 || cd.Channel > 0x7fff {
				t.Fatalf("inconsistent ChannelData %x", cd.Channel)
			}
			tr.Channel(Obs{Src: a, Dst: b}, cd.Channel)
		}
		_ = KindOf(data)
	})
}
