package analysis_test

import (
	"testing"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/media/mediatest"
	"github.com/sipnab/sipnab/internal/testcap"
)

// BenchmarkCaptureReport times the whole-capture analysis of
// sipp-branch-scenario.pcapng (1334 dialogs, 8989 messages): reading every
// dialog's facts from the store, messages included, and diagnosing them.
func BenchmarkCaptureReport(b *testing.B) {
	st := media.NewStore(media.Config{})
	ds := dialog.New(dialog.Config{})
	if _, err := mediatest.Feed(b, testcap.Public("sipp-branch-scenario.pcapng"), st, ds); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := analysis.CaptureReport(analysis.FactsFromStore(ds), st, analysis.CaptureFacts{SourceExhausted: true}, analysis.Options{})
		if r.DialogsExamined != 1334 {
			b.Fatalf("got %d dialogs", r.DialogsExamined)
		}
	}
}
