package dialog

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
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

// signaling holds the messages of bench/gen's signaling-only workload
// (20,000 calls and 1,000 REGISTERs, no media), generated once per run.
var signaling struct {
	once sync.Once
	msgs []gen.SIPMessage
	err  error
}

func signalingMessages(b *testing.B) []gen.SIPMessage {
	signaling.once.Do(func() { signaling.msgs, signaling.err = gen.SIPMessages(gen.Signaling(1)) })
	if signaling.err != nil {
		b.Fatal(signaling.err)
	}
	return signaling.msgs
}

// BenchmarkApplySignaling applies the messages of the signaling-only
// workload in capture order to a store with the default bounds, one message
// per op; a new store starts each pass over the workload. The messages are
// parsed outside the timed part, a thousand at a time (a parsed corpus of
// the whole workload would put a third of a gigabyte of pointers under the
// collector's scan, which the capture engine never holds); cpu-ns/op counts
// the timed parts only.
func BenchmarkApplySignaling(b *testing.B) {
	msgs := signalingMessages(b)
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
		c0 := cpuNow()
		for j := range obs {
			s.Apply(obs[j])
		}
		cpu += cpuNow() - c0
		i += len(obs)
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// cpuNow is the process's user plus system CPU time in ns: on a shared
// machine wall time per op mostly measures the wait for a core, so the
// workload benchmarks also report cpu-ns/op (garbage collection included).
func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
