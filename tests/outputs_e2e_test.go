package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestBatchOutputsExitCodes: the batch outputs of docs/cli-output.md
// through the built binary, with their exit codes (engine.md §19: 0
// success, 1 partial input, 2 usage, 3 lint gate). DTMFsipinfo.pcap holds
// two SDP-3264-6-ANSWER-MEDIA-COUNT-MISMATCH errors and nine warnings in
// one dialog (lint_dialog's answer); sip_call.pcap lints clean.
func TestBatchOutputsExitCodes(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	data, err := os.ReadFile(testcap.Public("DTMFsipinfo.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	truncated := writeFile(t, dir, "dtmf-truncated.pcap", string(data[:len(data)*3/4+5]))
	dtmf, clean := testcap.Public("DTMFsipinfo.pcap"), testcap.Public("sip_call.pcap")
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		stdout   string
		stderr   string
	}{
		{"lint gate trips on errors with exit 3", []string{"-N", "-I", dtmf, "--json-dialogs", "--lint-fail-on", "error"}, 3,
			`"call_id":"2091060b-146f-e011-809a-0019cb53db77@admind-desktop"`, "2 findings in 1 dialogs (error 2, warning 0"},
		{"lint gate counts warnings at warning", []string{"-N", "-I", dtmf, "--json", "--lint-fail-on", "warning"}, 3,
			`"method":"INFO"`, "11 findings in 1 dialogs (error 2, warning 9"},
		{"lint gate passes a clean capture", []string{"-N", "-I", clean, "--lint-fail-on", "info"}, 0,
			"UDP BYE", "lint gate passed: no finding at or above info (1 dialogs"},
		{"partial input exits 1 whatever the lint gate found", []string{"-N", "-I", truncated, "--json-dialogs", "--lint-fail-on", "error"}, 1,
			`"sipnab_run":`, ""},
		{"unknown lint severity is a usage error", []string{"-N", "-I", clean, "--lint-fail-on", "fatal"}, 2,
			"", `--lint-fail-on "fatal": want one of info, notice, warning, error`},
		{"text option with a JSON output is a usage error", []string{"-N", "-I", clean, "--json", "--hexdump"}, 2,
			"", "--hexdump goes with the per-message text"},
		{"filter with --report is a usage error", []string{"-N", "-I", clean, "--report", "--calls-only"}, 2,
			"", "--calls-only selects dialogs"},
		{"bad filter is a usage error", []string{"-N", "-I", clean, "--json", "--filter", "nosuchfield == 1"}, 2,
			"", "--filter:"},
		{"two outputs are a usage error", []string{"-N", "-I", clean, "--json", "--analyze"}, 2,
			"", "give one output, not --json and --analyze"},
		{"a batch output with stdio MCP is refused", []string{"-N", "--mcp", "--json-dialogs"}, 2,
			"", "--json-dialogs writes to stdout"},
		{"analyze names the finding", []string{"-N", "-I", testcap.Public("sip-routing-error.pcapng"), "--analyze"}, 0,
			"[medium] final_failure: 16 dialogs", ""},
		{"json-analyze is one document", []string{"-N", "-I", clean, "--json-analyze"}, 0,
			`"clean": true`, ""},
		{"color always colors the method", []string{"-N", "-I", clean, "--color", "always"}, 0,
			"UDP \x1b[36mINVITE\x1b[0m test-call-1@10.0.0.1", ""},
		{"lint gate does not combine with one call's report", []string{"-N", "-I", clean, "--call-report", "x", "--lint-fail-on", "error"}, 2,
			"", "--lint-fail-on gates a whole capture"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tc.args...)
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			_ = cmd.Run()
			if got := cmd.ProcessState.ExitCode(); got != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr %s", got, tc.wantCode, errb.String())
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout lacks %q: %.300s", tc.stdout, out.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr lacks %q: %s", tc.stderr, errb.String())
			}
			if !slices.Contains(tc.args, "always") && strings.Contains(out.String(), "\x1b") {
				t.Errorf("stdout is a pipe, yet holds an escape: %q", out.String())
			}
		})
	}
}

// TestLintGateHonoursSuppressionBesideTheCapture: a .sipnablint beside the
// capture (inside a project: a .git directory above it) suppresses the
// rule, and the gate passes, naming the file and the count suppressed.
func TestLintGateHonoursSuppressionBesideTheCapture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(testcap.Public("DTMFsipinfo.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	capPath := writeFile(t, dir, "dtmf.pcap", string(data))
	writeFile(t, dir, ".sipnablint", "SDP-3264-6-ANSWER-MEDIA-COUNT-MISMATCH\n")
	cmd := exec.Command(bin, "-N", "-I", capPath, "--json-dialogs", "--lint-fail-on", "error")
	var errb strings.Builder
	cmd.Stderr = &errb
	_ = cmd.Run()
	if got := cmd.ProcessState.ExitCode(); got != 0 {
		t.Fatalf("exit %d, want 0; stderr %s", got, errb.String())
	}
	if want := "2 suppressed by " + filepath.Join(dir, ".sipnablint"); !strings.Contains(errb.String(), want) {
		t.Fatalf("stderr lacks %q: %s", want, errb.String())
	}
}
