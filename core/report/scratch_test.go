package report

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
)

// TestDetailReadIntoAScratchEqualsDetail: every dialog of every capture
// under testdata/ (and of $SIPNAB_BENCH_PCAP), read with one Scratch reused
// dialog after dialog (as the capture analysis and the text report's
// failure codes read them), equals its Detail read without; and the facts
// made of a dialog read into the Scratch are still those of the plain
// read after the next dialog overwrote the Scratch (the facts keep no
// message memory of it).
func TestDetailReadIntoAScratchEqualsDetail(t *testing.T) {
	files := captureFiles(t)
	total := 0
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			c := engine.New(engine.Config{Node: "test-node"}, nil)
			if err := c.LoadFiles(context.Background(), []string{p}); err != nil {
				t.Skip(err)
			}
			c.Wait()
			ds := c.Dialogs()
			var sc dialog.Scratch
			var prevID string
			var prev analysis.DialogFacts
			for _, id := range ds.CallIDs() {
				want, ok := ds.Get(id)
				if !ok {
					continue
				}
				got, _ := ds.GetWith(id, dialog.Options{Scratch: &sc})
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("dialog %q read into the scratch differs:\n got %+v\nwant %+v", id, got, want)
				}
				if prevID != "" {
					d, _ := ds.Get(prevID)
					if w := analysis.FactsFrom(d); !reflect.DeepEqual(prev, w) {
						t.Fatalf("dialog %q: its facts changed once the scratch was reused:\n got %+v\nwant %+v", prevID, prev, w)
					}
				}
				prevID, prev = id, analysis.FactsFrom(got)
				total++
			}
		})
	}
	if total < 1400 {
		t.Errorf("compared %d dialogs in all, want the 1,450 the captures hold", total)
	}
}
