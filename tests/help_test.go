package tests

import (
	"regexp"
	"strings"
	"testing"
)

// TestHelpIsGroupedOnStdoutWithEachAliasOnce: --help (and -h, -help) prints
// on stdout and exits 0, nothing on stderr; the flags are grouped by
// purpose, in this order; each flag is listed once, its one-letter alias on
// the same line (-I, --input FILE). A mistaken flag stays a one-line error
// on stderr, exit 2, nothing on stdout.
func TestHelpIsGroupedOnStdoutWithEachAliasOnce(t *testing.T) {
	groups := []string{"Sources", "Batch output", "Analysis thresholds", "MCP server", "MCP security",
		"MCP limits", "Signed tokens", "General"}
	flagLine := regexp.MustCompile(`^ +(?:-([A-Za-z]), )?--([a-z][a-z0-9-]*)`)
	for _, arg := range []string{"--help", "-h", "-help"} {
		t.Run(arg, func(t *testing.T) {
			out, errOut, code := fcRun(t, nil, "", arg)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, errOut)
			}
			at := -1
			for _, g := range groups {
				i := strings.Index(out, "\n"+g)
				if i < 0 || !strings.Contains(out[i:min(len(out), i+120)], ":\n") {
					t.Errorf("no group %q", g)
					continue
				}
				if i < at {
					t.Errorf("group %q out of order", g)
				}
				at = i
			}
			seen := map[string]int{}
			for _, l := range strings.Split(out, "\n") {
				if m := flagLine.FindStringSubmatch(l); m != nil {
					seen[m[2]]++
					if m[1] != "" {
						seen[m[1]]++
					}
				}
			}
			for _, want := range []string{"  -I, --input FILE", "  -i, --interface IFACE", "  -L, --hep-listen ADDR", "  -N, --no-tui",
				"      --mcp-tools LIST", "      --user USER"} {
				if !strings.Contains(out, "\n"+want+"\n") {
					t.Errorf("no line %q", want)
				}
			}
			for f, n := range seen {
				if n != 1 {
					t.Errorf("-%s listed %d times", f, n)
				}
			}
			if len(seen) < 60 {
				t.Errorf("%d flags listed, want every one", len(seen))
			}
			if strings.Contains(out, "  -I value") || strings.Contains(out, "Usage of sipnab") {
				t.Errorf("the flag package's own listing is back:\n%s", out)
			}
		})
	}
	t.Run("a mistaken flag", func(t *testing.T) {
		out, errOut, code := fcRun(t, nil, "", "--inptu", "x.pcap")
		want := "sipnab: flag provided but not defined: -inptu (sipnab --help lists the flags)\n"
		if code != 2 || out != "" || errOut != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, %q", code, out, errOut, want)
		}
	})
}
