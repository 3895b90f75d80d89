package all

import (
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

// TestEveryFilterToolTeachesTheGrammar: every tool taking a filter carries
// the two-line grammar and the address of the whole language in its
// description; a tool taking a filter expression under another name points
// at the page.
func TestEveryFilterToolTeachesTheGrammar(t *testing.T) {
	reg, err := register(t, sdk.RegistryOptions{SkipBudgets: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range reg.Bundles() {
		for _, tl := range b.Tools {
			for _, p := range tl.InputSchema().Properties {
				switch {
				case p.Name == "filter":
					n++
					if !strings.Contains(tl.Description, reference.FilterHelp) {
						t.Errorf("%s takes a filter; its description lacks the grammar:\n%s", tl.Name, tl.Description)
					}
				case strings.Contains(p.Schema.Description, "filter expression"):
					if !strings.Contains(tl.Description, reference.FilterURI) {
						t.Errorf("%s takes a filter expression (%s); its description does not name %s", tl.Name, p.Name, reference.FilterURI)
					}
				}
			}
		}
	}
	if n < 6 {
		t.Errorf("%d tools take a filter, want at least 6 (list_dialogs, aggregate_dialogs, find_problems, await_condition, group_dialogs, search_by_time)", n)
	}
}

// TestLookalikeToolsSayWhichToUse: each tool of a pair an agent could
// confuse, and each per-call view, names the other it should use instead
// in some case.
func TestLookalikeToolsSayWhichToUse(t *testing.T) {
	reg, err := register(t, sdk.RegistryOptions{SkipBudgets: true})
	if err != nil {
		t.Fatal(err)
	}
	for tool, others := range map[string][]string{
		"aggregate_dialogs": {"group_dialogs"},
		"group_dialogs":     {"aggregate_dialogs"},
		"list_dialogs":      {"aggregate_dialogs", "find_problems"},
		"find_problems":     {"list_dialogs"},
		"search_by_time":    {"list_dialogs"},
		"find_correlated":   {"get_call_tree"},
		"get_call_tree":     {"find_correlated"},
		"lint_dialog":       {"validate_message"},
		"validate_message":  {"lint_dialog"},
		"triage_call":       {"get_dialog_report", "get_dialog"},
		"get_dialog_report": {"triage_call", "render_ladder"},
		"render_ladder":     {"get_dialog"},
		"get_dialog":        {"render_ladder"},
	} {
		tl, _, ok := reg.Tool(tool)
		if !ok {
			t.Errorf("%s is not registered", tool)
			continue
		}
		for _, o := range others {
			if !strings.Contains(tl.Description, o) {
				t.Errorf("%s does not say when to use %s instead:\n%s", tool, o, tl.Description)
			}
		}
	}
}

// TestDescriptionsCarryNoUnexplainedJargon: words an agent cannot resolve
// from the tool list alone stay out of descriptions, or come with their
// meaning.
func TestDescriptionsCarryNoUnexplainedJargon(t *testing.T) {
	reg, err := register(t, sdk.RegistryOptions{SkipBudgets: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range reg.Bundles() {
		for _, tl := range b.Tools {
			d := tl.Description
			for _, word := range []string{"OBS rules", "keepalive", "--call-report", "clauses that fired", "orphaned RTP"} {
				if strings.Contains(d, word) {
					t.Errorf("%s says %q, which an agent cannot resolve:\n%s", tl.Name, word, d)
				}
			}
			if strings.Contains(d, "heuristic_edges") && !strings.Contains(d, "Timing-only guesses") {
				t.Errorf("%s names heuristic_edges without saying what they are", tl.Name)
			}
		}
	}
}

// TestFindProblemsNamesEveryAlias: the kinds argument lists every alias the
// filter language has, so an agent can choose one from tools/list alone.
func TestFindProblemsNamesEveryAlias(t *testing.T) {
	reg, err := register(t, sdk.RegistryOptions{SkipBudgets: true})
	if err != nil {
		t.Fatal(err)
	}
	tl, _, ok := reg.Tool("find_problems")
	if !ok {
		t.Fatal("find_problems is not registered")
	}
	var kinds string
	for _, p := range tl.InputSchema().Properties {
		if p.Name == "kinds" {
			kinds = p.Schema.Description
		}
	}
	for _, a := range filter.Aliases() {
		if !strings.Contains(kinds, a.Name) {
			t.Errorf("find_problems kinds does not name the alias %s: %q", a.Name, kinds)
		}
	}
}
