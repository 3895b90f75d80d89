package tests

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestSignalingOnlyConfigLoadsWhatItsCommentSays: configs/signaling-only.toml
// says it offers no media tool and the whole signaling bundle; its tools/list
// has every signaling tool and no rtp_stats.
func TestSignalingOnlyConfigLoadsWhatItsCommentSays(t *testing.T) {
	path := filepath.Join(testcap.Root(), "configs", "signaling-only.toml")
	var names []string
	for _, raw := range liveToolsList(t, "--config", path) {
		var tl struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &tl); err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	if slices.Contains(names, "rtp_stats") {
		t.Errorf("the signaling-only example offers rtp_stats: %v", names)
	}
	reg := registry(t)
	for _, b := range reg.Bundles() {
		for _, tl := range b.Tools {
			if b.Info.ID == "signaling" && !slices.Contains(names, tl.Name) {
				t.Errorf("the signaling-only example lacks the signaling tool %s", tl.Name)
			}
		}
	}
}

// TestNoOptInFlagForAToolNotBuilt: an --mcp-allow-<x> flag enables a tool;
// each one --help lists names ("enable <tool>") a tool compiled into this
// build. A flag for a tool that does not exist promises what the server
// cannot do (open_capture and relay queries are not built;
// --mcp-allow-save-findings enables save_findings, --mcp-allow-shutdown
// shutdown_server and --mcp-allow-tls-capture start_tls_capture).
func TestNoOptInFlagForAToolNotBuilt(t *testing.T) {
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	if !strings.Contains(string(out), "mcp-file-root") {
		t.Fatalf("--help does not list the flags:\n%s", out)
	}
	reg := registry(t)
	flagLine := regexp.MustCompile(`^\s*-?-mcp-allow-[a-z-]+`)
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if !flagLine.MatchString(l) {
			continue
		}
		if i+1 < len(lines) {
			l += " " + lines[i+1] // the usage may sit on the next line
		}
		m := regexp.MustCompile(`enable (\w+)`).FindStringSubmatch(l)
		if m == nil {
			t.Errorf("opt-in flag names no tool it enables: %q", l)
			continue
		}
		if _, _, ok := reg.Tool(m[1]); !ok {
			t.Errorf("opt-in flag for a tool not built (%s): %q", m[1], l)
		}
	}
	for _, gone := range []string{"mcp-allow-open-capture", "mcp-allow-relay-query"} {
		code := exitCode(t, exec.Command(bin, "--"+gone, "--version"))
		if code != 2 {
			t.Errorf("--%s: exit %d, want 2 (unknown flag)", gone, code)
		}
	}
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}
