package bench_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCompareScriptParses runs bash's syntax check over compare.sh.
func TestCompareScriptParses(t *testing.T) {
	if out, err := exec.Command("bash", "-n", "compare.sh").CombinedOutput(); err != nil {
		t.Fatalf("bash -n compare.sh: %v\n%s", err, out)
	}
}

// TestCompareInterleavesRuns checks compare.sh's schedule (-d prints it
// without running anything): every round runs every row once, A B C D A B C
// D, never all of one tool's runs back to back; tshark's statistic follows the
// workload (sip,stat without media, rtp,streams with it).
func TestCompareInterleavesRuns(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "default presets, two rounds, every tool",
			args: []string{"-d", "-n", "2"},
			want: []string{
				"carrier round 1: sipnab 1 core", "carrier round 1: sipnab 2 cores", "carrier round 1: tshark rtp,streams", "carrier round 1: sngrep",
				"carrier round 2: sipnab 1 core", "carrier round 2: sipnab 2 cores", "carrier round 2: tshark rtp,streams", "carrier round 2: sngrep",
				"signaling round 1: sipnab 1 core", "signaling round 1: sipnab 2 cores", "signaling round 1: tshark sip,stat", "signaling round 1: sngrep",
				"signaling round 2: sipnab 1 core", "signaling round 2: sipnab 2 cores", "signaling round 2: tshark sip,stat", "signaling round 2: sngrep",
			},
		},
		{
			name: "one preset, three rounds, two tools",
			args: []string{"-d", "-p", "signaling", "-n", "3", "-t", "tshark,sngrep"},
			want: []string{
				"signaling round 1: tshark sip,stat", "signaling round 1: sngrep",
				"signaling round 2: tshark sip,stat", "signaling round 2: sngrep",
				"signaling round 3: tshark sip,stat", "signaling round 3: sngrep",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command("bash", append([]string{"compare.sh"}, tc.args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("compare.sh %s: %v\n%s", strings.Join(tc.args, " "), err, out)
			}
			got := strings.Split(strings.TrimSpace(string(out)), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("schedule:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestCompareRefusesUnknownTool checks that a misspelt -t is an error, not a
// silently shorter table.
func TestCompareRefusesUnknownTool(t *testing.T) {
	out, err := exec.Command("bash", "compare.sh", "-d", "-t", "sipnab,tshrak").CombinedOutput()
	if err == nil {
		t.Fatalf("compare.sh -t sipnab,tshrak succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "unknown tool tshrak") {
		t.Errorf("output %q does not name the unknown tool", out)
	}
}
