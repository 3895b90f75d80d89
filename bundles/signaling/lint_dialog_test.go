package signaling

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/bundles/internal/tooltest"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// The one dialog of DTMFsipinfo.pcap. Its findings were checked by hand with
// tshark 4.0 (message index = frame number - 1):
//   - Session-Expires: 60 in frames 4, 10, 14 (200 OK) and 21, 25 (INVITE)
//     `tshark -Y sip.Session-Expires`: SIP-4028-4 ×5 (warning)
//   - Min-SE: 5 in frames 21 and 25: SIP-4028-5 ×2 (warning)
//   - ACKs 24 and 28 with top Via branch=0: SIP-3261-8.1.1.7 ×2 (warning)
//   - 200 OKs 23 and 27 answer a 2-m-line offer (audio + declined video) with
//     one m= line: SDP-3264-6 ×2 (error)
const (
	dtmfCapture = "DTMFsipinfo.pcap"
	dtmfCallID  = "2091060b-146f-e011-809a-0019cb53db77@admind-desktop"
)

// loadCapture runs a capture file through the engine to its end.
func lintLoadCapture(t *testing.T, path string) *engine.Capture {
	t.Helper()
	return testengine.Load(t, engine.Config{Node: "test"}, path)
}

// provisioned builds the bundle's tools the way the host does.
func lintProvisioned(t *testing.T, c *engine.Capture) map[string]sdk.Tool {
	t.Helper()
	return tooltest.Provision(t, Bundle{}, sdk.EnvOptions{Services: []any{c}})
}

// invoke calls a tool through the sdk's public path and decodes its answer.
func lintInvoke(t *testing.T, tool sdk.Tool, args string, into any) sdk.Reply {
	t.Helper()
	return tooltest.Call(t, tool, args, into)
}

// invokeErr calls a tool that must fail and returns its error.
func lintInvokeErr(t *testing.T, tool sdk.Tool, args string) *sdk.Error {
	t.Helper()
	return tooltest.CallErr(t, tool, args)
}

func lintCountRules(fs []FindingOut) map[string]int {
	out := map[string]int{}
	for _, f := range fs {
		out[f.RuleID]++
	}
	return out
}

func TestLintDialogOnDTMFsipinfo(t *testing.T) {
	c := lintLoadCapture(t, testcap.Public(dtmfCapture))
	tools := lintProvisioned(t, c)
	var a LintAnswer
	r := lintInvoke(t, tools["lint_dialog"], `{"call_id":"`+dtmfCallID+`"}`, &a)

	want := map[string]int{
		"SIP-4028-4-SESSION-EXPIRES-TOO-SMALL":   5,
		"SIP-4028-5-MIN-SE-TOO-SMALL":            2,
		"SIP-3261-8.1.1.7-BRANCH-COOKIE":         2,
		"SDP-3264-6-ANSWER-MEDIA-COUNT-MISMATCH": 2,
	}
	if got := lintCountRules(a.Findings); !lintEqualCounts(got, want) {
		t.Errorf("got findings %v, want %v", got, want)
	}
	for _, tc := range []struct {
		field string
		got   any
		want  any
	}{
		{"schema_version", a.SchemaVersion, 1},
		{"call_id", a.CallID, dtmfCallID},
		{"rulesets", strings.Join(a.Rulesets, ","), "all"},
		{"severity_min", a.SeverityMin, "info"},
		{"message_count", a.MessageCount, 32},
		{"rtp_streams_observed", a.RTPStreamsObserved, 0},
		{"finding_count", a.FindingCount, 11},
		{"severity_counts", a.SeverityCounts, lint.Counts{Error: 2, Warning: 9}},
		{"findings_withheld", a.FindingsWithheld, lint.Withheld{}},
		{"suppressions.file", a.Suppressions.File == nil, true},
		{"suppressions.patterns", len(a.Suppressions.Patterns), 0},
		{"rule_catalog", a.RuleCatalog, RuleCatalog{Version: lint.CatalogVersion, RuleCount: 43, Digest: lint.Digest()}},
		{"source_exhausted", a.SourceExhausted, true},
		{"first finding", a.Findings[0].RuleID + "@" + lintItoa(a.Findings[0].MessageIndex), "SIP-4028-4-SESSION-EXPIRES-TOO-SMALL@3"},
		{"first finding rfc", lintItoa(a.Findings[0].RFC) + " §" + a.Findings[0].Section, "4028 §4"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.field, tc.got, tc.want)
		}
	}
	for _, f := range a.Findings {
		if !strings.HasPrefix(f.Observed, sdk.FenceOpen) || !strings.HasSuffix(f.Observed, sdk.FenceClose) {
			t.Errorf("observed %q is not fenced", f.Observed)
		}
		if !strings.HasPrefix(f.FrameRef, dtmfCapture+"#"+lintItoa(f.MessageIndex+1)+"@") {
			t.Errorf("finding at message %d: got frame_ref %q, want frame %d of %s", f.MessageIndex, f.FrameRef, f.MessageIndex+1, dtmfCapture)
		}
	}
	if !r.Fenced {
		t.Errorf("the reply carries fenced text but does not ask for the provenance note")
	}
	// No RTP was attributed: the observation rules are listed, not silent.
	if len(a.RulesNotEvaluated) != 2 || a.RulesNotEvaluated[0].Reason != lint.ReasonNoRTP ||
		len(a.RulesNotEvaluated[0].RuleIDs) != 7 || a.RulesNotEvaluated[1].RuleIDs[0] != "OBS-5761-5.1.1-RTCP-MUX-UNANSWERED" {
		t.Errorf("got rules_not_evaluated %+v, want the 7 RTP rules and the RTCP-mux rule", a.RulesNotEvaluated)
	}
	// Zeros are present, not omitted.
	for _, key := range []string{`"findings_withheld":{"suppressed":0,"below_severity":0,"capped":0}`,
		`"suppressions":{"file":null,"patterns":[],"findings_suppressed":0}`} {
		if !strings.Contains(r.Blocks[0], key) {
			t.Errorf("answer lacks %s", key)
		}
	}
}

func TestLintDialogFilters(t *testing.T) {
	c := lintLoadCapture(t, testcap.Public(dtmfCapture))
	tool := lintProvisioned(t, c)["lint_dialog"]
	cases := []struct {
		name     string
		args     string
		want     map[string]int
		withheld lint.Withheld
		rulesets string
	}{
		{"severity floor counts what it withholds", `{"call_id":"` + dtmfCallID + `","severity_min":"error"}`,
			map[string]int{"SDP-3264-6-ANSWER-MEDIA-COUNT-MISMATCH": 2}, lint.Withheld{BelowSeverity: 9}, "all"},
		{"one RFC", `{"call_id":"` + dtmfCallID + `","rulesets":["rfc4028"]}`,
			map[string]int{"SIP-4028-4-SESSION-EXPIRES-TOO-SMALL": 5, "SIP-4028-5-MIN-SE-TOO-SMALL": 2}, lint.Withheld{}, "rfc4028"},
		{"alias and union", `{"call_id":"` + dtmfCallID + `","rulesets":["observed","rfc3264"]}`,
			map[string]int{"SDP-3264-6-ANSWER-MEDIA-COUNT-MISMATCH": 2}, lint.Withheld{}, "observation,rfc3264"},
		{"syntax", `{"call_id":"` + dtmfCallID + `","rulesets":["syntax"]}`,
			map[string]int{"SIP-4028-4-SESSION-EXPIRES-TOO-SMALL": 5, "SIP-4028-5-MIN-SE-TOO-SMALL": 2, "SIP-3261-8.1.1.7-BRANCH-COOKIE": 2}, lint.Withheld{}, "syntax"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a LintAnswer
			lintInvoke(t, tool, tc.args, &a)
			if got := lintCountRules(a.Findings); !lintEqualCounts(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if a.FindingsWithheld != tc.withheld || strings.Join(a.Rulesets, ",") != tc.rulesets {
				t.Errorf("got withheld %+v rulesets %v, want %+v %s", a.FindingsWithheld, a.Rulesets, tc.withheld, tc.rulesets)
			}
		})
	}
}

func TestLintDialogRefusals(t *testing.T) {
	c := lintLoadCapture(t, testcap.Public(dtmfCapture))
	tool := lintProvisioned(t, c)["lint_dialog"]
	cases := []struct {
		name, args, want string
	}{
		{"bad ruleset", `{"call_id":"` + dtmfCallID + `","rulesets":["rfc9999"]}`, "rfc9999"},
		{"bad severity", `{"call_id":"` + dtmfCallID + `","severity_min":"fatal"}`, "fatal"},
		{"unknown call", `{"call_id":"nope@nowhere"}`, "unknown call_id"},
		{"missing call", `{}`, "call_id"},
		{"no file root", `{"call_id":"` + dtmfCallID + `","suppression_file":"lint.txt"}`, "file tools are disabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := lintInvokeErr(t, tool, tc.args)
			if e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
				t.Errorf("got %d %q, want -32602 mentioning %q", e.Code, e.Message, tc.want)
			}
		})
	}
}

// TestLintDialogSuppressionFile names a suppression list inside the file
// root (the sdk.FileRoot the host builds from --mcp-file-root).
func TestLintDialogSuppressionFile(t *testing.T) {
	c := lintLoadCapture(t, testcap.Public(dtmfCapture))
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "lint.txt"), []byte("# timers are the carrier's choice\nSIP-4028-*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "broken.txt"), []byte("sip-*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x.txt"), []byte("OBS-*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "x.txt"), filepath.Join(root, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	var tool sdk.Tool
	for _, x := range tools(&deps{capture: c, root: sdk.NewFileRoot(root, nil)}) {
		if x.Name == "lint_dialog" {
			tool = x
		}
	}
	var a LintAnswer
	lintInvoke(t, tool, `{"call_id":"`+dtmfCallID+`","suppression_file":"lint.txt"}`, &a)
	if a.Suppressions.File == nil || *a.Suppressions.File != "lint.txt" || strings.Join(a.Suppressions.Patterns, ",") != "SIP-4028-*" ||
		a.Suppressions.FindingsSuppressed != 7 || a.FindingsWithheld.Suppressed != 7 || a.FindingCount != 4 {
		t.Errorf("got suppressions %+v withheld %+v findings %d, want lint.txt suppressing 7 of 11", a.Suppressions, a.FindingsWithheld, a.FindingCount)
	}
	for _, tc := range []struct{ name, file, want string }{
		{"directory", "../lint.txt", "without a directory"},
		{"separator", "sub/lint.txt", "without a directory"},
		{"absolute", "/etc/passwd", "without a directory"},
		{"dotdot", "..", "without a directory"},
		{"missing", "none.txt", "no such file"},
		{"symlink out of the root", "escape.txt", "outside the file root"},
		{"malformed list", "broken.txt", "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := lintInvokeErr(t, tool, `{"call_id":"`+dtmfCallID+`","suppression_file":"`+tc.file+`"}`)
			if e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tc.want) || strings.Contains(e.Message, root) {
				t.Errorf("got %d %q, want -32602 mentioning %q and not the root's path", e.Code, e.Message, tc.want)
			}
		})
	}
}

// TestLintDialogDiscoversSipnablint copies a capture into a project tree:
// the .sipnablint beside it applies and is named; outside any project the
// same file is ignored.
func TestLintDialogDiscoversSipnablint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		project bool
	}{{"inside a project", true}, {"outside any project", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "proj")
			caps := filepath.Join(dir, "captures")
			if err := os.MkdirAll(caps, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.project {
				if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, ".sipnablint"), []byte("SIP-3261-8.1.1.7-BRANCH-COOKIE\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			lintCopyFile(t, testcap.Public(dtmfCapture), filepath.Join(caps, dtmfCapture))
			c := lintLoadCapture(t, filepath.Join(caps, dtmfCapture))
			var a LintAnswer
			lintInvoke(t, lintProvisioned(t, c)["lint_dialog"], `{"call_id":"`+dtmfCallID+`"}`, &a)
			if !tc.project {
				if a.Suppressions.File != nil || a.FindingsWithheld.Suppressed != 0 || a.FindingCount != 11 {
					t.Errorf("got %+v, %d findings: a capture outside any project must adopt nothing", a.Suppressions, a.FindingCount)
				}
				return
			}
			want := filepath.Join(dir, ".sipnablint")
			if a.Suppressions.File == nil || *a.Suppressions.File != want || a.Suppressions.FindingsSuppressed != 2 || a.FindingCount != 9 {
				t.Errorf("got %+v, %d findings; want %s suppressing the 2 branch findings", a.Suppressions, a.FindingCount, want)
			}
		})
	}
}

func lintCopyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLintDialogWithRTP: SIP_DTMF2.cap call 25672 is a hairpin through a
// proxy (offer in the 200, answer in the ACK) whose answerer's port
// 192.168.105.110:4374 never receives RTP while the offerer's 4376 does
// (`tshark -Y 'udp.dstport == 4374'` selects no RTP toward .110).
func TestLintDialogWithRTP(t *testing.T) {
	c := lintLoadCapture(t, testcap.Public("SIP_DTMF2.cap"))
	var callID string
	for _, id := range c.Dialogs().CallIDs() {
		if strings.HasPrefix(id, "25672@") {
			callID = id
		}
	}
	var a LintAnswer
	lintInvoke(t, lintProvisioned(t, c)["lint_dialog"], `{"call_id":"`+callID+`"}`, &a)
	if a.RTPStreamsObserved != 2 || len(a.RulesNotEvaluated) != 1 || a.RulesNotEvaluated[0].Reason != lint.ReasonRTCPPort {
		t.Errorf("got %d streams, not evaluated %+v; want 2 and only the RTCP-mux rule", a.RTPStreamsObserved, a.RulesNotEvaluated)
	}
	if got := lintCountRules(a.Findings); !lintEqualCounts(got, map[string]int{"OBS-3264-6.1-DIRECTION-UNMET": 1}) {
		t.Errorf("got %v, want one DIRECTION-UNMET", got)
	}
	if f := a.Findings[0]; f.MessageIndex != 8 || !strings.Contains(f.Observed, "none reached 192.168.105.110:4374") {
		t.Errorf("got %+v, want the ACK (message 8) and the silent port 4374", f)
	}
}

func lintEqualCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func lintItoa(n int) string { return strings.TrimSpace(lintJSONNumber(n)) }

func lintJSONNumber(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
