package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The security bundle driven over stdio through the built binary with the
// mcp-go client: top_talkers and describe_endpoint on a public capture
// (numbers hand-verified with tshark, see bundles/security's tests),
// diagnose_registration on a shortened expiry, evaluate_expectations from a
// sipnab.expect.toml's bytes with a suppression list in the file root, and
// the refusals an agent meets. With no detector armed, security_findings
// says nothing was watching and generate_fail2ban_rule's refusal ends
// "This server holds: none".
func TestSecurityE2E(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "ci.sipnablint"), []byte("SDP-3264-6.1-ANSWER-EXTRA-FORMAT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := sigSession(t, ctx, "--mcp-tools", "core,security", "--mcp-file-root", root,
		"-I", sigWritable(t, "b2bua-asterisk.pcapng"), "-I", sigWritable(t, "sip-register.pcap"))
	defer s.close()
	waitLoaded(t, ctx, s)

	names, err := s.tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"top_talkers", "describe_endpoint", "diagnose_registration", "evaluate_expectations", "security_findings", "generate_fail2ban_rule"} {
		if !containsString(names, want) {
			t.Errorf("tools/list lacks %s", want)
		}
	}

	// 13 dialogs: 12 of b2bua-asterisk.pcapng, 1 of sip-register.pcap.
	// 172.16.98.101 sent 30 SIP messages in 11 of them (tshark -Y sip -T
	// fields -e ip.src).
	var tt struct {
		Talkers []struct {
			Key      string   `json:"key"`
			Dialogs  int      `json:"dialogs"`
			Messages int      `json:"messages"`
			SharePct *float64 `json:"share_pct"`
		} `json:"talkers"`
		TotalMatched int `json:"total_matched"`
	}
	sigCall(t, ctx, s, "top_talkers", map[string]any{"by": "ip", "limit": 1}, &tt)
	if tt.TotalMatched != 13 || len(tt.Talkers) != 1 || tt.Talkers[0].Key != "172.16.98.101" || tt.Talkers[0].Dialogs != 11 ||
		tt.Talkers[0].Messages != 30 || tt.Talkers[0].SharePct == nil || *tt.Talkers[0].SharePct != 84.62 {
		t.Errorf("top_talkers: %+v", tt)
	}

	var de struct {
		Dialogs      int `json:"dialogs"`
		MessagesSent int `json:"messages_sent"`
		Registration struct {
			Applicable     bool     `json:"applicable"`
			Failed         int      `json:"failed"`
			ProblemCallIDs []string `json:"problem_call_ids"`
		} `json:"registration"`
		UserAgents []struct {
			Value string `json:"value"`
		} `json:"user_agents"`
	}
	sigCall(t, ctx, s, "describe_endpoint", map[string]any{"ip": "10.33.6.101"}, &de)
	if de.Dialogs != 1 || de.MessagesSent != 1 || !de.Registration.Applicable || de.Registration.Failed != 1 ||
		len(de.Registration.ProblemCallIDs) != 1 || len(de.UserAgents) != 1 || !strings.Contains(de.UserAgents[0].Value, "⟦untrusted-capture-data⟧GW/v.6.20A.027.012") {
		t.Fatalf("describe_endpoint: %+v", de)
	}

	var dr struct {
		RegistrationFailure struct {
			Kind               string `json:"kind"`
			RequestedExpirySec int64  `json:"requested_expiry_sec"`
			GrantedExpirySec   int64  `json:"granted_expiry_sec"`
		} `json:"registration_failure"`
	}
	sigCall(t, ctx, s, "diagnose_registration", map[string]any{"call_id": de.Registration.ProblemCallIDs[0]}, &dr)
	if f := dr.RegistrationFailure; f.Kind != "shortened_expiry" || f.RequestedExpirySec != 180 || f.GrantedExpirySec != 20 {
		t.Errorf("diagnose_registration: %+v", dr)
	}

	var ev struct {
		Verdict             string `json:"verdict"`
		ExitCode            int    `json:"exit_code"`
		SuppressionsApplied int    `json:"suppressions_applied"`
		Results             []struct {
			Verdict  string   `json:"verdict"`
			Observed *float64 `json:"observed"`
		} `json:"results"`
	}
	toml := "[[rule]]\nname = \"busy enough\"\nmetric = \"count\"\nop = \">=\"\nvalue = 13\n\n[[rule]]\nmetric = \"asr\"\nop = \">=\"\nvalue = 99\n"
	sigCall(t, ctx, s, "evaluate_expectations", map[string]any{"rules_toml": toml, "suppression_file": "ci.sipnablint"}, &ev)
	// ASR over b2bua-asterisk.pcapng's INVITEs: both answered, 100 %.
	if ev.Verdict != "pass" || ev.ExitCode != 0 || len(ev.Results) != 2 || *ev.Results[0].Observed != 13 || *ev.Results[1].Observed != 100 {
		t.Errorf("evaluate_expectations: %+v", ev)
	}

	var sf struct {
		Findings       []any    `json:"findings"`
		ArmedKinds     []string `json:"armed_kinds"`
		DetectionArmed bool     `json:"detection_armed"`
		Note           string   `json:"note"`
	}
	sigCall(t, ctx, s, "security_findings", nil, &sf)
	if len(sf.Findings) != 0 || len(sf.ArmedKinds) != 0 || sf.DetectionArmed || !strings.Contains(sf.Note, "nothing was watching") {
		t.Errorf("security_findings with nothing armed: %+v", sf)
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{"describe_endpoint", map[string]any{"ip": "10.33.6.101", "user": "201"}, "not both"},
		{"evaluate_expectations", map[string]any{"rules": []any{map[string]any{"metric": "mos_p200", "op": ">", "value": 1}}}, "rule 0"},
		{"diagnose_registration", map[string]any{"call_id": "nope"}, "unknown call_id"},
		{"generate_fail2ban_rule", map[string]any{"finding_id": "scanner_detected@10.0.0.1@2026-12-02T16:39:25Z"}, "This server holds: none"},
		{"security_findings", map[string]any{"kinds": []string{"reg-flood"}}, "did you mean reg_flood"},
	} {
		r, err := s.result(ctx, tc.tool, tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if !r.isError || len(r.texts) == 0 || !strings.Contains(r.texts[0], tc.says) {
			t.Errorf("%s %v: isError %v %v, want a refusal saying %q", tc.tool, tc.args, r.isError, r.texts, tc.says)
		}
	}
}
