package signaling

import (
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

func TestValidateMessage(t *testing.T) {
	c := lintLoadCapture(t, testcap.Public(dtmfCapture))
	tool := lintProvisioned(t, c)["validate_message"]
	cases := []struct {
		name  string
		index int
		want  map[string]int
	}{
		// Frame 21: the INVITE with Session-Expires: 60 and Min-SE: 5.
		{"frame 21", 20, map[string]int{"SIP-4028-4-SESSION-EXPIRES-TOO-SMALL": 1, "SIP-4028-5-MIN-SE-TOO-SMALL": 1}},
		// Frame 24: the ACK whose top Via has branch=0.
		{"frame 24", 23, map[string]int{"SIP-3261-8.1.1.7-BRANCH-COOKIE": 1}},
		// Frame 23: the 200 whose answer drops the declined video line; a
		// dialog rule, so a single message shows nothing.
		{"frame 23", 22, map[string]int{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a ValidateAnswer
			lintInvoke(t, tool, `{"call_id":"`+dtmfCallID+`","index":`+lintItoa(tc.index)+`}`, &a)
			if got := lintCountRules(a.Findings); !lintEqualCounts(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if a.MessageIndex != tc.index || a.MessageCount != 1 || a.CallID != dtmfCallID || strings.Join(a.Rulesets, ",") != "all" {
				t.Errorf("got message_index %d message_count %d call_id %q rulesets %v", a.MessageIndex, a.MessageCount, a.CallID, a.Rulesets)
			}
			for _, f := range a.Findings {
				if f.MessageIndex != tc.index {
					t.Errorf("finding points at %d, want %d", f.MessageIndex, tc.index)
				}
			}
			if len(a.RulesNotEvaluated) != 1 || a.RulesNotEvaluated[0].Reason != lint.ReasonSingleMessage || len(a.RulesNotEvaluated[0].RuleIDs) != 19 {
				t.Errorf("got rules_not_evaluated %+v, want the 19 dialog and media rules", a.RulesNotEvaluated)
			}
			if a.Suppressions.Patterns == nil || a.RuleCatalog.RuleCount != 43 {
				t.Errorf("got suppressions %+v catalog %+v, want them present", a.Suppressions, a.RuleCatalog)
			}
		})
	}
	for _, tc := range []struct{ name, args, want string }{
		{"index past the end", `{"call_id":"` + dtmfCallID + `","index":32}`, "index 32 is out of range: the dialog has 32 messages"},
		{"negative index", `{"call_id":"` + dtmfCallID + `","index":-1}`, `argument "index": got -1; valid: at least 0`},
		{"fractional index", `{"call_id":"` + dtmfCallID + `","index":1.5}`, "integer"},
		{"unknown call", `{"call_id":"nope","index":0}`, "unknown call_id"},
		{"no file root", `{"call_id":"` + dtmfCallID + `","index":0,"suppression_file":"x"}`, "file tools are disabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := lintInvokeErr(t, tool, tc.args)
			if e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
				t.Errorf("got %d %q, want -32602 mentioning %q", e.Code, e.Message, tc.want)
			}
		})
	}
}
