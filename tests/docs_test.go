package tests

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/bundles/all"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

var update = flag.Bool("update", false, "rewrite the generated sections of docs/mcp-tools.md")

// registry provisions every compiled-in bundle as the host does.
func registry(t *testing.T) *sdk.Registry {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testcap.Root(), "docs", "mcp-protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	verbs, err := sdk.ParseWriteVerbs(doc)
	if err != nil {
		t.Fatal(err)
	}
	capture := engine.New(engine.Config{}, nil)
	env := func(sdk.Info) sdk.Env { return sdk.NewEnv(sdk.EnvOptions{Services: []any{capture}}) }
	reg, err := sdk.Register(context.Background(), all.Bundles(), env, sdk.RegistryOptions{WriteVerbs: verbs})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// Generated sections of docs/mcp-tools.md.
const (
	bundlesBegin = "<!-- generated:bundles:begin -->"
	bundlesEnd   = "<!-- generated:bundles:end -->"
	toolsBegin   = "<!-- generated:tools:begin -->"
	toolsEnd     = "<!-- generated:tools:end -->"
)

func bundleTable(reg *sdk.Registry) string {
	var b strings.Builder
	b.WriteString("| Bundle | Tools | Bytes (default) | Bytes with output schemas | Budget (default / with output schemas) | Summary |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	tools, def, out := 0, 0, 0
	for _, r := range shippedBundles(reg) {
		fmt.Fprintf(&b, "| [`%s`](bundles/%s.md) | %d | %d | %d | %d / %d | %s |\n", r.Info.ID, r.Info.ID, len(r.Tools), r.Bytes(false), r.Bytes(true),
			r.Info.ByteBudget.Default, r.Info.ByteBudget.WithOutputSchemas, r.Info.Summary)
		tools += len(r.Tools)
		def += r.Bytes(false)
		out += r.Bytes(true)
	}
	fmt.Fprintf(&b, "| **full** | %d | %d | %d | | every bundle sipnab ships (a bundle whose page is in its own folder is listed there) |\n", tools, def, out)
	return b.String()
}

func toolTable(reg *sdk.Registry) string {
	var b strings.Builder
	b.WriteString("| Tool | Bundle | Read-only | Description |\n|---|---|---|---|\n")
	for _, r := range shippedBundles(reg) {
		for _, t := range r.Tools {
			ro := "yes"
			if t.Annotations.Effect != sdk.ReadOnly {
				ro = "no"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", t.Name, r.Info.ID, ro, strings.ReplaceAll(t.Description, "|", `\|`))
		}
	}
	return b.String()
}

func replaceBetween(doc, begin, end, body string) (string, error) {
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("markers %s ... %s not found", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + body + doc[j:], nil
}

// TestMCPToolsDocIsCurrent regenerates every generated doc from the
// registry and fails on drift: the bundle byte table and the tool table of
// docs/mcp-tools.md, each bundle page's tool reference and resources
// (docs/bundles/<id>.md) and the resource and prompt tables of
// docs/mcp-protocol.md. Run with -update to rewrite them all.
func TestMCPToolsDocIsCurrent(t *testing.T) {
	reg := registry(t)
	t.Run("bundle pages", func(t *testing.T) { checkBundlePages(t, reg) })
	t.Run("mcp-protocol.md", func(t *testing.T) { checkProtocolDoc(t, reg) })
	path := filepath.Join(testcap.Root(), "docs", "mcp-tools.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := replaceBetween(string(raw), bundlesBegin, bundlesEnd, bundleTable(reg))
	if err == nil {
		doc, err = replaceBetween(doc, toolsBegin, toolsEnd, toolTable(reg))
	}
	if err != nil {
		t.Fatal(err)
	}
	if doc == string(raw) {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/mcp-tools.md is out of date with the registry; run go test ./tests -run TestMCPToolsDocIsCurrent -update")
}

// TestMCPToolTableListsEveryRegisteredTool fails when the tool reference
// stops naming a registered tool of a bundle sipnab ships (bundlePage: a
// bundle documented in its own folder lists its tools there).
func TestMCPToolTableListsEveryRegisteredTool(t *testing.T) {
	reg := registry(t)
	raw, err := os.ReadFile(filepath.Join(testcap.Root(), "docs", "mcp-tools.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	var names []string
	for _, r := range shippedBundles(reg) {
		for _, tl := range r.Tools {
			names = append(names, tl.Name)
		}
	}
	if len(names) == 0 {
		t.Fatal("no tool registered")
	}
	for _, n := range names {
		if !strings.Contains(doc, "| `"+n+"` |") {
			t.Errorf("docs/mcp-tools.md does not list %s", n)
		}
	}
}

// TestWriteVerbTablePinsTheProtocolDoc pins the count of the write-verb
// table (mcp-surface §2.7 lists thirteen).
func TestWriteVerbTablePinsTheProtocolDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testcap.Root(), "docs", "mcp-protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	verbs, err := sdk.ParseWriteVerbs(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(verbs) != 13 {
		t.Errorf("write-verb table has %d rows, want 13", len(verbs))
	}
	for name, want := range map[string]sdk.WriteVerb{"open_capture": {Destructive: true, Idempotent: true}, "save_findings": {}, "tfps_ban": {Destructive: true, Idempotent: true}} {
		if verbs[name] != want {
			t.Errorf("%s: got %+v, want %+v", name, verbs[name], want)
		}
	}
}
