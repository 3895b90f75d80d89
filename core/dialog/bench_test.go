package dialog

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/benchload"
)

func filledStore(b *testing.B, n int) *Store {
	s := New(Config{})
	src, dst := netip.MustParseAddrPort(alice), netip.MustParseAddrPort(bob)
	for i := 0; i < n; i++ {
		for j, st := range basicCall(fmt.Sprintf("bench-%d", i)) {
			m, err := sip.Parse([]byte(st.text))
			if err != nil {
				b.Fatal(err)
			}
			if j%2 == 1 {
				src, dst = dst, src
			}
			s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i)*time.Millisecond + time.Duration(st.ms)*time.Millisecond), Src: src, Dst: dst})
		}
	}
	return s
}

// BenchmarkApply measures applying one message of a seven-message call.
func BenchmarkApply(b *testing.B) {
	var msgs []*sip.Message
	for _, st := range basicCall("x") {
		m, _ := sip.Parse([]byte(st.text))
		msgs = append(msgs, m)
	}
	s := New(Config{MaxDialogs: 10000})
	src, dst := netip.MustParseAddrPort(alice), netip.MustParseAddrPort(bob)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := *msgs[i%len(msgs)]
		m.CallID = fmt.Sprintf("c%d", i/len(msgs))
		s.Apply(Observation{Msg: &m, TS: t0, Src: src, Dst: dst})
	}
}

// BenchmarkListPage measures one 50-row page over 100k dialogs.
func BenchmarkListPage(b *testing.B) {
	s := filledStore(b, 100000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := s.List(Query{Limit: 50})
		if len(p.Rows) != 50 {
			b.Fatal(len(p.Rows))
		}
	}
}

// BenchmarkApplySignaling applies the messages of the signaling-only
// workload in capture order to a store with the default bounds, one message
// per op; a new store starts each pass over the workload. The messages are
// parsed outside the timed part, a thousand at a time (a parsed corpus of
// the whole workload would put a third of a gigabyte of pointers under the
// collector's scan, which the capture engine never holds); cpu-ns/op counts
// the timed parts only.
func BenchmarkApplySignaling(b *testing.B) {
	msgs := benchload.SignalingMessages(b)
	const chunk = 1000
	obs := make([]Observation, 0, chunk)
	var s *Store
	var cpu int64
	next := 0
	runtime.GC() // the workload generator's garbage is not this benchmark's
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		b.StopTimer()
		if next == 0 {
			s = New(Config{})
		}
		obs = obs[:0]
		for len(obs) < chunk && i+len(obs) < b.N {
			w := msgs[next]
			m, err := sip.Parse(w.Payload)
			if err != nil {
				b.Fatal(err)
			}
			obs = append(obs, Observation{Msg: m, TS: w.At, Src: w.Src, Dst: w.Dst, Transport: packet.TransportUDP})
			if next++; next == len(msgs) {
				next = 0 // the pass ends: the next chunk goes to a new store
				break
			}
		}
		b.StartTimer()
		c0 := benchload.CPUNow()
		for j := range obs {
			s.Apply(obs[j])
		}
		cpu += benchload.CPUNow() - c0
		i += len(obs)
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
