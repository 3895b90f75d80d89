package captures

import (
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sipnab/sipnab/sdk"
)

// cpFindingTools provisions the bundle with save_findings enabled and a
// budget of max, logging to l.
func cpFindingTools(t *testing.T, l *cpLog, max int) map[string]sdk.Tool {
	t.Helper()
	return cpTools(t, cpLoad(t, sampleCapture), "", sdk.EnvOptions{
		Logger: cpLogger(l), Options: map[string]bool{OptSaveFindings: true}, Limits: sdk.Limits{MaxFindings: max},
	})
}

// cpLogged decodes the findings logged as finding=<JSON> (slog's text
// handler quotes the value).
func cpLogged(t *testing.T, l *cpLog) []findingRecord {
	t.Helper()
	var out []findingRecord
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		m := regexp.MustCompile(`finding="((?:[^"\\]|\\.)*)"`).FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var s string
		if err := json.Unmarshal([]byte(`"`+m[1]+`"`), &s); err != nil {
			t.Fatal(err)
		}
		var r findingRecord
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, r)
	}
	return out
}

// TestSaveFindingsRecordsInTheLog: a finding goes to the bundle's log as one
// line holding one ASCII JSON object (a newline, an escape sequence and a
// bidi override in the summary are \u escapes, never raw), numbered, with
// the capture's identity; the answer counts what was submitted and never
// echoes it, and says it cannot be read back.
func TestSaveFindingsRecordsInTheLog(t *testing.T) {
	var l cpLog
	tools := cpFindingTools(t, &l, 3)
	summary := "one-way audio on 1-1966\n\x1b[31mred\u202e"
	var got SavedFinding
	r := cpCall(t, tools["save_findings"], `{"summary":`+cpJSON(summary)+`,"call_id":"1-1966@10.0.2.20","detail":"RTP only from 10.0.2.20"}`, &got)
	if got.Seq != 1 || got.RecordedTotal != 1 || got.Remaining != 2 || got.ReadableOverMCP || got.Truncated ||
		got.SummaryCharsSubmitted != utf8.RuneCountInString(summary) || got.DetailCharsSubmitted != 23 || !strings.Contains(got.DeliveredTo, "stderr") ||
		got.CaptureIdentity.Node != "test" {
		t.Errorf("answer: %+v", got)
	}
	if strings.Contains(r.Blocks[0], "one-way") || r.Fenced {
		t.Errorf("the answer echoes the finding: %s", r.Blocks[0])
	}
	if !strings.Contains(r.Blocks[0], `"readable_over_mcp":false`) {
		t.Errorf("readable_over_mcp absent: %s", r.Blocks[0])
	}
	log := l.String()
	if strings.Count(log, "\n") != 1 || strings.ContainsAny(log, "\x1b\u202e") || !strings.Contains(log, "level=WARN") {
		t.Errorf("log: %q, want one warning line with no raw control or bidi character", log)
	}
	recs := cpLogged(t, &l)
	if len(recs) != 1 || recs[0].Summary != summary || recs[0].CallID != "1-1966@10.0.2.20" || recs[0].Seq != 1 || recs[0].WrittenAt != got.WrittenAt {
		t.Errorf("logged: %+v", recs)
	}
}

// TestSaveFindingsBudgetRefusesNeverDiscards: with --mcp-max-findings 2 the
// third finding is refused and not logged; the first two stay. A summary
// over 500 characters and a detail over 4096 are cut and say so.
func TestSaveFindingsBudgetRefusesNeverDiscards(t *testing.T) {
	var l cpLog
	tools := cpFindingTools(t, &l, 2)
	long := strings.Repeat("é", 501)
	var first SavedFinding
	cpCall(t, tools["save_findings"], `{"summary":`+cpJSON(long)+`,"detail":`+cpJSON(strings.Repeat("x", 5000))+`}`, &first)
	if !first.Truncated || first.SummaryCharsSubmitted != 501 || first.DetailCharsSubmitted != 5000 || first.Remaining != 1 {
		t.Errorf("first: %+v", first)
	}
	cpCall(t, tools["save_findings"], `{"summary":"second"}`, nil)
	e := cpRefused(t, tools["save_findings"], `{"summary":"third"}`)
	if e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, "2 of 2") || !strings.Contains(e.Message, "nothing was discarded") {
		t.Errorf("third: %+v", e)
	}
	recs := cpLogged(t, &l)
	if len(recs) != 2 || utf8.RuneCountInString(recs[0].Summary) != 500 || len(recs[0].Detail) != 4096 || !recs[0].Truncated || recs[1].Summary != "second" {
		t.Errorf("logged %d findings: %+v", len(recs), recs)
	}
}

// TestSaveFindingsGates: without --mcp-allow-save-findings it refuses
// not_enabled naming the flag; an empty summary is refused; a log that
// hides warnings would deliver nothing, so it refuses.
func TestSaveFindingsGates(t *testing.T) {
	var l cpLog
	off := cpTools(t, cpLoad(t, sampleCapture), "", sdk.EnvOptions{Logger: cpLogger(&l)})
	if e := cpRefused(t, off["save_findings"], `{"summary":"x"}`); e.Kind != sdk.KindNotEnabled || !strings.Contains(e.Message, "--mcp-allow-save-findings") {
		t.Errorf("gate off: %+v", e)
	}
	on := cpFindingTools(t, &l, 5)
	if e := cpRefused(t, on["save_findings"], `{"summary":"  "}`); e.Kind != sdk.KindInvalidArgument {
		t.Errorf("empty summary: %+v", e)
	}
	quiet := cpTools(t, cpLoad(t, sampleCapture), "", sdk.EnvOptions{
		Logger:  slog.New(slog.NewTextHandler(&l, &slog.HandlerOptions{Level: slog.LevelError})),
		Options: map[string]bool{OptSaveFindings: true},
	})
	if e := cpRefused(t, quiet["save_findings"], `{"summary":"x"}`); !strings.Contains(e.Message, "reach nobody") {
		t.Errorf("log hiding warnings: %+v", e)
	}
	if l.String() != "" {
		t.Errorf("refused findings were logged: %q", l.String())
	}
}
