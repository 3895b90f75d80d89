package host

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/sdk"
)

// fileBundle has two tools that name a file, through the Env's sandbox.
type fileBundle struct{}

type fileIn struct {
	Name string `json:"name" desc:"file name in the root"`
	Text string `json:"text,omitempty" desc:"text to write"`
}

type fileOut struct {
	Text  string `json:"text,omitempty" desc:"what the file holds"`
	Bytes int    `json:"bytes,omitempty" desc:"bytes written"`
}

func (fileBundle) Info() sdk.Info {
	return sdk.Info{ID: "f", Summary: "file tools", ByteBudget: sdk.Budget{Default: 100000, WithOutputSchemas: 100000}}
}

func (fileBundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	root := env.FileRoot()
	return []sdk.Tool{
		sdk.NewTool(sdk.Descriptor{Name: "f_read", Description: "reads a file of the root",
			Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld}},
			func(ctx context.Context, c *sdk.Call, in fileIn) (fileOut, error) {
				b, err := root.ReadFile(in.Name, 0)
				return fileOut{Text: string(b)}, err
			}),
		sdk.NewTool(sdk.Descriptor{Name: "f_write", Description: "writes a new file in the root",
			Annotations: sdk.Annotations{Effect: sdk.Writes, Idempotency: sdk.Idempotent, World: sdk.ClosedWorld}},
			func(ctx context.Context, c *sdk.Call, in fileIn) (fileOut, error) {
				n, err := root.WriteNew(in.Name, []byte(in.Text))
				return fileOut{Bytes: n}, err
			}),
	}, nil
}

func templatesOf(s *stdioSession) []string {
	var out []string
	m := s.call("resources/templates/list", map[string]any{})
	if r, ok := m["result"].(map[string]any); ok {
		for _, t := range r["resourceTemplates"].([]any) {
			out = append(out, t.(map[string]any)["uriTemplate"].(string))
		}
	}
	return out
}

// TestFileRootIsOneSandbox: the tools and the sipnab:/// resource go through
// the same sandbox; an -I input is never overwritten; without a root the
// template is hidden and the tools refuse.
func TestFileRootIsOneSandbox(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for name, data := range map[string]string{"notes.txt": "hello", "bin.dat": "\xff\xfe\x00\x01"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Repeat("x", maxResourceBytes+1)), 0o644); err != nil {
		t.Fatal(err)
	}

	s := startStdio(t, []string{"-N", "--mcp", "--mcp-file-root", root}, []sdk.Bundle{fileBundle{}}, nil)
	defer s.close()
	if got := strings.Join(templatesOf(s), ","); got != fileTemplate {
		t.Errorf("templates: got %s, want %s", got, fileTemplate)
	}
	read := func(uri string) map[string]any {
		return s.call("resources/read", map[string]any{"uri": uri})
	}
	content := func(m map[string]any) map[string]any {
		r, ok := m["result"].(map[string]any)
		if !ok {
			t.Fatalf("no result: %v", m)
		}
		return r["contents"].([]any)[0].(map[string]any)
	}
	if c := content(read("sipnab:///notes.txt")); c["text"] != "hello" || c["mimeType"] != "text/plain; charset=utf-8" {
		t.Errorf("text file: %v", c)
	}
	if c := content(read("sipnab:///bin.dat")); c["blob"] != base64.StdEncoding.EncodeToString([]byte("\xff\xfe\x00\x01")) {
		t.Errorf("binary file: %v", c)
	}
	for _, tc := range []struct{ name, uri, want string }{
		{"symlink out of the root", "sipnab:///escape", "outside the file root"},
		{"missing", "sipnab:///none.txt", "no such file"},
		{"encoded separator", "sipnab:///..%2Fsecret.txt", "without a directory"},
		{"over 8 MiB", "sipnab:///big.txt", "read limit"},
	} {
		t.Run("resource "+tc.name, func(t *testing.T) {
			code, msg := errCode(read(tc.uri))
			if code != sdk.CodeInvalidParams || !strings.Contains(msg, tc.want) || strings.Contains(msg, root) {
				t.Errorf("got %d %q, want -32602 mentioning %q without the root's path", code, msg, tc.want)
			}
		})
	}
	// The tool reads through the same sandbox.
	if m := s.tool("f_read", map[string]any{"name": "notes.txt"}); !strings.Contains(toolText(m), `"text":"hello"`) {
		t.Errorf("f_read: %v", m)
	}
	if kind, msg := refusalOf(t, s.tool("f_read", map[string]any{"name": "escape"})); kind != "file_refused" || !strings.Contains(msg, "outside the file root") {
		t.Errorf("f_read escape: got %s %q, want isError file_refused", kind, msg)
	}
	if m := s.tool("f_write", map[string]any{"name": "new.txt", "text": "abc"}); !strings.Contains(toolText(m), `"bytes":3`) {
		t.Errorf("f_write: %v", m)
	}
	if kind, msg := refusalOf(t, s.tool("f_write", map[string]any{"name": "notes.txt", "text": "x"})); kind != "file_refused" || !strings.Contains(msg, "is taken") {
		t.Errorf("f_write over an existing name: got %s %q, want isError file_refused", kind, msg)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "notes.txt")); string(b) != "hello" {
		t.Errorf("notes.txt overwritten: %q", b)
	}
}

func TestFileRootDisabledWithoutFlag(t *testing.T) {
	s := startStdio(t, []string{"-N", "--mcp"}, []sdk.Bundle{fileBundle{}, &testBundle{id: "t"}}, nil)
	defer s.close()
	for _, tpl := range templatesOf(s) {
		if tpl == fileTemplate {
			t.Errorf("file template advertised without a root")
		}
	}
	if kind, msg := refusalOf(t, s.tool("f_read", map[string]any{"name": "notes.txt"})); kind != "not_enabled" || !strings.HasPrefix(msg, "file tools are disabled") {
		t.Errorf("f_read without a root: got %s %q, want isError not_enabled", kind, msg)
	}
}

func TestFileRootMustBeADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{f, filepath.Join(t.TempDir(), "missing")} {
		var stderr syncBuffer
		code := Run(context.Background(), []string{"-N", "--mcp", "--mcp-file-root", dir}, []sdk.Bundle{fileBundle{}},
			IO{Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &stderr})
		if code != exitUsage || !strings.Contains(stderr.String(), "--mcp-file-root") {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming --mcp-file-root", dir, code, stderr.String())
		}
	}
}

// TestFileRootProtectsInputs: a capture given with -I inside the root is
// never written over: the refusal names it as an input.
func TestFileRootProtectsInputs(t *testing.T) {
	root := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "core", "ami", "testdata", "ami-cleartext.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(root, "in.pcap")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		t.Fatal(err)
	}
	s := startStdio(t, []string{"-N", "--mcp", "--mcp-file-root", root, "-I", in}, []sdk.Bundle{fileBundle{}}, nil)
	defer s.close()
	if kind, msg := refusalOf(t, s.tool("f_write", map[string]any{"name": "in.pcap", "text": "x"})); kind != "file_refused" || !strings.Contains(msg, "a capture this server reads") {
		t.Errorf("writing over the input: got %s %q, want isError file_refused", kind, msg)
	}
	if b, _ := os.ReadFile(in); len(b) != len(src) {
		t.Errorf("input changed: %d bytes, want %d", len(b), len(src))
	}
}

func toolText(m map[string]any) string {
	r, ok := m["result"].(map[string]any)
	if !ok {
		return ""
	}
	c := r["content"].([]any)
	return c[0].(map[string]any)["text"].(string)
}
