package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestFileRootE2E: --mcp-file-root reaches the bundles through the SDK:
// lint_dialog reads a suppression list in it, generate_repro writes a new
// scenario in it but never over a name already taken or the capture being
// read, and sipnab:///<file> serves what was written, all through one
// sandbox.
func TestFileRootE2E(t *testing.T) {
	root := t.TempDir()
	src, err := os.ReadFile(testcap.Public("sip_call.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	capture := filepath.Join(root, "sip_call.pcap")
	if err := os.WriteFile(capture, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "lint.txt"), []byte("SIP-*\nSDP-*\nOBS-*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startRaw(t, "-N", "--mcp", "-I", capture, "--mcp-file-root", root)
	s.waitLoaded()
	m, _ := s.ok("list_dialogs", map[string]any{"fields": []string{"call_id"}})
	id := m["dialogs"].([]any)[0].(map[string]any)["call_id"].(string)

	lint, _ := s.ok("lint_dialog", map[string]any{"call_id": id, "suppression_file": "lint.txt"})
	supp := lint["suppressions"].(map[string]any)
	if supp["file"] != "lint.txt" || len(supp["patterns"].([]any)) != 3 {
		t.Errorf("lint_dialog suppressions: %v", supp)
	}
	for _, tc := range []struct{ name, file, want string }{
		{"outside the root", "../lint.txt", "without a directory"},
		{"missing", "none.txt", "no such file"},
	} {
		if r := s.call("lint_dialog", map[string]any{"call_id": id, "suppression_file": tc.file}); r.refused(t) == nil || !strings.Contains(r.refused(t).Message, tc.want) || strings.Contains(r.refused(t).Message, root) {
			t.Errorf("lint_dialog %s: %s, want a tool execution error", tc.name, r.Response)
		}
	}

	repro, _ := s.ok("generate_repro", map[string]any{"call_id": id, "filename": "repro.xml"})
	written, err := os.ReadFile(filepath.Join(root, "repro.xml"))
	if err != nil || string(written) != repro["scenario"] {
		t.Fatalf("repro.xml: %v", err)
	}
	for _, name := range []string{"repro.xml", "sip_call.pcap", "lint.txt"} {
		if r := s.call("generate_repro", map[string]any{"call_id": id, "filename": name}); r.refused(t) == nil || r.refused(t).Code != "file_refused" || !strings.Contains(r.refused(t).Message, "is taken") {
			t.Errorf("generate_repro over %s: %s, want isError file_refused", name, r.Response)
		}
	}
	if b, _ := os.ReadFile(capture); len(b) != len(src) {
		t.Errorf("the capture changed size: %d, want %d", len(b), len(src))
	}
	if text := s.mustText("sipnab:///repro.xml"); text != string(written) {
		t.Errorf("sipnab:///repro.xml differs from the file written")
	}
}
