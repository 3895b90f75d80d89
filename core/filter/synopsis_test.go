package filter

import (
	"strings"
	"testing"
)

// TestSynopsisNamesTheRealGrammar: the two-line synopsis tool descriptions
// carry names every operator the parser accepts, only fields and aliases
// the compiler knows, and an example that compiles.
func TestSynopsisNamesTheRealGrammar(t *testing.T) {
	for _, op := range opText {
		if op != "" && !strings.Contains(Synopsis, " "+op) {
			t.Errorf("operator %s missing from the synopsis", op)
		}
	}
	for _, kw := range []string{"and", "or", "not", "( )"} {
		if !strings.Contains(Synopsis, kw) {
			t.Errorf("keyword %s missing from the synopsis", kw)
		}
	}
	if len(synopsisFields) != 5 {
		t.Errorf("the synopsis names %d fields, want 5", len(synopsisFields))
	}
	for _, f := range synopsisFields {
		if _, ok := FieldByName(f); !ok {
			t.Errorf("synopsis field %s is not a filter field", f)
		}
		if !strings.Contains(Synopsis, " "+f) {
			t.Errorf("synopsis field %s is not in the text", f)
		}
	}
	if _, ok := ExpandAlias("problems", DefaultThresholds()); !ok {
		t.Error("the synopsis's alias problems is not an alias")
	}
	if _, err := Compile(SynopsisExample, DefaultThresholds()); err != nil {
		t.Errorf("the synopsis example does not compile: %v", err)
	}
	// It is repeated in every filter tool's description, inside the
	// bundles' byte budgets: one line, and short.
	if !strings.HasSuffix(Synopsis, SynopsisExample+".") || strings.ContainsAny(Synopsis, "\n|") || len(Synopsis) > 200 {
		t.Errorf("the synopsis is not one line of at most 200 bytes ending in its example (%d bytes):\n%s", len(Synopsis), Synopsis)
	}
}
