package report

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/benchload"
	"github.com/sipnab/sipnab/internal/testengine"
)

// BenchmarkWriteMessagesJSON: --json over sipp-branch-scenario.pcapng
// (8989 SIP messages in 1334 dialogs); reported per message.
func BenchmarkWriteMessagesJSON(b *testing.B) {
	c := testengine.Public(b, engine.Config{}, "sipp-branch-scenario.pcapng")
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		k, err := WriteMessagesJSON(io.Discard, c, nil)
		if err != nil {
			b.Fatal(err)
		}
		n += k
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/message")
}

// BenchmarkWriteMessagesText: the per-message text over the same capture.
func BenchmarkWriteMessagesText(b *testing.B) {
	c := testengine.Public(b, engine.Config{}, "sipp-branch-scenario.pcapng")
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		k, err := WriteMessagesText(io.Discard, c, nil, MessageTextOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n += k
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/message")
}

// BenchmarkTailIdlePoll: one walk of a live poll (report.Tail.Next, final
// so it walks whatever the revision and the clock say) over 100,000
// Call-IDs none of which gained a message: what a live per-message output
// pays per walk on a store at the default dialog cap.
func BenchmarkTailIdlePoll(b *testing.B) {
	c := engine.New(engine.Config{}, nil)
	t0 := time.Unix(1700000000, 0)
	for i := range 100_000 {
		sendSIP(c, t0.Add(time.Duration(i)*time.Millisecond), fmt.Sprintf("idle-%d", i), "OPTIONS sip:b@x SIP/2.0", 1, "OPTIONS")
	}
	tl := NewTail(c.Dialogs(), nil)
	if err := tl.Next(false, func(MessageOrder) error { return nil }); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := tl.Next(true, func(MessageOrder) error { b.Fatal("nothing is new"); return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteJSON: the --json-run document of sipp-branch-scenario.pcapng
// (8989 SIP messages in 1334 dialogs), or of $SIPNAB_BENCH_PCAP
// (benchCapture); reported per dialog, in CPU time too.
func BenchmarkWriteJSON(b *testing.B) {
	c := benchCapture(b)
	n := c.Dialogs().Len()
	b.ReportAllocs()
	cpu0 := benchload.CPUNow()
	for b.Loop() {
		if err := WriteJSON(io.Discard, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchload.CPUNow()-cpu0)/float64(b.N*n), "cpu-ns/dialog")
}

// BenchmarkWriteText: the --report text of benchCapture; reported per
// dialog, in CPU time too.
func BenchmarkWriteText(b *testing.B) {
	c := benchCapture(b)
	n := c.Dialogs().Len()
	b.ReportAllocs()
	cpu0 := benchload.CPUNow()
	for b.Loop() {
		if err := WriteText(io.Discard, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchload.CPUNow()-cpu0)/float64(b.N*n), "cpu-ns/dialog")
}

// BenchmarkWriteAnalysisJSON: the --json-analyze document of
// benchCapture; reported per dialog, in CPU time too.
func BenchmarkWriteAnalysisJSON(b *testing.B) {
	c := benchCapture(b)
	n := c.Dialogs().Len()
	b.ReportAllocs()
	cpu0 := benchload.CPUNow()
	for b.Loop() {
		if err := WriteAnalysisJSON(io.Discard, c, DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchload.CPUNow()-cpu0)/float64(b.N*n), "cpu-ns/dialog")
}
