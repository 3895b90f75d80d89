package tests

// sipnab -N -I FILE --call-report <Call-ID> prints the document
// render_ladder answers, byte for byte, under the same settings.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// runCLI runs the binary and returns stdout, stderr and the exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func TestCallReportIsRenderLadderE2E(t *testing.T) {
	settings := []string{"--leg-correlation-window", "0.5", "--x-call-id-header", "X-Call-ID", "--pdd-threshold", "0.742"}
	for _, tc := range []struct {
		capture string
		args    []string
	}{
		{"b2bua-asterisk.pcapng", nil},
		{"b2bua-asterisk.pcapng", settings},
		{"sip-rtp-g711.pcap", nil},
		{"sip-proxy.pcap", settings},
	} {
		t.Run(tc.capture+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			path := testcap.Public(tc.capture)
			s := startRaw(t, append([]string{"-N", "--mcp", "-I", path}, tc.args...)...)
			s.waitLoaded()
			m, _ := s.ok("list_dialogs", map[string]any{"limit": 1000, "fields": []string{"call_id"}})
			rows := m["dialogs"].([]any)
			if len(rows) == 0 {
				t.Fatal("no dialogs")
			}
			for _, r := range rows {
				id := r.(map[string]any)["call_id"].(string)
				for _, format := range []string{"text", "markdown"} {
					ladder := s.call("render_ladder", map[string]any{"call_id": id, "format": format})
					if ladder.Err != nil || len(ladder.Content) == 0 {
						t.Fatalf("render_ladder %s %s: %+v", id, format, ladder.Err)
					}
					args := append([]string{"-N", "-I", path, "--call-report", id, "--no-cli-print"}, tc.args...)
					if format == "markdown" {
						args = append(args, "--markdown")
					}
					out, stderr, code := runCLI(t, args...)
					if code != 0 || stderr != "" {
						t.Fatalf("%s %s: exit %d, stderr %q", id, format, code, stderr)
					}
					// render_ladder fences the sender's values of the report
					// above the drawing; without the markers it is the
					// --call-report document, byte for byte.
					doc := strings.ReplaceAll(strings.ReplaceAll(ladder.Content[0].Text, sdk.FenceOpen, ""), sdk.FenceClose, "")
					if out != doc {
						t.Errorf("%s %s: --call-report differs from render_ladder without its markers\n--- cli\n%s\n--- render_ladder\n%s", id, format, out, ladder.Content[0].Text)
					}
				}
			}
			// Without --no-cli-print stdout is the same document; a summary
			// goes to stderr.
			id := rows[0].(map[string]any)["call_id"].(string)
			quiet, _, _ := runCLI(t, append([]string{"-N", "-I", path, "--call-report", id, "--no-cli-print"}, tc.args...)...)
			out, stderr, code := runCLI(t, append([]string{"-N", "-I", path, "--call-report", id}, tc.args...)...)
			if code != 0 || out != quiet || !strings.Contains(stderr, "call "+id+":") || !strings.Contains(stderr, "read whole") {
				t.Errorf("with the summary: exit %d, stdout same %v, stderr %q", code, out == quiet, stderr)
			}
		})
	}
}

func TestCallReportExitCodesE2E(t *testing.T) {
	full, err := os.ReadFile(testcap.Public("sip-routing-error.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcapng")
	if err := os.WriteFile(cut, full[:len(full)*6/10+3], 0o644); err != nil {
		t.Fatal(err)
	}
	s := startRaw(t, "-N", "--mcp", "-I", cut)
	s.waitLoaded()
	m, _ := s.ok("list_dialogs", map[string]any{"fields": []string{"call_id"}})
	id := m["dialogs"].([]any)[0].(map[string]any)["call_id"].(string)
	ladder := s.call("render_ladder", map[string]any{"call_id": id, "format": "text"})

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"partial read exits 1 with the document", []string{"-N", "-I", cut, "--call-report", id}, 1, "read partially"},
		{"unknown Call-ID", []string{"-N", "-I", testcap.Public("sip_call.pcap"), "--call-report", "nobody@nowhere"}, 1, "no dialog with Call-ID"},
		{"no input", []string{"-N", "--call-report", "x"}, 2, "no input"},
		{"with --mcp", []string{"-N", "--mcp", "-I", cut, "--call-report", id}, 2, "does not combine with --mcp"},
		{"with --json-run", []string{"-N", "-I", cut, "--call-report", id, "--json-run"}, 2, "does not combine"},
		{"--markdown alone", []string{"-N", "-I", cut, "--json-run", "--markdown"}, 2, "--markdown goes with --call-report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d mentioning %q", code, stderr, tc.code, tc.stderr)
			}
			if tc.code == 1 && tc.stderr == "read partially" {
				// render_ladder fences each sender-written value; without
				// its markers it is the --call-report document.
				plain := strings.ReplaceAll(strings.ReplaceAll(ladder.Content[0].Text, sdk.FenceOpen, ""), sdk.FenceClose, "")
				if out != plain || !strings.Contains(out, "INCOMPLETE RUN") {
					t.Errorf("partial read: the document differs from render_ladder's or lacks INCOMPLETE RUN:\n%s", out)
				}
			}
		})
	}
}

// TestCoresGiveTheSameBatchOutputE2E: --cores changes how a file load is
// spread over cores, never the answer: --json-run is byte-identical with 1 and 2
// cores on a capture with RTP (but for the load's duration and the capture
// instance, which differ between any two runs), and a bad value stops
// startup.
func TestCoresGiveTheSameBatchOutputE2E(t *testing.T) {
	path := testcap.Public("sip-rtp-g711.pcap")
	perRun := regexp.MustCompile(`"(elapsed_sec|instance)":\s*("[0-9a-f]+"|[0-9.e-]+)`)
	one, _, code1 := runCLI(t, "-N", "-I", path, "--json-run", "--cores", "1")
	two, _, code2 := runCLI(t, "-N", "-I", path, "--json-run", "--cores", "2")
	one, two = perRun.ReplaceAllString(one, `"$1":-`), perRun.ReplaceAllString(two, `"$1":-`)
	if code1 != 0 || code2 != 0 || one == "" || one != two {
		t.Errorf("--cores 1 and 2: exit %d and %d, same output %v", code1, code2, one == two)
	}
	if _, stderr, code := runCLI(t, "-N", "-I", path, "--json-run", "--cores", "0"); code != 2 || !strings.Contains(stderr, "--cores 0") {
		t.Errorf("--cores 0: exit %d, stderr %q", code, stderr)
	}
}
