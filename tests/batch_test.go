package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestBatchCLI checks the README's batch commands and the exit codes:
// 0 success, 1 runtime failure or partial input, 2 usage error.
func TestBatchCLI(t *testing.T) {
	dir := sharedDir(t)
	data, err := os.ReadFile(sampleCapture())
	if err != nil {
		t.Fatal(err)
	}
	truncated := writeFile(t, dir, "truncated.pcap", string(data[:len(data)/2+7]))
	twoDir := filepath.Join(dir, "set")
	_ = os.Mkdir(twoDir, 0o755)
	writeFile(t, twoDir, "a.pcap", string(data))

	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		stdout   string // substring of stdout
		stderr   string // substring of stderr
	}{
		{"report", []string{"-N", "-I", sampleCapture(), "--report"}, 0, "sip-rtp-g711.pcap", ""},
		{"json", []string{"-N", "-I", sampleCapture(), "--json-run"}, 0, `"schema_version"`, ""},
		{"directory input", []string{"-N", "-I", twoDir, "--json-run"}, 0, `"a.pcap"`, ""},
		{"truncated file is partial input", []string{"-N", "-I", truncated, "--json-run"}, 1, `"source_stopped_early": true`, ""},
		{"not a capture", []string{"-N", "-I", testcap.Public("c07-sip-r2.cap"), "--json-run"}, 1, "", "NetMon"},
		{"missing file", []string{"-N", "-I", filepath.Join(dir, "nope.pcap"), "--json-run"}, 1, "", "nope.pcap"},
		{"no output chosen writes the per-message text", []string{"-N", "-I", sampleCapture()}, 0, "UDP INVITE", ""},
		{"both outputs", []string{"-N", "-I", sampleCapture(), "--json-run", "--report"}, 2, "", "give one output, not --json-run and --report"},
		{"no input", []string{"-N", "--json-run"}, 2, "", "no input"},
		{"no -N", []string{"-I", sampleCapture(), "--json-run"}, 2, "", "-N"},
		{"unknown flag", []string{"-N", "--frobnicate"}, 2, "", "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "not a capture") {
				if _, err := os.Stat(testcap.Public("c07-sip-r2.cap")); err != nil {
					t.Fatalf("public capture c07-sip-r2.cap: %v", err)
				}
			}
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
			if strings.Contains(strings.Join(tc.args, " "), "--json-run") && tc.wantCode != 2 && out.Len() > 0 {
				var v map[string]any
				if err := json.Unmarshal([]byte(out.String()), &v); err != nil {
					t.Errorf("--json-run output is not one JSON document: %v", err)
				}
			}
		})
	}
}
