package bench_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoresScriptParses runs bash's syntax check over cores.sh.
func TestCoresScriptParses(t *testing.T) {
	if out, err := exec.Command("bash", "-n", "cores.sh").CombinedOutput(); err != nil {
		t.Fatalf("bash -n cores.sh: %v\n%s", err, out)
	}
}

// TestCoresScriptInterleavesCoreCounts checks cores.sh's schedule (-d prints
// it without running anything): every round runs every core count once, the
// order rotated by one place each round (1 2 4, 2 4 1), never one count's
// runs back to back.
func TestCoresScriptInterleavesCoreCounts(t *testing.T) {
	out, err := exec.Command("bash", "cores.sh", "-d", "-p", "signaling", "-n", "2", "-c", "1,2,4").CombinedOutput()
	if err != nil {
		t.Fatalf("cores.sh -d: %v\n%s", err, out)
	}
	want := []string{
		"signaling round 1: sipnab --cores 1", "signaling round 1: sipnab --cores 2", "signaling round 1: sipnab --cores 4",
		"signaling round 2: sipnab --cores 2", "signaling round 2: sipnab --cores 4", "signaling round 2: sipnab --cores 1",
	}
	if got := strings.Split(strings.TrimSpace(string(out)), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("schedule:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCoresScriptInterleavesTheBaseline: with -b, every round runs the
// baseline and the binary under test at each core count, the order rotated
// each round so neither always runs first or after the other.
func TestCoresScriptInterleavesTheBaseline(t *testing.T) {
	out, err := exec.Command("bash", "cores.sh", "-d", "-p", "signaling", "-n", "2", "-c", "1,2", "-b", "/bin/true").CombinedOutput()
	if err != nil {
		t.Fatalf("cores.sh -d -b: %v\n%s", err, out)
	}
	want := []string{
		"signaling round 1: baseline --cores 1", "signaling round 1: sipnab --cores 1",
		"signaling round 1: baseline --cores 2", "signaling round 1: sipnab --cores 2",
		"signaling round 2: sipnab --cores 1", "signaling round 2: baseline --cores 2",
		"signaling round 2: sipnab --cores 2", "signaling round 2: baseline --cores 1",
	}
	if got := strings.Split(strings.TrimSpace(string(out)), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("schedule:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCoresScriptRefusesBadArguments checks that a core count or preset
// the script cannot time is an error, not a silently shorter table.
func TestCoresScriptRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-d", "-c", "1,0"}, "0 is not a positive core count"},
		{[]string{"-d", "-c", "1,two"}, "two is not a positive core count"},
		{[]string{"-d", "-p", "carier"}, "unknown preset carier"},
		{[]string{"-d", "-b", "/nonexistent/sipnab"}, "/nonexistent/sipnab is not an executable"},
	} {
		out, err := exec.Command("bash", append([]string{"cores.sh"}, tc.args...)...).CombinedOutput()
		if err == nil {
			t.Errorf("cores.sh %s succeeded:\n%s", strings.Join(tc.args, " "), out)
			continue
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("cores.sh %s: output %q does not say %q", strings.Join(tc.args, " "), out, tc.want)
		}
	}
}

// TestSharedScriptPartsParse runs bash's syntax check over lib.sh, which
// compare.sh and cores.sh source.
func TestSharedScriptPartsParse(t *testing.T) {
	if out, err := exec.Command("bash", "-n", "lib.sh").CombinedOutput(); err != nil {
		t.Fatalf("bash -n lib.sh: %v\n%s", err, out)
	}
}
