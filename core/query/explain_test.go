package query

import (
	"context"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/internal/testcap"
)

// TestExplainOnPublicCaptures is find_problems' half of the evidence property
// (core/analysis property_test.go), over every readable public capture: a row
// matches kinds exactly when it matches at least one of their clauses; each
// clause it matched is named with a measured value for every field it reads
// (never "absent"); and a media clause matched only on a dialog with an RTP
// stream that carried packets, a PDD clause only on a measured PDD.
func TestExplainOnPublicCaptures(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"problems", "slow-setup", "short-calls", "one-way", "nat-issues", "codec-asym",
		"ptime-asym", "payload-asym", "duration-asym", "late-media"}
	total := 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c := engine.New(engine.Config{}, nil)
			if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); err != nil {
				t.Skipf("%s: %v", name, err)
			}
			c.Wait()
			q := New(c.Dialogs(), c.Media(), filter.DefaultThresholds())
			all, err := q.CompileKinds(kinds)
			if err != nil {
				t.Fatal(err)
			}
			clauses, err := filter.AliasClauses(kinds, q.Thresholds())
			if err != nil {
				t.Fatal(err)
			}
			rows := q.Rows(dialog.ByCreated)
			for i := range rows {
				row := &rows[i]
				matched := q.Explain(row, clauses)
				if all.Match(q.Record(row)) != (len(matched) > 0) {
					t.Errorf("%s: kinds match %v, clauses matched %v", row.CallID, all.Match(q.Record(row)), matched)
				}
				total += len(matched)
				for _, m := range matched {
					if m.Measured == "" || strings.Contains(m.Measured, "absent") {
						t.Errorf("%s: %s %q measured %q", row.CallID, m.Alias, m.Clause, m.Measured)
					}
					if strings.HasPrefix(m.Clause, "rtp.") {
						var pk uint64
						for _, s := range c.Media().StreamsFor(row.CallID) {
							pk += s.Packets
						}
						if pk == 0 {
							t.Errorf("%s: %q matched on a dialog without RTP packets", row.CallID, m.Clause)
						}
					}
					if strings.HasPrefix(m.Clause, "pdd ") && row.Timing.PDDMs == nil {
						t.Errorf("%s: %q matched without a measured PDD", row.CallID, m.Clause)
					}
				}
			}
		})
	}
	if total < 40 {
		// 47 at this writing: failures, loss, one-way, asymmetries
		t.Errorf("%d clauses matched over the public captures: the property was checked on too little", total)
	}
}
