package testcap

import (
	"os/exec"
	"strings"
	"testing"
)

// TsharkSIP lists the SIP messages of a capture as tshark reads them, in
// the file's order: one "Call-ID|CSeq|method or status" row per message (a
// frame carrying several messages gives one row each). extra are tshark
// options placed before the field list (a -2 -R second-pass filter). The
// test is skipped when tshark is not installed.
func TsharkSIP(tb testing.TB, path string, extra ...string) []string {
	tb.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		tb.Skip("tshark not installed (.ci/run installs it)")
	}
	args := append([]string{"-r", path, "-Y", "sip"}, extra...)
	args = append(args, "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=;",
		"-e", "sip.Call-ID", "-e", "sip.CSeq", "-e", "sip.Method", "-e", "sip.Status-Code")
	out, err := exec.Command("tshark", args...).Output()
	if err != nil {
		tb.Fatalf("tshark %v: %v", args, err)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		f := strings.Split(l, "|")
		if len(f) < 4 {
			tb.Fatalf("tshark row %q", l)
		}
		ids, cseqs := strings.Split(f[0], ";"), strings.Split(f[1], ";")
		kind := f[3]
		if kind == "" {
			kind = f[2]
		}
		kinds := strings.Split(kind, ";")
		for i := range ids {
			rows = append(rows, ids[i]+"|"+cseqs[min(i, len(cseqs)-1)]+"|"+kinds[min(i, len(kinds)-1)])
		}
	}
	return rows
}
