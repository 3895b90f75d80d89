package media

import (
	"encoding/binary"
	"net/netip"
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
