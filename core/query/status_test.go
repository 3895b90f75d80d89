package query

import (
	"context"
	"testing"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/internal/testcap"
)

// TestFinalStatusCodeReadsTheRow: on every public capture the filter field
// final_status_code is the row's final_status_code (docs/data-model.md),
// present exactly when the row has one; and on sipp-branch-scenario.pcapng
// the filters count what tshark counts (truth: 1,148 calls ended 403, 102
// answered 200, 84 without a final response).
func TestFinalStatusCodeReadsTheRow(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatalf("public captures: %v", err)
	}
	want := map[string]map[string]int{
		"sipp-branch-scenario.pcapng": {
			"final_status_code == 403":     1148,
			"status == 200":                102,
			"final_status_code >= 400":     1148,
			"not final_status_code >= 100": 84,
			"final_status_code == 0":       0,
		},
		"SIP_DTMF2.cap":               {"final_status_code == 603": 1, "final_status_code >= 600": 1},
		"sip-routing-error.pcapng":    {"final_status_code == 404": 2, "final_status_code == 401": 0},
		"sip-488-codec-reject.pcapng": {"final_status_code == 488": 1},
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c := engine.New(engine.Config{}, nil)
			if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); err != nil {
				t.Skipf("not a capture sipnab reads: %v", err)
			}
			c.Wait()
			q := New(c.Dialogs(), c.Media(), filter.DefaultThresholds())
			for _, row := range q.Rows(dialog.ByCreated) {
				v, ok := q.Record(&row).Num(filter.FieldFinalStatusCode)
				if ok != (row.FinalStatusCode != 0) || int(v) != row.FinalStatusCode {
					t.Errorf("%s: final_status_code %v (present %v), row has %d", row.CallID, v, ok, row.FinalStatusCode)
				}
			}
			for expr, n := range want[name] {
				f, err := q.Compile(expr)
				if err != nil {
					t.Fatal(err)
				}
				p, err := q.List(context.Background(), ListOptions{Filter: f})
				if err != nil {
					t.Fatal(err)
				}
				if p.TotalMatched != n {
					t.Errorf("%s: matched %d, want %d", expr, p.TotalMatched, n)
				}
			}
		})
	}
}
