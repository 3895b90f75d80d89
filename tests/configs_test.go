package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestEveryExampleConfigStarts loads and starts each deployment in
// configs/ and checks it serves capture_status on the sample capture.
func TestEveryExampleConfigStarts(t *testing.T) {
	dir := filepath.Join(testcap.Root(), "configs")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) < 4 {
		t.Fatalf("configs/ holds %d files, want at least 4", len(ents))
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), `transport = "http"`) || strings.Contains(string(raw), "transport: http") {
				// A public deployment names machine paths: point them at
				// test files (flags override the file) and bind loopback.
				files := sharedDir(t)
				key := strings.Repeat("p", 48)
				keyFile := writeFile(t, files, "signing.key", key)
				srv := startHTTP(t, nil, "--config", path, "-I", sampleCapture(),
					"--mcp-signing-key-file", keyFile, "--mcp-audit-file", filepath.Join(files, "audit.jsonl"),
					"--mcp-bind", "127.0.0.1:0")
				s := openSessionHost(t, srv.URL, mint(t, key, "config-test", "full"), "mcp.example.net")
				if m := s.callTool(2, "capture_status"); m["result"] == nil {
					t.Errorf("capture_status: %v", m)
				}
				if _, err := os.Stat(filepath.Join(files, "audit.jsonl")); err != nil {
					t.Errorf("audit file: %v", err)
				}
				return
			}
			args := []string{"-N", "--mcp", "--config", path, "-I", sampleCapture()}
			st := stdioStatus(t, args, nil)
			if st["source"] != "file" {
				t.Errorf("capture_status: %v", st)
			}
			tools := liveToolsList(t, "--config", path)
			if len(tools) == 0 {
				t.Error("no tools")
			}
			wantOut := strings.Contains(string(raw), "output_schemas: true")
			for _, tl := range tools {
				var name struct {
					Name string `json:"name"`
				}
				_ = json.Unmarshal(tl, &name)
				if got := strings.Contains(string(tl), `"outputSchema"`); got != (wantOut && !rendersDocuments(t, name.Name)) {
					t.Errorf("outputSchema sent: got %v, want %v", got, wantOut)
				}
			}
		})
	}
}

// TestConfigWithAnUnknownKeyIsRefused: an unknown key is a startup error
// naming the key, its file line and the key meant.
func TestConfigWithAnUnknownKeyIsRefused(t *testing.T) {
	dir := sharedDir(t)
	path := writeFile(t, dir, "bad.toml", "[mcp]\nmax_concurent = 7\n")
	out, code := runCode(t, "-N", "--mcp", "--config", path)
	if want := path + `:2: unknown key "mcp.max_concurent" (did you mean "max_concurrent"?)`; code != 2 || !strings.Contains(out, want) {
		t.Errorf("exit %d: %s", code, out)
	}
}
