package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnreadableCaptureAfterTheDropNamesUser: started as root, the HTTP
// server drops to --user (nobody by default) before it reads capture files;
// a capture only root can read fails startup with a message naming the
// user and --user, not a bare "permission denied".
func TestUnreadableCaptureAfterTheDropNamesUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the privilege drop happens only when started as root")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(sampleCapture())
	if err != nil {
		t.Fatal(err)
	}
	capture := filepath.Join(dir, "root-only.pcap")
	if err := os.WriteFile(capture, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := fcRun(t, nil, "", "-N", "--mcp", "--mcp-transport", "http", "--mcp-bind", "127.0.0.1:0",
		"--mcp-token", "drop-test-token-0123456789", "-I", capture)
	want := `permission denied (after dropping root, sipnab runs as user "nobody" (--user): give that user access, or name another with --user)`
	if code != 1 || !strings.Contains(errOut, capture) || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 naming %s and: %s", code, errOut, capture, want)
	}
}
