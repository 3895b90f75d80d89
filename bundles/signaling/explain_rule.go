package signaling

import (
	"context"
	"strings"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/sdk"
)

type explainRuleIn struct {
	RuleID string `json:"rule_id" desc:"exact rule id, e.g. SIP-3261-8.1.1.7-BRANCH-COOKIE"`
}

// RuleExplanation is explain_rule's answer, and the body of the
// sipnab://lint/<rule-id> resource.
type RuleExplanation struct {
	RuleID   string `json:"rule_id" desc:"rule id"`
	Title    string `json:"title" desc:"the defect in one line"`
	Severity string `json:"severity" enum:"error|warning|notice|info" desc:"severity"`
	Basis    string `json:"basis" enum:"must|should|interop|observation" desc:"kind of claim"`
	RFC      int    `json:"rfc" desc:"RFC number"`
	Section  string `json:"section" desc:"RFC section"`
	// Citation says what the section requires, in a few words of our own.
	Citation string `json:"citation" desc:"what the section requires"`
	// FiresWhen says exactly what the rule checks on the capture.
	FiresWhen string `json:"fires_when" desc:"what the rule checks"`
	URL       string `json:"url" desc:"the section on rfc-editor.org"`
	Scope     string `json:"scope" enum:"message|dialog|media" desc:"what the rule reads"`
	// Rulesets are the selectors that include the rule.
	Rulesets    []string    `json:"rulesets" nonnull:"true" desc:"selectors that include the rule"`
	RuleCatalog RuleCatalog `json:"rule_catalog" desc:"catalogue the rule comes from"`
}

// ExplainRule renders one lint rule. It is the one renderer behind
// explain_rule and the sipnab://lint/<rule-id> resource (serialize the
// answer as JSON). An unknown id is an invalid-params error listing every
// rule id: an empty answer would read as "that rule found nothing".
func ExplainRule(ruleID string) (RuleExplanation, error) {
	r, ok := lint.Lookup(ruleID)
	if !ok {
		hint := ""
		for _, id := range lint.IDs() {
			if strings.EqualFold(id, strings.TrimSpace(ruleID)) {
				hint = " (did you mean " + id + "? ids are exact)"
			}
		}
		return RuleExplanation{}, sdk.Refuse(sdk.KindUnknownID, "rule_id", "unknown rule_id %q%s; the %d rules are: %s",
			answer.Clip(ruleID), hint, lint.RuleCount, strings.Join(lint.IDs(), ", ")).Accepting(lint.IDs())
	}
	return RuleExplanation{
		RuleID: r.ID, Title: r.Title, Severity: r.Severity.String(), Basis: string(r.Basis),
		RFC: r.RFC, Section: r.Section, Citation: r.Citation, FiresWhen: r.FiresWhen, URL: r.URL,
		Scope: string(r.Scope), Rulesets: r.Rulesets, RuleCatalog: ruleCatalog(),
	}, nil
}

func explainRuleTool(*deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:        "explain_rule",
		Title:       "Explain a lint rule",
		Description: "One lint rule: what it checks, its severity and basis, the RFC and section it cites. An unknown id lists all 43.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "What a lint rule checks and where the RFC says so", Args: map[string]any{"rule_id": "SDP-3264-6.1-ANSWER-EXTRA-FORMAT"}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an unknown rule_id (the message lists all 43)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in explainRuleIn) (RuleExplanation, error) {
		return ExplainRule(in.RuleID)
	})
}
