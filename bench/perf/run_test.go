// Package perf benchmarks the whole batch path (read, decode, route,
// stores, --json-run document) on a generated capture, for profiling and for the
// numbers in bench/README.md. Every benchmark reads the capture named by
// SIPNAB_BENCH_PCAP and skips without it:
//
//	go run ./bench/cmd/gencapture -preset carrier -o /tmp/carrier.pcap
//	SIPNAB_BENCH_PCAP=/tmp/carrier.pcap go test -run='^$' -bench=. -benchmem ./bench/perf
package perf

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/report"
	"github.com/sipnab/sipnab/core/sip"
)

func capturePath(tb testing.TB) string {
	path := os.Getenv("SIPNAB_BENCH_PCAP")
	if path == "" {
		tb.Skip("set SIPNAB_BENCH_PCAP to a capture")
	}
	return path
}

// cpuTime is the process's user plus system CPU time: on a shared machine
// wall time per op mostly measures the wait for a core.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// frames counts the capture's frames.
func frames(tb testing.TB, path string) int {
	r, err := capture.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	n := 0
	for {
		if _, err := r.Next(); err != nil {
			return n
		}
		n++
	}
}

// measure runs f b.N times and reports CPU time per run and per frame.
func measure(b *testing.B, path string, f func()) {
	n := frames(b, path)
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for i := 0; i < b.N; i++ {
		f()
	}
	cpu := float64(cpuTime()-start) / float64(b.N)
	b.ReportMetric(cpu/1e9, "cpu-s/op")
	b.ReportMetric(cpu/float64(n), "cpu-ns/frame")
	b.ReportMetric(float64(n)*1e9/cpu, "frames/cpu-s")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

// BenchmarkRead reads every frame and does nothing with it.
func BenchmarkRead(b *testing.B) {
	path := capturePath(b)
	measure(b, path, func() {
		r, err := capture.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		r.Close()
	})
}

type nopSink struct{ n int }

func (s *nopSink) HandlePacket(p *packet.Packet) { s.n += len(p.Payload) }

// BenchmarkReadDecode reads and decodes every frame to its transport
// payload.
func BenchmarkReadDecode(b *testing.B) {
	path := capturePath(b)
	measure(b, path, func() { readDecode(b, path, &nopSink{}) })
}

// readDecode reads every frame of the capture and decodes it into s.
func readDecode(b *testing.B, path string, s packet.Sink) {
	r, err := capture.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	d := decode.New(decode.Config{})
	for {
		f, err := r.Next()
		if err != nil {
			return
		}
		d.Decode(f, s)
	}
}

// floorSink keeps, for every SIP payload, what a load must keep whatever
// the store: its frame's evidence pointer (spec/engine.md, frame
// provenance: the digest is taken when the frame is read, so that a
// changed file is caught on re-read) and, with retain, a copy of its
// bytes (get_dialog, the ladder and search_messages read them); with
// parse, the copy is the parser's own (sip.Parser.Parse copies the
// message it parses).
type floorSink struct {
	digest        bool
	retain, parse bool
	ps            *sip.Parser
	refs          []packet.FrameRef
	kept          [][]byte
	msgs          int
}

func (s *floorSink) HandlePacket(p *packet.Packet) {
	if len(p.Payload) == 0 || !s.ps.Looks(p.Payload) {
		return
	}
	s.msgs++
	if s.digest {
		s.refs = append(s.refs, packet.RefOf(p.Frame))
	}
	switch {
	case s.parse:
		m, err := s.ps.Parse(p.Payload)
		if err == nil {
			s.kept = append(s.kept, m.Raw)
		}
	case s.retain:
		s.kept = append(s.kept, append([]byte(nil), p.Payload...))
	}
}

// BenchmarkEvidenceFloor is what any load of the capture pays before a
// store or an output does anything: read and decode every frame, take the
// evidence pointer of every SIP payload's frame, keep a copy of its bytes,
// parse it. It reports CPU time per SIP message, the lower bound of the
// whole process's per-message cost (bench/README.md, "The floor");
// "retain+parse" is the same without the digest.
func BenchmarkEvidenceFloor(b *testing.B) {
	path := capturePath(b)
	for _, step := range []struct {
		name                  string
		digest, retain, parse bool
	}{
		{"digest", true, false, false},
		{"digest+retain", true, true, false},
		{"digest+retain+parse", true, true, true},
		{"retain+parse", false, true, true},
	} {
		b.Run(step.name, func(b *testing.B) {
			n := frames(b, path) // the lists are made at their size: no growth is counted
			msgs := 0
			b.ReportAllocs()
			runtime.GC()
			start := cpuTime()
			for i := 0; i < b.N; i++ {
				s := &floorSink{digest: step.digest, retain: step.retain, parse: step.parse, ps: sip.NewParser(sip.Limits{}),
					refs: make([]packet.FrameRef, 0, n), kept: make([][]byte, 0, n)}
				readDecode(b, path, s)
				msgs = s.msgs
				runtime.KeepAlive(s)
			}
			cpu := float64(cpuTime()-start) / float64(b.N)
			if msgs == 0 {
				b.Fatal("no SIP message in the capture")
			}
			b.ReportMetric(cpu/float64(msgs), "cpu-ns/msg")
			b.ReportMetric(float64(msgs), "msgs/op")
		})
	}
}

func load(b *testing.B, path string, cfg engine.Config) *engine.Capture {
	c := engine.New(cfg, nil)
	if err := c.LoadFiles(context.Background(), []string{path}); err != nil {
		b.Fatal(err)
	}
	c.Wait()
	return c
}

// BenchmarkLoad loads the capture into a new engine (read, decode, route,
// stores) on one and on two cores.
func BenchmarkLoad(b *testing.B) {
	path := capturePath(b)
	for _, cores := range []int{1, 2} {
		b.Run(fmt.Sprintf("cores=%d", cores), func(b *testing.B) {
			measure(b, path, func() { load(b, path, engine.Config{Cores: cores}) })
		})
	}
}

// BenchmarkBatchJSON is `sipnab -N -I FILE --json-run [--cores 2]` in process,
// the document written to io.Discard.
func BenchmarkBatchJSON(b *testing.B) {
	path := capturePath(b)
	for _, cores := range []int{1, 2} {
		b.Run(fmt.Sprintf("cores=%d", cores), func(b *testing.B) {
			measure(b, path, func() {
				c := load(b, path, engine.Config{Cores: cores})
				if err := report.WriteJSON(io.Discard, c); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// TestMemoryModel logs the live heap after the load (run with -v; with
// SIPNAB_HEAP_PROFILE=FILE it also writes a heap profile there).
func TestMemoryModel(t *testing.T) {
	path := capturePath(t)
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	if os.Getenv("SIPNAB_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 1 // every allocation, for exact sizes
	}
	base := live()
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{path}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	loaded := live()
	if f := os.Getenv("SIPNAB_HEAP_PROFILE"); f != "" {
		w, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(w); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	st := c.Status()
	calls := st.Dialogs.Dialogs
	t.Logf("%d dialogs, %d SIP messages, %d streams", calls, st.SIPMessages, st.Media.Streams)
	t.Logf("live heap after the load: %.1f MiB, %.0f B per dialog", float64(loaded-base)/(1<<20), float64(loaded-base)/float64(calls))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("heap sys %.1f MiB, total allocated %.1f MiB, %d GCs", float64(ms.HeapSys)/(1<<20), float64(ms.TotalAlloc)/(1<<20), ms.NumGC)
	runtime.KeepAlive(c)
}
