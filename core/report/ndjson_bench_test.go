package report

import (
	"io"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
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
