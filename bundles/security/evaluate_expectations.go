package security

import (
	"context"
	"errors"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/expect"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/sdk"
)

// evaluateExpectationsSchemaVersion is evaluate_expectations' response
// schema version.
const evaluateExpectationsSchemaVersion = 1

// ruleIn is one rule as an argument.
type ruleIn struct {
	Name         string  `json:"name,omitempty" desc:"label echoed in the result"`
	Metric       string  `json:"metric" desc:"count, asr (percent), lint_errors or mos_p<N> (N 0-100, p0 = worst stream)"`
	Op           string  `json:"op" enum:">=|>|<=|<|==|!=" desc:"comparison; == and != are exact"`
	Value        float64 `json:"value" desc:"threshold"`
	Scope        string  `json:"scope,omitempty" desc:"filter:<expr or alias>, or severity:<error|warning|notice|info> (lint_errors only)"`
	MinSample    int     `json:"min_sample,omitempty" desc:"skip when the sample is smaller; >= 1 also skips an empty population instead of failing it"`
	GroundedOnly *bool   `json:"grounded_only,omitempty" desc:"mos_p<N> only: score only streams whose codec impairment is published (default true)"`
}

type evaluateExpectationsIn struct {
	Rules           []ruleIn `json:"rules,omitempty" desc:"the suite inline (exactly one of rules, rules_toml)"`
	RulesTOML       string   `json:"rules_toml,omitempty" desc:"the bytes of a sipnab.expect.toml ([[rule]] tables), so the agent judges what CI judges (exactly one of rules, rules_toml)"`
	SuppressionFile string   `json:"suppression_file,omitempty" default:".sipnablint beside the capture" desc:"lint suppression list in the file root (needs --mcp-file-root); default: .sipnablint beside the capture, up to the project root"`
}

// RuleResult is one rule's outcome.
type RuleResult struct {
	Index     int     `json:"index" desc:"rule position, from 0"`
	Name      string  `json:"name,omitempty" desc:"rule name"`
	Metric    string  `json:"metric" desc:"metric"`
	Unit      string  `json:"unit" enum:"dialogs|percent|findings|mos" desc:"unit of observed and threshold"`
	Op        string  `json:"op" desc:"comparison"`
	Threshold float64 `json:"threshold" desc:"the rule's value"`
	Scope     string  `json:"scope,omitempty" desc:"scope as written"`
	// Observed is null when the population was empty.
	Observed *float64 `json:"observed" desc:"measured value; null when the population was empty"`
	// Sample is what the value was measured over.
	Sample             int      `json:"sample" desc:"population: dialogs in the capture (count), seizures (asr), dialogs linted (lint_errors), streams scored (mos)"`
	MinSample          int      `json:"min_sample" desc:"the rule's min_sample (0: none)"`
	UngroundedExcluded *int     `json:"ungrounded_excluded,omitempty" desc:"mos: streams left out by grounded_only"`
	Verdict            string   `json:"verdict" enum:"pass|fail|skipped" desc:"rule verdict"`
	Reason             string   `json:"reason" desc:"why; an empty population fails with unevaluable:"`
	Notes              []string `json:"notes,omitempty" desc:"what else the reader needs (suppressed or capped findings)"`
}

// ExpectationVerdict is evaluate_expectations' answer.
type ExpectationVerdict struct {
	// Verdict: fail if any rule failed, pass if any was evaluated and none
	// failed, not_evaluated if every rule skipped.
	Verdict string `json:"verdict" enum:"pass|fail|not_evaluated" desc:"fail: a rule failed; not_evaluated: every rule skipped"`
	// ExitCode is the CI exit code: 0 pass, 1 fail, 2 not_evaluated.
	ExitCode   int `json:"exit_code" desc:"0 pass, 1 fail, 2 not_evaluated"`
	RulesTotal int `json:"rules_total" desc:"rules in the suite"`
	Evaluated  int `json:"evaluated" desc:"rules judged"`
	Passed     int `json:"passed" desc:"rules that held"`
	Failed     int `json:"failed" desc:"rules that did not hold (unevaluable included)"`
	Skipped    int `json:"skipped" desc:"rules skipped by min_sample"`
	// Complete is false while the capture is still loading or stopped
	// early: the verdict is over what was read.
	Complete            bool         `json:"complete" desc:"the capture was read whole; false: the verdict covers a partial read"`
	DialogsInCapture    int          `json:"dialogs_in_capture" desc:"dialogs held"`
	StreamsInCapture    int          `json:"streams_in_capture" desc:"RTP streams held"`
	SuppressionsApplied int          `json:"suppressions_applied" desc:"lint findings the suppression list withheld"`
	SuppressionFile     *string      `json:"suppression_file" desc:"suppression list applied; null when none"`
	Results             []RuleResult `json:"results" nonnull:"true" desc:"one per rule, in order"`
	// ResultsOmitted counts the last results left out to fit
	// --mcp-max-response-bytes; the verdict and counts cover every rule.
	ResultsOmitted int `json:"results_omitted,omitempty" desc:"last results cut by --mcp-max-response-bytes; verdict and counts cover all"`
	sdk.SourceFlags
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	SchemaVersion   int                 `json:"schema_version" desc:"response schema version"`
}

func evaluateExpectationsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "evaluate_expectations",
		Title: "Evaluate expectations",
		Description: "Judge the capture against a rule suite (sipnab.expect.toml): metric count|asr|lint_errors|mos_p<N>, op, value, " +
			"scope filter:<expr>|severity:<lvl>, min_sample. Verdict pass|fail|not_evaluated with a CI exit code 0/1/2; " +
			"an empty population fails as unevaluable unless min_sample >= 1.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "At least one dialog, ASR at least 50 %", Args: map[string]any{"rules": []any{
				map[string]any{"metric": "count", "op": ">=", "value": 1},
				map[string]any{"name": "asr", "metric": "asr", "op": ">=", "value": 50},
			}}},
			{Title: "A sipnab.expect.toml's bytes", Args: map[string]any{"rules_toml": "[[rule]]\nname = \"no lint errors\"\nmetric = \"lint_errors\"\nop = \"==\"\nvalue = 0\n"}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "both or neither of rules and rules_toml"},
			{Code: sdk.CodeInvalidParams, When: "a rule defect, naming the rule index: unknown metric, bad op, scope, filter or severity, a severity scope on a metric other than lint_errors, grounded_only on a metric other than mos_p<N>, a percentile over 100, an empty suite; rules_toml that does not parse or has an unknown key"},
			{Code: sdk.CodeInvalidParams, When: "suppression_file without --mcp-file-root, or one that is not a file name in the root or does not parse"},
		},
	}, func(ctx context.Context, c *sdk.Call, in evaluateExpectationsIn) (ExpectationVerdict, error) {
		return evaluateExpectations(ctx, d, c, in)
	})
}

func evaluateExpectations(ctx context.Context, d *deps, c *sdk.Call, in evaluateExpectationsIn) (ExpectationVerdict, error) {
	var rules []expect.Rule
	switch {
	case len(in.Rules) > 0 && in.RulesTOML != "":
		return ExpectationVerdict{}, sdk.InvalidParams("give rules or rules_toml, not both: two suites have no defined order")
	case len(in.Rules) == 0 && in.RulesTOML == "":
		return ExpectationVerdict{}, sdk.InvalidParams("give rules or rules_toml: a suite of no rules judges nothing")
	case in.RulesTOML != "":
		rs, err := expect.ParseTOML([]byte(in.RulesTOML))
		if err != nil {
			return ExpectationVerdict{}, sdk.InvalidParams("%v", err)
		}
		rules = rs
	default:
		rules = make([]expect.Rule, len(in.Rules))
		for i, r := range in.Rules {
			v := r.Value
			rules[i] = expect.Rule{Name: r.Name, Metric: r.Metric, Op: r.Op, Value: &v, Scope: r.Scope, GroundedOnly: r.GroundedOnly}
			if r.MinSample != 0 {
				ms := r.MinSample
				rules[i].MinSample = &ms
			}
		}
	}
	q := d.querier()
	compiled, err := expect.Compile(rules, func(expr string) (*filter.Filter, error) { return q.Compile(expr) })
	if err != nil {
		var de *expect.DefectError
		if errors.As(err, &de) {
			return ExpectationVerdict{}, sdk.InvalidParams("%v", de)
		}
		return ExpectationVerdict{}, sdk.InvalidParams("%v", err)
	}
	supp, err := answer.Suppression(d.root, d.capture, in.SuppressionFile)
	if err != nil {
		return ExpectationVerdict{}, err
	}
	src := answer.SourceState(d.capture.Status())
	s, err := expect.Evaluate(ctx, expect.Capture{Q: q, Dialogs: d.capture.Dialogs(), Media: d.capture.Media(), Suppression: supp}, compiled)
	if err != nil {
		return ExpectationVerdict{}, err
	}
	out := ExpectationVerdict{
		Verdict: s.Verdict, ExitCode: s.ExitCode, RulesTotal: len(compiled), Evaluated: s.Evaluated,
		Passed: s.Passed, Failed: s.Failed, Skipped: s.Skipped,
		Complete:         src.Exhausted && !src.StoppedEarly && !src.Loading,
		DialogsInCapture: s.DialogsInCapture, StreamsInCapture: s.StreamsInCapture,
		SuppressionsApplied: s.SuppressionsApplied, Results: make([]RuleResult, 0, len(s.Results)),
		SourceFlags: src.Flags(), CaptureIdentity: src.Identity, SchemaVersion: evaluateExpectationsSchemaVersion,
	}
	if supp != nil {
		f := answer.Unfenced(supp.File)
		out.SuppressionFile = &f
	}
	for _, r := range s.Results {
		out.Results = append(out.Results, RuleResult{
			Index: r.Index, Name: answer.Unfenced(r.Name), Metric: answer.Unfenced(r.Metric), Unit: r.Unit, Op: r.Op,
			Threshold: r.Threshold, Scope: answer.Unfenced(r.Scope), Observed: r.Observed, Sample: r.Sample,
			MinSample: r.MinSample, UngroundedExcluded: r.UngroundedExcluded, Verdict: r.Verdict, Reason: r.Reason, Notes: r.Notes,
		})
	}
	results := out.Results
	build := func(k int) any {
		o := out
		o.Results, o.ResultsOmitted = results[:k], len(results)-k
		return o
	}
	k, err := c.FitPage(len(results), 0, "rule result", build)
	if err != nil {
		return ExpectationVerdict{}, err
	}
	return build(k).(ExpectationVerdict), nil
}
