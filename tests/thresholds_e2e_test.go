package tests

// The run's thresholds (--pdd-threshold and its siblings, or [analysis] in
// the config file) reach every surface through the built binary:
// find_problems compiles its kinds with them, sipnab://filter/<alias>
// shows the expansion with them, and the diagnosis judges post-dial delay
// against the same number.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// pddRows lists every dialog's Call-ID with its measured post-dial delay
// (ms), from list_dialogs.
func pddRows(t *testing.T, s *rawSession) map[string]float64 {
	t.Helper()
	m, _ := s.ok("list_dialogs", map[string]any{"limit": 1000, "fields": []string{"timing"}})
	out := map[string]float64{}
	for _, r := range m["dialogs"].([]any) {
		row := r.(map[string]any)
		timing, _ := row["timing"].(map[string]any)
		if p, ok := timing["pdd_ms"].(float64); ok {
			out[row["call_id"].(string)] = p
		}
	}
	return out
}

func problemIDs(t *testing.T, s *rawSession, kinds []string) []string {
	t.Helper()
	args := map[string]any{"limit": 1000}
	if kinds != nil {
		args["kinds"] = kinds
	}
	m, _ := s.ok("find_problems", args)
	var ids []string
	for _, r := range m["dialogs"].([]any) {
		ids = append(ids, r.(map[string]any)["call_id"].(string))
	}
	sort.Strings(ids)
	return ids
}

type aliasDoc struct {
	Alias      string `json:"alias"`
	Expression string `json:"expression"`
	Thresholds struct {
		PDDSeconds       float64 `json:"pdd_seconds"`
		ShortCallSeconds float64 `json:"short_call_seconds"`
		LossPct          float64 `json:"loss_pct"`
		JitterMs         float64 `json:"jitter_ms"`
		Retransmits      int     `json:"retransmits"`
	} `json:"thresholds"`
}

func aliasOf(t *testing.T, s *rawSession, alias string) aliasDoc {
	t.Helper()
	var d aliasDoc
	if err := json.Unmarshal([]byte(s.mustText("sipnab://filter/"+alias)), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestThresholdsFollowFlagsAndConfigE2E: on b2bua-asterisk.pcapng, whose
// two INVITE legs ring after 740 and 743 ms (the caller's leg from its
// credentialed INVITE, the 401'd one 1 ms earlier: docs/call-timing.md), a
// PDD threshold of 0.742 s
// makes exactly the slower leg slow-setup (and a problem), by flag and by
// config file; the default 11 s makes neither.
func TestThresholdsFollowFlagsAndConfigE2E(t *testing.T) {
	capture := testcap.Public("b2bua-asterisk.pcapng")
	cfgFile := filepath.Join(t.TempDir(), "sipnab.toml")
	if err := os.WriteFile(cfgFile, []byte("[analysis]\npdd_threshold = 0.742\nloss_threshold = 1.5\njitter_threshold = 20\n"+
		"retransmit_threshold = 0\nshort_call_threshold = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		pdd        float64
		problems   string // the problems alias expansion
		shortCalls string
	}{
		{"defaults", nil, 11,
			"state == Failed or one_way == true or rtp.loss > 5 or rtp.jitter > 50 or nat_mismatch == true or retransmits > 3 or pdd > 11",
			"state == Completed and duration < 3"},
		{"flags", []string{"--pdd-threshold", "0.742", "--loss-threshold", "1.5", "--jitter-threshold", "20",
			"--retransmit-threshold", "0", "--short-call-threshold", "4"}, 0.742,
			"state == Failed or one_way == true or rtp.loss > 1.5 or rtp.jitter > 20 or nat_mismatch == true or retransmits > 0 or pdd > 0.742",
			"state == Completed and duration < 4"},
		{"config file", []string{"--config", cfgFile}, 0.742,
			"state == Failed or one_way == true or rtp.loss > 1.5 or rtp.jitter > 20 or nat_mismatch == true or retransmits > 0 or pdd > 0.742",
			"state == Completed and duration < 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, append([]string{"-N", "--mcp", "-I", capture}, tc.args...)...)
			s.waitLoaded()
			pdd := pddRows(t, s)
			var wantSlow []string
			for id, ms := range pdd {
				if ms > tc.pdd*1000 {
					wantSlow = append(wantSlow, id)
				}
			}
			sort.Strings(wantSlow)
			vals := []float64{}
			for _, ms := range pdd {
				vals = append(vals, ms)
			}
			sort.Float64s(vals)
			if len(vals) != 2 || vals[0] != 740 || vals[1] != 743 {
				t.Fatalf("post-dial delays %v, want the capture's 740 and 743 ms", vals)
			}
			if tc.pdd < 1 && len(wantSlow) != 1 {
				t.Fatalf("%d legs over %v s, want exactly the 743 ms one", len(wantSlow), tc.pdd)
			}
			if got := problemIDs(t, s, []string{"slow-setup"}); strings.Join(got, ",") != strings.Join(wantSlow, ",") {
				t.Errorf("find_problems slow-setup: got %v, want %v", got, wantSlow)
			}
			problems := problemIDs(t, s, nil)
			for _, id := range wantSlow {
				if !slicesContains(problems, id) {
					t.Errorf("find_problems (problems): %s is slow setup but not listed in %v", id, problems)
				}
			}
			slow := aliasOf(t, s, "slow-setup")
			if want := "pdd > " + jsonNum(tc.pdd); slow.Expression != want {
				t.Errorf("sipnab://filter/slow-setup: got %q, want %q", slow.Expression, want)
			}
			prob := aliasOf(t, s, "problems")
			if !strings.HasPrefix(prob.Expression, tc.problems) {
				t.Errorf("sipnab://filter/problems: got %q, want it to start %q", prob.Expression, tc.problems)
			}
			if prob.Thresholds.PDDSeconds != tc.pdd {
				t.Errorf("sipnab://filter/problems thresholds: got %+v, want pdd %v", prob.Thresholds, tc.pdd)
			}
			if sc := aliasOf(t, s, "short-calls"); sc.Expression != tc.shortCalls {
				t.Errorf("sipnab://filter/short-calls: got %q, want %q", sc.Expression, tc.shortCalls)
			}
			// The diagnosis judges post-dial delay against the same number.
			rep, _ := s.ok("get_capture_report", nil)
			pddFindings := 0.0
			for _, f := range rep["findings"].([]any) {
				if f := f.(map[string]any); f["kind"] == "post_dial_delay" {
					pddFindings = f["occurrences"].(float64)
				}
			}
			if pddFindings != float64(len(wantSlow)) {
				t.Errorf("get_capture_report post_dial_delay: %v occurrences, want %d", pddFindings, len(wantSlow))
			}
			// validate_filter compiles the alias with the same numbers.
			v, _ := s.ok("validate_filter", map[string]any{"expr": "slow-setup"})
			if v["total_matched"] != float64(len(wantSlow)) {
				t.Errorf("validate_filter slow-setup: total_matched %v, want %d", v["total_matched"], len(wantSlow))
			}
		})
	}
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsonNum(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}
