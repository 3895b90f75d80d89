package bench_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/report"
)

// TestDiagnosisMatchesAnswers runs the capture analysis (what --report and
// get_capture_report print) over generated captures and wants, per media
// rule, exactly the calls the generator's answers name: high_jitter
// (jitter_ms > 50 ms), high_loss (loss_pct > 5 %), late_media and
// slow_setup. Before jitter_ms became the one jitter judged, the analysis
// judged jitter_mean_ms and found none of the jitter_spike calls (carrier
// seed 1: 10 calls) while find_problems selected them.
func TestDiagnosisMatchesAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and loads captures")
	}
	cfgs := []gen.Config{
		gen.Small(1),
		{Seed: 11, Calls: 60, Duration: 3 * time.Second, Spacing: 50 * time.Millisecond, Registers: 9},
	}
	rules := map[string]string{ // finding kind → answers reason
		"high_jitter": gen.ReasonHighJitter,
		"high_loss":   gen.ReasonHighLoss,
		"late_media":  gen.ReasonLateMedia,
	}
	seen := map[string]int{}
	for _, cfg := range cfgs {
		t.Run(fmt.Sprintf("seed%d_calls%d", cfg.Seed, cfg.Calls), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gen.pcap")
			a, err := gen.WriteFiles(cfg, path, "")
			if err != nil {
				t.Fatal(err)
			}
			c := engine.New(engine.Config{}, nil)
			if err := c.LoadFiles(context.Background(), []string{path}); err != nil {
				t.Fatal(err)
			}
			c.Wait()
			rep, _ := report.Analyze(c, analysis.Options{})
			for kind, reason := range rules {
				var want []string
				for _, p := range a.ProblemCalls {
					if slices.Contains(p.Reasons, reason) {
						want = append(want, p.CallID)
					}
				}
				var got []string
				for _, f := range rep.Findings {
					if f.Kind != kind {
						continue
					}
					if int(f.EvidenceOmitted) > 0 {
						t.Fatalf("%s: %d evidence rows omitted, raise the cap or shrink the capture", kind, f.EvidenceOmitted)
					}
					for _, e := range f.Evidence {
						if !slices.Contains(got, e.CallID) {
							got = append(got, e.CallID)
						}
					}
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s: got %d calls %v, want %d %v", kind, len(got), got, len(want), want)
				}
				t.Logf("%s: %d calls", kind, len(want))
				seen[kind] += len(want)
			}
		})
	}
	for kind := range rules {
		if seen[kind] == 0 {
			t.Errorf("%s: no generated call has it: the comparison proves nothing", kind)
		}
	}
}
