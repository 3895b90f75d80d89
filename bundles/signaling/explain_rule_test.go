package signaling

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/sdk"
)

func TestExplainRule(t *testing.T) {
	tool := lintProvisioned(t, engine.New(engine.Config{}, nil))["explain_rule"]
	var e RuleExplanation
	r := lintInvoke(t, tool, `{"rule_id":"SIP-3261-20-URI-BRACKETS"}`, &e)
	want := RuleExplanation{
		RuleID: "SIP-3261-20-URI-BRACKETS", Severity: "error", Basis: "must", RFC: 3261, Section: "20",
		URL: "https://www.rfc-editor.org/rfc/rfc3261#section-20", Scope: "message",
	}
	if e.RuleID != want.RuleID || e.Severity != want.Severity || e.Basis != want.Basis || e.RFC != want.RFC ||
		e.Section != want.Section || e.URL != want.URL || e.Scope != want.Scope {
		t.Errorf("got %+v, want %+v", e, want)
	}
	if strings.Join(e.Rulesets, ",") != "all,must,rfc,syntax,rfc3261" {
		t.Errorf("got rulesets %v", e.Rulesets)
	}
	if e.Title == "" || e.Citation == "" || e.FiresWhen == "" || e.RuleCatalog.RuleCount != 43 {
		t.Errorf("got %+v, want title, citation, fires_when and the catalogue", e)
	}
	if r.Fenced {
		t.Errorf("explain_rule carries no capture text, so no provenance note")
	}
	// Every rule explains, with the scope its id implies.
	for _, id := range lint.IDs() {
		x, err := ExplainRule(id)
		if err != nil || x.RuleID != id || x.Scope != string(lint.ScopeOf(id)) {
			t.Errorf("%s: got %+v %v", id, x, err)
		}
	}
	for _, tc := range []struct{ name, args, want string }{
		{"unknown", `{"rule_id":"SIP-9999-1-NOPE"}`, "SIP-9999-1-NOPE"},
		{"case differs", `{"rule_id":"sip-3261-20-uri-brackets"}`, "did you mean SIP-3261-20-URI-BRACKETS"},
		{"empty", `{"rule_id":""}`, "unknown rule_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := lintInvokeErr(t, tool, tc.args)
			if e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
				t.Errorf("got %d %q, want -32602 mentioning %q", e.Code, e.Message, tc.want)
			}
			// An unknown id lists all 43.
			for _, id := range lint.IDs() {
				if !strings.Contains(e.Message, id) {
					t.Errorf("error does not list %s", id)
				}
			}
		})
	}
}

// TestExplainRuleIsTheResourceRenderer: the resource body is the
// serialized ExplainRule answer, byte for byte the tool's first block.
func TestExplainRuleIsTheResourceRenderer(t *testing.T) {
	tool := lintProvisioned(t, engine.New(engine.Config{}, nil))["explain_rule"]
	r, err := tool.Invoke(context.Background(), json.RawMessage(`{"rule_id":"OBS-3264-6.1-PT-UNDECLARED"}`), sdk.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	x, err := ExplainRule("OBS-3264-6.1-PT-UNDECLARED")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != r.Blocks[0] {
		t.Errorf("tool answer and renderer differ:\n%s\n%s", r.Blocks[0], b)
	}
}
