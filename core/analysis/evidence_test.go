package analysis_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/internal/testcap"
)

// TestClauseConstruction: a clause names a registered rule and carries
// every input the rule declares; the verdict is built from sound problem
// clauses only, so a verdict other than none without evidence cannot be
// made.
func TestClauseConstruction(t *testing.T) {
	tests := []struct {
		name    string
		rule    string
		values  map[string]float64
		wantErr string
	}{
		{"unknown rule refused", "media_problem", map[string]float64{"x": 1}, `unknown rule "media_problem"`},
		{"no values refused", "high_loss", nil, "loss_pct, expected not measured"},
		{"one input missing refused", "high_jitter", map[string]float64{"jitter_ms": 80}, "packets not measured"},
		{"no RTP in the capture refused", "no_media", map[string]float64{"rtp_streams": 0, "capture_rtp_packets": 0}, "the capture holds no RTP at all"},
		{"measured inputs accepted", "high_loss", map[string]float64{"loss_pct": 7.5, "expected": 200}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := analysis.NewClause(tc.rule, tc.values)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got %v, want a clause", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			case tc.wantErr == "" && (c.Rule != tc.rule || c.Valid() != nil):
				t.Fatalf("got %+v", c)
			}
		})
	}
}

func TestVerdictOfClauses(t *testing.T) {
	loss, _ := analysis.NewClause("high_loss", map[string]float64{"loss_pct": 7.5, "expected": 200})
	ff, _ := analysis.NewClause("final_failure", map[string]float64{"code": 486})
	orphan, _ := analysis.NewClause("orphaned_media", map[string]float64{"packets": 10})
	tests := []struct {
		name string
		cs   []analysis.Clause
		want string
	}{
		{"no clause is none", nil, "none"},
		{"a clause built by hand without its inputs is none", []analysis.Clause{{Rule: "high_loss"}}, "none"},
		{"a clause of an unknown rule is none", []analysis.Clause{{Rule: "media_problem", Values: map[string]float64{"x": 1}}}, "none"},
		{"an observation is none", []analysis.Clause{orphan}, "none"},
		{"media", []analysis.Clause{loss}, "media"},
		{"signaling", []analysis.Clause{ff}, "signaling"},
		{"both", []analysis.Clause{ff, loss}, "both"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := analysis.VerdictOf(tc.cs); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRulesDocumented: every registered rule has a family, inputs and a
// line of documentation.
func TestRulesDocumented(t *testing.T) {
	for _, r := range analysis.Rules() {
		if r.Family == "" || len(r.Inputs) == 0 || r.Doc == "" {
			t.Errorf("%s: got %+v", r.ID, r)
		}
	}
}

// TestRulesTableInDocs: docs/bundles/core.md lists every registered rule,
// its half and inputs, and no other.
func TestRulesTableInDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testcap.Root(), "docs", "bundles", "core.md"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range analysis.Rules() {
		want = append(want, fmt.Sprintf("| `%s` | %s | %s | %s |", r.ID, r.Family, strings.Join(r.Inputs, ", "), r.Doc))
	}
	_, sec, _ := strings.Cut(string(b), "## Evidence\n")
	sec, _, _ = strings.Cut(sec, "\n## ")
	var got []string
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(l, "| `") && strings.Count(l, " | ") == 3 {
			got = append(got, l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/bundles/core.md rules table:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCaptureFindingsNameRegisteredRules: every capture-level finding
// (what was not read, orphaned media, malformed RTCP) names a registered
// rule whose inputs its row measures.
func TestCaptureFindingsNameRegisteredRules(t *testing.T) {
	st, facts := load(t, "Asterisk_ZFONE_XLITE.pcap")
	cf := analysis.CaptureFacts{
		SourceExhausted: true, DialogsEvicted: 2, MessagesDropped: 3,
		Undecodable: map[string]uint64{"truncated": 4}, PortGatedSIP: map[string]uint64{"5080": 5},
		SIPMalformed: 1, MalformedExamples: []analysis.MalformedExample{{CallID: "x", Frame: "f#1", Reasons: []string{"junk before the start line"}}},
	}
	r := analysis.CaptureReport(facts, st, cf, analysis.Options{})
	if len(r.Findings) < 8 {
		t.Fatalf("got %d findings, want the capture's and the shed ones", len(r.Findings))
	}
	// sip-sdp-example.pcap holds no RTP: media_not_captured.
	st2, facts2 := load(t, "sip-sdp-example.pcap")
	r2 := analysis.CaptureReport(facts2, st2, analysis.CaptureFacts{SourceExhausted: true}, analysis.Options{})
	kinds := map[string]bool{}
	for _, f := range append(r.Findings, r2.Findings...) {
		kinds[f.Kind] = true
	}
	if !kinds["malformed_sip"] || !kinds["media_not_captured"] {
		t.Fatalf("want malformed_sip and media_not_captured among %v", kinds)
	}
	for _, f := range append(r.Findings, r2.Findings...) {
		ri, ok := analysis.LookupRule(f.Rule)
		if !ok {
			t.Errorf("%s: rule %q is not registered", f.Kind, f.Rule)
			continue
		}
		for _, e := range f.Evidence {
			if ri.Family != analysis.FamilyCapture {
				break
			}
			for _, in := range ri.Inputs {
				if _, ok := e.Counts[in]; !ok {
					t.Errorf("%s: row %+v lacks %s", f.Kind, e, in)
				}
			}
		}
	}
}
