package tests

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/heptest"
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

// TestLiveMessagesAreWrittenAsTheRunReads: with a HEP listener (a source
// with no end of its own), --json and the per-message text write a
// message while the run is still reading, within a poll (250 ms) of its
// arrival, not when it stops; the stop then adds the run line (a HEP run
// is never complete) and exits 0 (stopped on request).
func TestLiveMessagesAreWrittenAsTheRunReads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, output, line, end string
	}{
		{"json", "--json", `"call_id":"doc-hep-1@example.net"`, `{"sipnab_run":`},
		{"text", "", "192.0.2.1:5060 -> 192.0.2.2:5060 UDP INVITE doc-hep-1@example.net", "INCOMPLETE RUN: stopped_on_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// -L binds UDP and TCP on the port: free for both.
			addr := heptest.FreeAddr(t)
			_, port, _ := net.SplitHostPort(addr)
			args := []string{"-N", "-L", addr}
			if tc.output != "" {
				args = append(args, tc.output)
			}
			cmd := exec.Command(bin, args...)
			stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
			cmd.Stdout, cmd.Stderr = stdout, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }()
			waitFor := func(what string, b *lockedBuffer, s string) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if strings.Contains(b.String(), s) {
						return
					}
				}
				t.Fatalf("%s lacks %q after 10 s: %q; stderr %s", what, s, b.String(), stderr.String())
			}
			waitFor("stderr", stderr, "receiving HEP")
			sendHEP(t, port)
			waitFor("stdout while the run reads", stdout, tc.line)
			if strings.Contains(stdout.String(), tc.end) {
				t.Fatalf("the closing line came before the stop: %q", stdout.String())
			}
			_ = cmd.Process.Signal(os.Interrupt)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit: %v; stderr %s", err, stderr.String())
			}
			out := stdout.String()
			if strings.Count(out, "doc-hep-1@example.net") != 1 || !strings.Contains(out, tc.end) {
				t.Fatalf("after the stop: %q, want the message once and %q", out, tc.end)
			}
		})
	}
}

// TestJSONAnalyzeIsTheCaptureReportTheMCPToolAnswers: --json-analyze and
// get_capture_report (format json) run the same analysis: on captures
// with findings of several kinds, both list the same findings in the same
// order with the same rule, severity, occurrences, evidence Call-IDs and
// omitted count, and the same frames_read and complete. (The tool fences
// sender-written notes; the batch document escapes them instead: notes
// are not compared.)
func TestJSONAnalyzeIsTheCaptureReportTheMCPToolAnswers(t *testing.T) {
	t.Parallel()
	type finding struct {
		Kind, Rule, Severity string
		Occurrences          float64
		Omitted              float64
		CallIDs              []string
	}
	project := func(doc map[string]any) (out []finding) {
		fs, _ := doc["findings"].([]any)
		for _, x := range fs {
			f := x.(map[string]any)
			p := finding{Kind: f["kind"].(string), Rule: f["rule"].(string), Severity: f["severity"].(string),
				Occurrences: f["occurrences"].(float64), Omitted: f["evidence_omitted"].(float64)}
			ev, _ := f["evidence"].([]any)
			for _, e := range ev {
				id, _ := e.(map[string]any)["call_id"].(string)
				p.CallIDs = append(p.CallIDs, id)
			}
			out = append(out, p)
		}
		return out
	}
	for _, name := range []string{"sip-routing-error.pcapng", "b2bua-asterisk.pcapng", "Asterisk_ZFONE_XLITE.pcap", "SIP_DTMF2.cap"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := testcap.Public(name)
			out, err := exec.Command(bin, "-N", "-I", path, "--json-analyze").Output()
			if err != nil {
				t.Fatal(err)
			}
			var batch map[string]any
			if err := json.Unmarshal(out, &batch); err != nil {
				t.Fatal(err)
			}
			s := startRaw(t, "-N", "--mcp", "-I", path)
			s.waitLoaded()
			tool, _ := s.ok("get_capture_report", nil)
			a, b := project(batch), project(tool)
			if len(a) == 0 {
				t.Fatalf("--json-analyze found nothing in %s: compare a capture with findings", name)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("--json-analyze findings\n%+v\nget_capture_report\n%+v", a, b)
			}
			for _, k := range []string{"frames_read", "complete", "dialogs_examined", "streams_examined", "clean"} {
				if batch[k] != tool[k] {
					t.Errorf("%s: --json-analyze %v, get_capture_report %v", k, batch[k], tool[k])
				}
			}
		})
	}
}
