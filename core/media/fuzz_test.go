package media

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sdp"
)

// FuzzObserve feeds arbitrary datagrams (split into packets by a length
// byte) to a store with a signaled endpoint, then renders everything.
func FuzzObserve(f *testing.F) {
	f.Add(rtpPkt(0, false, 1, 160, 7, make([]byte, 20)))
	f.Add(append([]byte{12}, rtpPkt(101, true, 2, 320, 7, []byte{5, 0x8a, 0, 160})...))
	f.Add(mustHexT(f, "81c8000cd2bd4e3ec59286d4e6e978d5000001400000000200000140d2bd4e3e00000000000200020000000086d4e6e90000000181c90007d2bd4e3e0000000000000000000000000000000086d4e6e900000001"))
	f.Add(mustHexT(f, "80cf000a1111111107000008222222221a0000000000000000b400147f7f7f7f5d5d29290000000000000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st := NewStore(Config{MaxStreams: 8, MaxCandidates: 8, MaxEndpoints: 8, QualityInterval: time.Second})
		st.OnSDP("f", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{
			{Type: "audio", Port: 5000, Formats: []sdp.Format{{PayloadType: 0}, {PayloadType: 101, Encoding: "telephone-event", ClockRate: 8000}}},
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
