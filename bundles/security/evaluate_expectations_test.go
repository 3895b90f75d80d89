package security

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

type eeAnswer struct {
	Verdict             string  `json:"verdict"`
	ExitCode            int     `json:"exit_code"`
	RulesTotal          int     `json:"rules_total"`
	Evaluated           int     `json:"evaluated"`
	Passed              int     `json:"passed"`
	Failed              int     `json:"failed"`
	Skipped             int     `json:"skipped"`
	Complete            bool    `json:"complete"`
	DialogsInCapture    int     `json:"dialogs_in_capture"`
	StreamsInCapture    int     `json:"streams_in_capture"`
	SuppressionsApplied int     `json:"suppressions_applied"`
	SuppressionFile     *string `json:"suppression_file"`
	Results             []struct {
		Index              int      `json:"index"`
		Name               string   `json:"name"`
		Unit               string   `json:"unit"`
		Observed           *float64 `json:"observed"`
		Sample             int      `json:"sample"`
		UngroundedExcluded *int     `json:"ungrounded_excluded"`
		Verdict            string   `json:"verdict"`
		Reason             string   `json:"reason"`
	} `json:"results"`
}

type eeWant struct {
	verdict  string
	observed *float64 // nil: null
	sample   int
	unit     string
}

// TestEvaluateExpectationsMeasuresEachMetric: on the sample capture
// (testdata/sip-rtp-g711.pcap: two INVITE calls from 10.0.2.20, both
// answered 200, one PCMU and one PCMA stream) and codec-negotiation.pcap
// (one call, two PCMU and two G722 stream records):
//
//	count: 2 dialogs over a sample of 2; asr: 2 answered of 2 seizures,
//	100 %; lint_errors: none at error; at info, the two answers each
//	carry an extra format (SDP-3264-6.1-ANSWER-EXTRA-FORMAT); mos: G.711
//	with no loss scores 4.36 (4.358); G722's Ie is a placeholder, so its
//	4.22 is ungrounded and left out unless grounded_only is false.
func TestEvaluateExpectationsMeasuresEachMetric(t *testing.T) {
	sample := load(t, "sip-rtp-g711.pcap")
	codecs := load(t, "codec-negotiation.pcap")
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name string
		c    *engine.Capture
		rule string
		want eeWant
	}{
		{"count of every dialog", sample, `{"metric":"count","op":">=","value":2}`, eeWant{"pass", f(2), 2, "dialogs"}},
		{"count in a filter scope", sample, `{"metric":"count","op":"==","value":0,"scope":"filter:state == Failed"}`, eeWant{"pass", f(0), 2, "dialogs"}},
		{"count over an alias", sample, `{"metric":"count","op":"<","value":1,"scope":"filter:problems"}`, eeWant{"pass", f(0), 2, "dialogs"}},
		{"asr in percent over seizures", sample, `{"metric":"asr","op":">=","value":100}`, eeWant{"pass", f(100), 2, "percent"}},
		{"asr that does not hold", sample, `{"metric":"asr","op":"<","value":50}`, eeWant{"fail", f(100), 2, "percent"}},
		{"lint errors", sample, `{"metric":"lint_errors","op":"==","value":0}`, eeWant{"pass", f(0), 2, "findings"}},
		{"lint findings at info and above", sample, `{"metric":"lint_errors","op":"==","value":0,"scope":"severity:info"}`, eeWant{"fail", f(2), 2, "findings"}},
		{"worst stream", sample, `{"metric":"mos_p0","op":">=","value":4.3}`, eeWant{"pass", f(4.36), 2, "mos"}},
		{"grounded only by default", codecs, `{"metric":"mos_p0","op":"==","value":4.36}`, eeWant{"pass", f(4.36), 2, "mos"}},
		{"ungrounded when asked", codecs, `{"metric":"mos_p0","op":"==","value":4.22,"grounded_only":false}`, eeWant{"pass", f(4.22), 4, "mos"}},
		{"nearest-rank median", codecs, `{"metric":"mos_p50","op":"!=","value":4.22,"grounded_only":false}`, eeWant{"fail", f(4.22), 4, "mos"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got eeAnswer
			call(t, tc.c, "evaluate_expectations", `{"rules":[`+tc.rule+`]}`, &got)
			r := got.Results[0]
			if r.Verdict != tc.want.verdict || r.Sample != tc.want.sample || r.Unit != tc.want.unit ||
				(r.Observed == nil) != (tc.want.observed == nil) || r.Observed != nil && *r.Observed != *tc.want.observed {
				t.Errorf("got %+v (observed %v), want %+v (observed %v)", r, deref(r.Observed), tc.want, deref(tc.want.observed))
			}
			wantExit := map[string]int{"pass": 0, "fail": 1}[tc.want.verdict]
			if got.Verdict != tc.want.verdict || got.ExitCode != wantExit || !got.Complete {
				t.Errorf("suite %s exit %d complete %v", got.Verdict, got.ExitCode, got.Complete)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestEvaluateExpectationsEmptyPopulation: on a capture holding nothing,
// count == 0 does not pass (the verdict tests the sample): it fails as
// unevaluable; min_sample >= 1 skips it instead, and a suite whose every
// rule skipped is not_evaluated with exit code 2.
func TestEvaluateExpectationsEmptyPopulation(t *testing.T) {
	empty := engine.New(engine.Config{Node: "test"}, nil)
	var got eeAnswer
	call(t, empty, "evaluate_expectations", `{"rules":[{"metric":"count","op":"==","value":0}]}`, &got)
	if got.Verdict != "fail" || got.ExitCode != 1 || got.Results[0].Observed != nil || !strings.HasPrefix(got.Results[0].Reason, "unevaluable:") {
		t.Errorf("got %+v", got)
	}
	call(t, empty, "evaluate_expectations", `{"rules":[{"metric":"count","op":"==","value":0,"min_sample":1},{"metric":"mos_p10","op":">","value":3,"min_sample":5}]}`, &got)
	if got.Verdict != "not_evaluated" || got.ExitCode != 2 || got.Skipped != 2 || got.Evaluated != 0 {
		t.Errorf("got %+v", got)
	}
	// A sample under min_sample skips; a passing rule beside it passes
	// the suite.
	call(t, load(t, "sip-rtp-g711.pcap"), "evaluate_expectations",
		`{"rules":[{"metric":"asr","op":">=","value":50,"min_sample":10},{"metric":"count","op":">=","value":1}]}`, &got)
	if got.Verdict != "pass" || got.Skipped != 1 || got.Passed != 1 || got.Results[0].Verdict != "skipped" || got.Results[0].Sample != 2 {
		t.Errorf("got %+v", got)
	}
	// Only ungrounded streams (sip-rtp-g722.pcap: G722, whose Ie is a
	// placeholder): a MOS gate fails as unevaluable instead of passing on
	// placeholders, and counts what it left out.
	call(t, load(t, "sip-rtp-g722.pcap"), "evaluate_expectations", `{"rules":[{"metric":"mos_p0","op":">=","value":4}]}`, &got)
	r := got.Results[0]
	if got.Verdict != "fail" || r.Observed != nil || r.Sample != 0 || r.UngroundedExcluded == nil || *r.UngroundedExcluded == 0 ||
		!strings.HasPrefix(r.Reason, "unevaluable:") || !strings.Contains(r.Reason, "ungrounded") {
		t.Errorf("g722 only: %+v", r)
	}
}

// TestEvaluateExpectationsTOML: the bytes of a sipnab.expect.toml judge
// what the inline rules judge.
func TestEvaluateExpectationsTOML(t *testing.T) {
	toml := `# CI gate
[[rule]]
name = "calls connect"
metric = "asr"
op = ">="
value = 60

[[rule]]
name = "no lint errors"
metric = "lint_errors"
op = "=="
value = 0
min_sample = 1
`
	var got eeAnswer
	args, _ := json.Marshal(map[string]any{"rules_toml": toml})
	call(t, load(t, "sip-rtp-g711.pcap"), "evaluate_expectations", string(args), &got)
	if got.Verdict != "pass" || got.RulesTotal != 2 || got.Passed != 2 || got.Results[0].Name != "calls connect" || got.Results[1].Name != "no lint errors" {
		t.Errorf("got %+v", got)
	}
}

// TestEvaluateExpectationsSuppression: a suppression list inside the file
// root withholds the findings of the rules it names, counted in
// suppressions_applied, as lint_dialog and --lint-fail-on apply it.
func TestEvaluateExpectationsSuppression(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "ci.sipnablint"), []byte("SDP-3264-6.1-ANSWER-EXTRA-FORMAT # offered extras are fine here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := load(t, "sip-rtp-g711.pcap")
	tl := tools(t, c, root)["evaluate_expectations"]
	r, err := tl.Invoke(context.Background(), json.RawMessage(`{"rules":[{"metric":"lint_errors","op":"==","value":0,"scope":"severity:info"}],"suppression_file":"ci.sipnablint"}`), sdk.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var got eeAnswer
	if err := json.Unmarshal([]byte(r.Blocks[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.Verdict != "pass" || got.SuppressionsApplied != 2 || got.SuppressionFile == nil || *got.SuppressionFile != "ci.sipnablint" || *got.Results[0].Observed != 0 {
		t.Errorf("got %+v", got)
	}
	// Without --mcp-file-root the named file is refused.
	e := callErr(t, c, "evaluate_expectations", `{"rules":[{"metric":"count","op":">","value":0}],"suppression_file":"ci.sipnablint"}`)
	if e.Code != sdk.CodeInvalidParams || e.StableKind() != sdk.KindNotEnabled {
		t.Errorf("no file root: %d %s", e.Code, e.StableKind())
	}
}

// TestEvaluateExpectationsRuleDefects: a rule the suite cannot judge is
// refused (-32602) naming its index, never evaluated to pass or fail.
func TestEvaluateExpectationsRuleDefects(t *testing.T) {
	c := load(t, "sip-rtp-g711.pcap")
	ok := `{"metric":"count","op":">=","value":1}`
	for _, tc := range []struct{ name, args, says string }{
		{"both suites", `{"rules":[` + ok + `],"rules_toml":"[[rule]]"}`, "not both"},
		{"neither suite", `{}`, "give rules or rules_toml"},
		{"an empty suite", `{"rules":[]}`, "give rules or rules_toml"},
		{"an empty TOML suite", `{"rules_toml":"# nothing\n"}`, "no rules"},
		{"unknown metric", `{"rules":[` + ok + `,{"metric":"mos","op":">","value":1}]}`, "rule 1: unknown metric"},
		{"percentile over 100", `{"rules":[{"metric":"mos_p101","op":">","value":1}]}`, "rule 0: metric \"mos_p101\": percentile 101 is over 100"},
		{"bad percentile", `{"rules":[{"metric":"mos_pX","op":">","value":1}]}`, "rule 0: metric"},
		{"severity scope on count", `{"rules":[{"metric":"count","op":">","value":1,"scope":"severity:error"}]}`, "rule 0: scope severity: applies to lint_errors only"},
		{"unknown severity", `{"rules":[{"metric":"lint_errors","op":">","value":1,"scope":"severity:fatal"}]}`, "rule 0: scope \"severity:fatal\": unknown severity"},
		{"bad scope kind", `{"rules":[{"metric":"count","op":">","value":1,"scope":"dialogs:all"}]}`, "rule 0: scope"},
		{"bad filter", `{"rules":[` + ok + `,` + ok + `,{"metric":"count","op":">","value":1,"scope":"filter:state =="}]}`, "rule 2: scope filter:"},
		{"grounded_only on asr", `{"rules":[{"metric":"asr","op":">","value":1,"grounded_only":true}]}`, "rule 0: grounded_only applies to mos_p<N> only"},
		{"unknown TOML key", `{"rules_toml":"[[rule]]\nmetric = \"count\"\nop = \">\"\nvalue = 1\nmin_samples = 3\n"}`, "unknown key"},
		{"TOML value missing", `{"rules_toml":"[[rule]]\nmetric = \"count\"\nop = \">\"\n"}`, "rule 0: value is missing"},
		{"TOML that does not parse", `{"rules_toml":"[[rule]\nmetric = \"count\"\n"}`, "rules_toml line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := callErr(t, c, "evaluate_expectations", tc.args)
			if e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tc.says) {
				t.Errorf("got %d %q, want -32602 saying %q", e.Code, e.Message, tc.says)
			}
		})
	}
}
