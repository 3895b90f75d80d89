package media

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sdp"
)

// BenchmarkObserve measures one RTP packet into an existing stream. Run
// with -benchmem: the hot path allocates nothing.
func BenchmarkObserve(b *testing.B) {
	st := NewStore(Config{})
	st.OnSDP("bench", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, epA)
	pkt := rtpPkt(0, false, 0, 0, 42, make([]byte, 160))
	p := udp(epA, epB, t0, pkt)
	st.Observe(p)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		binary.BigEndian.PutUint16(pkt[2:], uint16(i))
		binary.BigEndian.PutUint32(pkt[4:], uint32(i*160))
		p.TS = t0.Add(time.Duration(i) * 20 * time.Millisecond)
		st.Observe(p)
	}
}

// BenchmarkObserveManyStreams spreads packets over 1000 streams.
func BenchmarkObserveManyStreams(b *testing.B) {
	st := NewStore(Config{})
	const n = 1000
	pkts := make([][]byte, n)
	srcs := make([]netip.AddrPort, n)
	for i := range pkts {
		pkts[i] = rtpPkt(8, false, 0, 0, uint32(i+1), make([]byte, 160))
		srcs[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 20000)
		st.OnSDP("bench", t0, &sdp.Session{Conn: srcs[i].Addr().String(), Media: []sdp.Media{{Type: "audio", Port: 20000, Formats: []sdp.Format{{PayloadType: 8}}}}}, true, epA)
		st.Observe(udp(srcs[i], epB, t0, pkts[i]))
	}
	p := udp(epA, epB, t0, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		k := i % n
		seq := i/n + 1
		pkt := pkts[k]
		binary.BigEndian.PutUint16(pkt[2:], uint16(seq))
		binary.BigEndian.PutUint32(pkt[4:], uint32(seq*160))
		p.Src, p.Payload = srcs[k], pkt
		p.TS = t0.Add(time.Duration(seq) * 20 * time.Millisecond)
		st.Observe(p)
	}
}

// TestObserveAllocations pins the hot path at zero allocations per packet
// for an existing stream (interval ring growth is amortized over hundreds
// of packets).
func TestObserveAllocations(t *testing.T) {
	st := NewStore(Config{})
	st.OnSDP("a", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, epA)
	pkt := rtpPkt(0, false, 0, 0, 42, make([]byte, 160))
	p := udp(epA, epB, t0, pkt)
	st.Observe(p)
	i := 0
	got := testing.AllocsPerRun(2000, func() {
		i++
		binary.BigEndian.PutUint16(pkt[2:], uint16(i))
		binary.BigEndian.PutUint32(pkt[4:], uint32(i*160))
		p.TS = t0.Add(time.Duration(i) * 20 * time.Millisecond)
		st.Observe(p)
	})
	if got >= 0.05 {
		t.Errorf("got %.3f allocations per packet, want 0", got)
	}
}

// BenchmarkStreamMemory reports the heap held per call (two 25 s G.711
// streams, bound to a dialog) at 5000 calls. Run with -benchtime=1x.
func BenchmarkStreamMemory(b *testing.B) {
	const calls = 5000
	const pkts = 1250 // 25 s at 20 ms
	for n := 0; n < b.N; n++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		st := NewStore(Config{})
		type leg struct {
			src, dst netip.AddrPort
			ssrc     uint32
		}
		legs := make([]leg, 0, 2*calls)
		for c := 0; c < calls; c++ {
			a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, byte(c >> 8), byte(c)}), 30000)
			z := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 3, byte(c >> 8), byte(c)}), 40000)
			id := fmt.Sprintf("call-%d", c)
			st.OnSDP(id, t0, &sdp.Session{Conn: a.Addr().String(), Media: []sdp.Media{{Type: "audio", Port: 30000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, a)
			st.OnSDP(id, t0, &sdp.Session{Conn: z.Addr().String(), Media: []sdp.Media{{Type: "audio", Port: 40000, Formats: []sdp.Format{{PayloadType: 0}}}}}, false, z)
			legs = append(legs, leg{a, z, uint32(2 * c)}, leg{z, a, uint32(2*c + 1)})
		}
		pkt := rtpPkt(0, false, 0, 0, 0, make([]byte, 160))
		p := udp(epA, epB, t0, pkt)
		for i := 0; i < pkts; i++ {
			binary.BigEndian.PutUint16(pkt[2:], uint16(i))
			binary.BigEndian.PutUint32(pkt[4:], uint32(i*160))
			p.TS = t0.Add(time.Duration(i) * 20 * time.Millisecond)
			for _, l := range legs {
				binary.BigEndian.PutUint32(pkt[8:], l.ssrc)
				p.Src, p.Dst = l.src, l.dst
				st.Observe(p)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if st.Stats().Streams != 2*calls {
			b.Fatalf("got %d streams", st.Stats().Streams)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/calls, "bytes/call")
		runtime.KeepAlive(st)
		runtime.KeepAlive(legs)
	}
}
