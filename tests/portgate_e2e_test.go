package tests

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestPortGateThroughTheBinary runs the batch command over
// invite-opus-bye.pcap, whose seven SIP messages run between ports 5082 and
// 5080 (tshark: testdata/portgate/invite-opus-bye.pcap.tsv). With the
// default --portrange none is analysed: the document counts them under
// port 5080, holds no dialog, says incomplete (sip_not_analyzed) and the
// exit code is 0 (the file was read whole); --report prints NOT ANALYZED.
// --portrange 5080 analyses the call and the run is complete. A bad port
// list is a usage error (exit 2).
func TestPortGateThroughTheBinary(t *testing.T) {
	t.Parallel()
	capture := testcap.Public("invite-opus-bye.pcap")
	type run struct {
		Complete          bool     `json:"complete"`
		SourceExhausted   bool     `json:"source_exhausted"`
		IncompleteReasons []string `json:"incomplete_reasons"`
		SIPMessages       uint64   `json:"sip_messages"`
		NotAnalyzed       *struct {
			SIPPortRange string `json:"sip_portrange"`
			SIPMessages  uint64 `json:"sip_messages"`
			Ports        []struct {
				Port        int    `json:"port"`
				SIPMessages uint64 `json:"sip_messages"`
			} `json:"ports"`
		} `json:"not_analyzed"`
	}
	type doc struct {
		Run     run               `json:"run"`
		Dialogs []json.RawMessage `json:"dialogs"`
	}
	cases := []struct {
		name                  string
		args                  []string
		code                  int
		complete              bool
		analysed, notAnalysed uint64
		dialogs               int
	}{
		{"default ports set the call aside", nil, 0, false, 0, 7, 0},
		{"--portrange 5080 analyses it", []string{"--portrange", "5080"}, 0, true, 7, 0, 1},
		{"every port", []string{"--portrange", "1-65535"}, 0, true, 7, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, code := gateRun(t, append([]string{"-N", "-I", capture, "--json-run"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d", code, tc.code)
			}
			var d doc
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatalf("%v: %.300s", err, out)
			}
			r := d.Run
			if r.NotAnalyzed == nil {
				t.Fatal("run.not_analyzed absent")
			}
			if r.Complete != tc.complete || !r.SourceExhausted || r.SIPMessages != tc.analysed ||
				r.NotAnalyzed.SIPMessages != tc.notAnalysed || len(d.Dialogs) != tc.dialogs {
				t.Errorf("complete %v exhausted %v analysed %d not analysed %d dialogs %d; want %v true %d %d %d",
					r.Complete, r.SourceExhausted, r.SIPMessages, r.NotAnalyzed.SIPMessages, len(d.Dialogs),
					tc.complete, tc.analysed, tc.notAnalysed, tc.dialogs)
			}
			if got := slices.Contains(r.IncompleteReasons, "sip_not_analyzed"); got != (tc.notAnalysed > 0) {
				t.Errorf("incomplete_reasons %v", r.IncompleteReasons)
			}
			if tc.notAnalysed > 0 && (len(r.NotAnalyzed.Ports) != 1 || r.NotAnalyzed.Ports[0].Port != 5080 || r.NotAnalyzed.Ports[0].SIPMessages != 7) {
				t.Errorf("ports %+v, want 5080: 7", r.NotAnalyzed.Ports)
			}
		})
	}
	t.Run("--report names the ports", func(t *testing.T) {
		out, code := gateRun(t, "-N", "-I", capture, "--report")
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		for _, want := range []string{"NOT ANALYZED", "7 SIP messages on neither a SIP port (--portrange 5060-5061)",
			"Busiest ports (the lower of the two): 5080 (7).", "To analyse them: --portrange 5060-5061,5080",
			"INCOMPLETE RUN", "7 SIP messages outside the SIP ports not analysed"} {
			if !strings.Contains(out, want) {
				t.Errorf("--report lacks %q:\n%s", want, out)
			}
		}
	})
	for _, bad := range [][]string{{"--portrange", "0"}, {"--portrange", "5061-5060"}, {"--ws-portrange", ""}, {"--portrange", "http"}} {
		t.Run("usage "+strings.Join(bad, " "), func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"-N", "-I", capture, "--json-run"}, bad...)...)
			var errb strings.Builder
			cmd.Stderr = &errb
			_ = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(errb.String(), bad[0]) {
				t.Errorf("exit %d, stderr %q; want 2 naming %s", code, errb.String(), bad[0])
			}
		})
	}
}

// gateRun runs the binary to completion and returns its stdout and exit
// code.
func gateRun(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out strings.Builder
	cmd.Stdout = &out
	_ = cmd.Run()
	return out.String(), cmd.ProcessState.ExitCode()
}
