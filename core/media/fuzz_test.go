package media

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sdp"
)

// FuzzObserve feeds arbitrary datagrams (split into packets by a length
// byte) to a store with a signaled endpoint, then renders everything.
func FuzzObserve(f *testing.F) {
	f.Add(rtpPkt(0, false, 1, 160, 7, make([]byte, 20)))
	f.Add(append([]byte{40}, rtpPkt(96, false, 9, 320, 8, append([]byte{0xf0, 2<<3 | 4}, make([]byte, 32)...))...))
	f.Add(append([]byte{12}, rtpPkt(101, true, 2, 320, 7, []byte{5, 0x8a, 0, 160})...))
	f.Add(mustHexT(f, "81c8000cd2bd4e3ec59286d4e6e978d5000001400000000200000140d2bd4e3e00000000000200020000000086d4e6e90000000181c90007d2bd4e3e0000000000000000000000000000000086d4e6e900000001"))
	f.Add(mustHexT(f, "80cf000a1111111107000008222222221a0000000000000000b400147f7f7f7f5d5d29290000000000000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st := NewStore(Config{MaxStreams: 8, MaxCandidates: 8, MaxEndpoints: 8, QualityInterval: time.Second})
		st.OnSDP("f", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{
			{Type: "audio", Port: 5000, Formats: []sdp.Format{{PayloadType: 0}, {PayloadType: 101, Encoding: "telephone-event", ClockRate: 8000},
				{PayloadType: 96, Encoding: "AMR-WB", ClockRate: 16000, Fmtp: "octet-align=1"}, {PayloadType: 97, Encoding: "AMR", ClockRate: 8000}}},
			{Type: "image", Port: 5002, Proto: "udptl"},
		}}, true, epA)
		fax := netip.AddrPortFrom(epB.Addr(), 5002)
		at := t0
		for i := 0; len(b) > 0 && i < 64; i++ {
			n := int(b[0])%64 + 1
			b = b[1:]
			if n > len(b) {
				n = len(b)
			}
			dst := epB
			if i%5 == 4 {
				dst = fax
			}
			st.Observe(udp(epA, dst, at, b[:n]))
			st.Observe(udp(dst, epA, at, b[:n]))
			b = b[n:]
			at = at.Add(time.Duration(n) * 7 * time.Millisecond)
		}
		for _, s := range st.All() {
			if s.LossPct > 100 || s.Packets == 0 {
				t.Fatalf("stream %+v", s)
			}
			// The loss pattern covers each position once (burst.go).
			if g := s.BurstGap; g != nil && (g.BurstPackets+g.GapPackets != uint64(s.Expected) || g.BurstLost > g.BurstPackets ||
				g.GapLost > g.GapPackets || int64(g.BurstLost+g.GapLost) < s.Lost) {
				t.Fatalf("burst_gap %+v with expected %d lost %d", *g, s.Expected, s.Lost)
			}
			if a := s.AMR; a != nil && a.PacketsRead+a.PacketsMalformed > s.Packets {
				t.Fatalf("amr %+v over %d packets", *a, s.Packets)
			}
		}
		if n := st.Stats().Streams; n > 8 {
			t.Fatalf("%d streams over the cap", n)
		}
	})
}

// TestConcurrentReaders reads while the writer feeds (run with -race).
func TestConcurrentReaders(t *testing.T) {
	st := NewStore(Config{})
	st.OnSDP("c", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, epA)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				rev := st.Revision()
				if rev < last {
					t.Errorf("revision went back from %d to %d", last, rev)
				}
				last = rev
				for _, s := range st.StreamsFor("c") {
					_ = s.Packets
				}
				_ = st.All()
				_ = st.Stats()
			}
		}()
	}
	s := &sender{st: st, src: epA, dst: epB, ssrc: 1, pt: 0}
	for i := 0; i < 3000; i++ {
		s.send(t, 1, 0)
	}
	close(stop)
	wg.Wait()
	if got := onlyStream(t, st); got.Packets != 3000 {
		t.Errorf("got %d packets, want 3000", got.Packets)
	}
}

// FuzzSharedEndpoints drives SDP announcements from a few dialogs over a few
// addresses, and RTP between them, from the input: each record is an
// opcode byte (announce or send), a dialog, two addresses and a time step.
// Invariants: the caps hold, a stream listed under a dialog belongs to it
// (its associated dialog or one it is shared with), shared_with never names
// the associated dialog nor repeats, and has at most maxSharers entries.
func FuzzSharedEndpoints(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1, 5, 0, 2, 1, 0, 5, 1, 0, 0, 1, 20, 1, 1, 1, 0, 20})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 1, 1})
	f.Add([]byte{0, 3, 2, 3, 255, 0, 4, 3, 2, 1, 1, 0, 2, 3, 0})
	addrs := []netip.AddrPort{
		netip.MustParseAddrPort("192.0.2.1:8000"), netip.MustParseAddrPort("192.0.2.2:8000"),
		netip.MustParseAddrPort("192.0.2.3:9000"), netip.MustParseAddrPort("[2001:db8::1]:8000"),
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st := NewStore(Config{MaxStreams: 6, MaxCandidates: 4, MaxEndpoints: 3})
		at := t0
		seq := uint16(0)
		for len(b) >= 5 && seq < 200 {
			op, call, x, y, step := b[0], b[1]%6, addrs[int(b[2])%len(addrs)], addrs[int(b[3])%len(addrs)], b[4]
			b = b[5:]
			at = at.Add(time.Duration(step) * 20 * time.Millisecond)
			id := fmt.Sprintf("c%d", call)
			if op%2 == 0 {
				st.OnSDP(id, at, &sdp.Session{Conn: x.Addr().String(), Media: []sdp.Media{{Type: "audio", Port: int(x.Port()), Formats: []sdp.Format{{PayloadType: 0}}}}}, op%4 == 0, y)
				continue
			}
			seq++
			st.Observe(udp(x, y, at, rtpPkt(0, false, seq, uint32(seq)*160, uint32(op>>1), make([]byte, 20))))
		}
		if n := st.Stats().Streams; n > 6 {
			t.Fatalf("%d streams over the cap of 6", n)
		}
		if n := st.Stats().Endpoints; n > 3 {
			t.Fatalf("%d endpoints over the cap of 3", n)
		}
		for _, s := range st.All() {
			if len(s.SharedWith) > maxSharers {
				t.Fatalf("%s shared with %d dialogs", s.SSRC, len(s.SharedWith))
			}
			seen := map[string]bool{}
			for _, c := range s.SharedWith {
				if c == s.AssociatedDialog || seen[c] {
					t.Fatalf("%s: shared_with %v, associated %q", s.SSRC, s.SharedWith, s.AssociatedDialog)
				}
				seen[c] = true
			}
		}
		for call := 0; call < 6; call++ {
			id := fmt.Sprintf("c%d", call)
			keys := map[string]bool{}
			for _, s := range st.StreamsFor(id) {
				k := s.SSRC + s.Src + s.Dst
				if keys[k] {
					t.Fatalf("%s lists %s twice", id, k)
				}
				keys[k] = true
				if s.AssociatedDialog != id && !slices.Contains(s.SharedWith, id) {
					t.Fatalf("%s lists %s, associated %q shared %v", id, k, s.AssociatedDialog, s.SharedWith)
				}
			}
			if n := len(st.EndpointsFor(id)); n > 3*(1+maxSharers) {
				t.Fatalf("%s: %d endpoints listed", id, n)
			}
		}
	})
}
