package security

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/sdk"
)

// invokeCapped calls a tool under a small --mcp-max-response-bytes.
func invokeCapped(t *testing.T, tl sdk.Tool, args string, maxBytes int, into any) {
	t.Helper()
	lim := sdk.DefaultLimits()
	lim.MaxResponseBytes = maxBytes
	r, err := tl.Invoke(context.Background(), json.RawMessage(args), lim)
	if err != nil {
		t.Fatalf("%s %s: %v", tl.Name, args, err)
	}
	if len(r.Blocks[0]) > maxBytes {
		t.Errorf("%s: %d bytes over the %d cap", tl.Name, len(r.Blocks[0]), maxBytes)
	}
	if err := json.Unmarshal([]byte(r.Blocks[0]), into); err != nil {
		t.Fatal(err)
	}
}

// TestAnswersFitTheResponseCeiling: under a small response ceiling each
// tool keeps what fits and says what it left out, while its counts still
// cover every match: describe_endpoint's 9 dialogs of 172.16.98.145
// (b2bua-asterisk.pcapng) stay counted with fewer recent_dialogs and
// truncated true; top_talkers keeps its busiest rows, truncated true;
// evaluate_expectations judges all 40 rules and cuts only results.
func TestAnswersFitTheResponseCeiling(t *testing.T) {
	c := load(t, "b2bua-asterisk.pcapng")
	ts := tools(t, c, "")

	var de deAnswer
	invokeCapped(t, ts["describe_endpoint"], `{"ip":"172.16.98.145"}`, 7000, &de)
	if de.Dialogs != 9 || len(de.RecentDialogs) == 0 || len(de.RecentDialogs) >= 9 || !de.Truncated {
		t.Errorf("describe_endpoint: dialogs %d, %d recent, truncated %v", de.Dialogs, len(de.RecentDialogs), de.Truncated)
	}

	var tt ttAnswer
	invokeCapped(t, ts["top_talkers"], `{"by":"ip"}`, 1300, &tt)
	if tt.DistinctTalkers != 4 || tt.Returned == 0 || tt.Returned >= 4 || tt.Truncated == nil || !*tt.Truncated || tt.Talkers[0].Key != "172.16.98.101" {
		t.Errorf("top_talkers: %+v", tt)
	}

	rules := make([]string, 40)
	for i := range rules {
		rules[i] = `{"metric":"count","op":">=","value":1}`
	}
	var ev struct {
		eeAnswer
		ResultsOmitted int `json:"results_omitted"`
	}
	invokeCapped(t, ts["evaluate_expectations"], `{"rules":[`+strings.Join(rules, ",")+`]}`, 4000, &ev)
	if ev.RulesTotal != 40 || ev.Passed != 40 || ev.Verdict != "pass" || ev.ResultsOmitted == 0 || len(ev.Results)+ev.ResultsOmitted != 40 {
		t.Errorf("evaluate_expectations: total %d passed %d, %d results + %d omitted", ev.RulesTotal, ev.Passed, len(ev.Results), ev.ResultsOmitted)
	}
}
