package filter

import (
	"errors"
	"strings"
	"testing"
)

// TestAliasClauses: an alias splits into the clauses its expansion ORs,
// each reading the fields it names; OR-ing them matches what the alias
// matches.
func TestAliasClauses(t *testing.T) {
	th := DefaultThresholds()
	cs, err := AliasClauses([]string{"problems", "short-calls", "problems"}, th)
	if err != nil {
		t.Fatal(err)
	}
	exp, _ := ExpandAlias("problems", th)
	parts := strings.Split(exp, " or ")
	if len(cs) != len(parts)+1 {
		t.Fatalf("got %d clauses, want %d (problems once, short-calls once)", len(cs), len(parts)+1)
	}
	for i, p := range parts {
		if cs[i].Alias != "problems" || cs[i].Text != p || len(cs[i].Fields) != 1 {
			t.Errorf("clause %d: got %+v, want %q reading one field", i, cs[i], p)
		}
	}
	last := cs[len(cs)-1]
	if last.Alias != "short-calls" || last.Text != "state == Completed and duration < 3" || len(last.Fields) != 2 ||
		last.Fields[0] != FieldState || last.Fields[1] != FieldDuration {
		t.Errorf("short-calls: got %+v", last)
	}
	loss := (&MemRecord{}).SetNum(FieldRTPLoss, 7)
	var hit []string
	for i := range cs {
		if cs[i].Match(loss) {
			hit = append(hit, cs[i].Text)
		}
	}
	if len(hit) != 1 || hit[0] != "rtp.loss > 5" {
		t.Errorf("a record losing 7 %%: got %v, want [rtp.loss > 5]", hit)
	}
	if _, err := AliasClauses([]string{"failed"}, th); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown alias: got %v, want ErrUnknownKind", err)
	}
}
