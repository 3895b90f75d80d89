package tests

// Docs are code: each bundle's page (docs/bundles/<id>.md) carries a tool
// reference generated from the registry between markers (inputs with their
// types, defaults and descriptions, the output's fields, the refusals, all
// four hints), its resources and prompts; docs/mcp-protocol.md carries the
// resource and prompt tables of every bundle. The drift tests regenerate
// them and fail on a difference (-update rewrites them), and every
// compiled-in bundle must have its page with the required sections, as
// CoreDNS checks every plugin's README.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// Generated sections of the bundle pages and of docs/mcp-protocol.md.
const (
	bundleToolsBegin     = "<!-- generated:bundle-tools:begin -->"
	bundleToolsEnd       = "<!-- generated:bundle-tools:end -->"
	bundleResourcesBegin = "<!-- generated:bundle-resources:begin -->"
	bundleResourcesEnd   = "<!-- generated:bundle-resources:end -->"
	resourcesBegin       = "<!-- generated:resources:begin -->"
	resourcesEnd         = "<!-- generated:resources:end -->"
	promptsBegin         = "<!-- generated:prompts:begin -->"
	promptsEnd           = "<!-- generated:prompts:end -->"
)

// requiredSections are the headings every bundle page carries, in order.
var requiredSections = []string{"## Description", "## Configuration", "## Tools", "## Resources and prompts", "## Examples"}

// cell escapes text for one Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// typeName words a schema's type for a reader.
func typeName(s *sdk.Schema) string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, t := range s.Type {
		switch {
		case t == "array" && s.Items != nil:
			parts = append(parts, "array of "+typeName(s.Items))
		case t == "object" && s.AdditionalProperties != nil:
			parts = append(parts, "map of "+typeName(s.AdditionalProperties))
		default:
			parts = append(parts, t)
		}
	}
	if len(parts) == 0 {
		return "any"
	}
	out := strings.Join(parts, " or ")
	if s.Format != "" {
		out += " (" + s.Format + ")"
	}
	return out
}

func enumText(s *sdk.Schema) string {
	if len(s.Enum) == 0 {
		return ""
	}
	q := make([]string, len(s.Enum))
	for i, e := range s.Enum {
		q[i] = "`" + e + "`"
	}
	sep := " "
	if d := strings.TrimSpace(s.Description); d != "" && !strings.HasSuffix(d, ".") {
		sep = ". "
	}
	return sep + "One of " + strings.Join(q, ", ") + "."
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func hint(p *bool) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// toolSection renders one tool's reference.
func toolSection(t sdk.Tool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### `%s`\n\n", t.Name)
	if t.Title != "" {
		fmt.Fprintf(&b, "**%s.** ", t.Title)
	}
	fmt.Fprintf(&b, "%s\n\n", strings.Join(strings.Fields(t.Description), " "))
	h := t.Annotations.Hints()
	fmt.Fprintf(&b, "Annotations: `readOnlyHint: %s`, `destructiveHint: %s`, `idempotentHint: %s`, `openWorldHint: %s`.\n\n",
		hint(h.ReadOnlyHint), hint(h.DestructiveHint), hint(h.IdempotentHint), hint(h.OpenWorldHint))

	in := t.InputSchema()
	required := map[string]bool{}
	if in != nil {
		for _, r := range in.Required {
			required[r] = true
		}
	}
	if in == nil || len(in.Properties) == 0 {
		b.WriteString("Input: none.\n\n")
	} else {
		b.WriteString("| Input | Type | Required | Default | Description |\n|---|---|---|---|---|\n")
		for _, p := range in.Properties {
			def := "—"
			if p.Schema.Default != "" {
				def = "`" + p.Schema.Default + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", p.Name, cell(typeName(p.Schema)), yesNo(required[p.Name]), cell(def),
				cell(p.Schema.Description+enumText(p.Schema)))
		}
		b.WriteString("\n")
	}

	out := t.OutputSchema()
	if out == nil || len(out.Properties) == 0 {
		b.WriteString("Output: a rendered document in the first text block (no JSON answer, no `structuredContent`).\n\n")
	} else {
		outReq := map[string]bool{}
		for _, r := range out.Required {
			outReq[r] = true
		}
		b.WriteString("| Output | Type | Always present | Description |\n|---|---|---|---|\n")
		for _, p := range out.Properties {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", p.Name, cell(typeName(p.Schema)), yesNo(outReq[p.Name]), cell(p.Schema.Description+enumText(p.Schema)))
		}
		b.WriteString("\n")
	}

	if len(t.Examples) > 0 {
		// The same calls the golden transcripts make (bundles/<id>/testdata/transcripts).
		b.WriteString("Examples (`tools/call` arguments; on the sample capture `testdata/sip-rtp-g711.pcap`):\n\n")
		for _, ex := range t.Examples {
			args := []byte("{}")
			if len(ex.Args) > 0 {
				args, _ = json.Marshal(ex.Args)
			}
			fmt.Fprintf(&b, "- %s: `%s`\n", strings.Join(strings.Fields(ex.Title), " "), args)
		}
		b.WriteString("\n")
	}

	b.WriteString("Refusals (`isError`: a tool execution error with a structured error body; a number: a JSON-RPC error; docs/mcp-protocol.md, Errors):\n\n")
	// Every input schema is closed and bounded (sdk.ValidateArgs).
	generic := "arguments that fail the input schema (a required argument missing, a wrong type, a value outside its enum, " +
		"minimum or maximum, an argument the tool does not name: the refusal names the valid ones)"
	fmt.Fprintf(&b, "- `isError` %s\n", generic)
	for _, r := range t.Refusals {
		if r.Code == sdk.CodeInvalidParams {
			fmt.Fprintf(&b, "- `isError` %s\n", strings.Join(strings.Fields(r.When), " "))
			continue
		}
		fmt.Fprintf(&b, "- `%d` %s\n", r.Code, strings.Join(strings.Fields(r.When), " "))
	}
	b.WriteString("- `isError` an answer larger than `--mcp-max-response-bytes`\n")
	b.WriteString("- HTTP 403 `insufficient_scope`: with a `read` token, a tool that is not read-only\n")
	fmt.Fprintf(&b, "- `%d` at capacity (`--mcp-max-concurrent`) or rate limited (`--mcp-rate-limit-per-peer`): retry\n", sdk.CodeUnavailable)
	b.WriteString("\n")
	return b.String()
}

func bundleToolsSection(r sdk.Registered) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d tools; `tools/list` costs %d bytes (%d with `--mcp-output-schemas`), budget %d / %d.\n\n",
		len(r.Tools), r.Bytes(false), r.Bytes(true), r.Info.ByteBudget.Default, r.Info.ByteBudget.WithOutputSchemas)
	for _, t := range r.Tools {
		b.WriteString(toolSection(t))
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func resourceRows(b *strings.Builder, r sdk.Registered, withBundle bool) {
	for _, x := range r.Resources {
		if withBundle {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | no | %s |\n", x.URI, r.Info.ID, cell(x.Name), yesNo(x.Revision != nil), cell(x.Description))
		} else {
			fmt.Fprintf(b, "| `%s` | %s | %s | no | %s |\n", x.URI, cell(x.Name), yesNo(x.Revision != nil), cell(x.Description))
		}
	}
	for _, x := range r.Templates {
		if withBundle {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s |\n", x.URITemplate, r.Info.ID, cell(x.Name), yesNo(x.Revision != nil), yesNo(x.Complete != nil), cell(x.Description))
		} else {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", x.URITemplate, cell(x.Name), yesNo(x.Revision != nil), yesNo(x.Complete != nil), cell(x.Description))
		}
	}
}

func promptRows(b *strings.Builder, r sdk.Registered, withBundle bool) {
	for _, p := range r.Prompts {
		tools := make([]string, len(p.Tools))
		for i, t := range p.Tools {
			tools[i] = "`" + t + "`"
		}
		if withBundle {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", p.Name, r.Info.ID, strings.Join(tools, ", "), cell(p.Description))
		} else {
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", p.Name, strings.Join(tools, ", "), cell(p.Description))
		}
	}
}

func bundleResourcesSection(r sdk.Registered) string {
	var b strings.Builder
	if len(r.Resources)+len(r.Templates) == 0 {
		b.WriteString("Resources: none.\n")
	} else {
		b.WriteString("| URI | Name | Subscribable | Completes | Description |\n|---|---|---|---|---|\n")
		resourceRows(&b, r, false)
	}
	b.WriteString("\n")
	if len(r.Prompts) == 0 {
		b.WriteString("Prompts: none.\n")
	} else {
		b.WriteString("| Prompt | Tools its steps call (all must be loaded for it to be listed) | Description |\n|---|---|---|\n")
		promptRows(&b, r, false)
	}
	return b.String()
}

func resourcesTable(reg *sdk.Registry) string {
	var b strings.Builder
	b.WriteString("| URI | Bundle | Name | Subscribable | Completes | Description |\n|---|---|---|---|---|---|\n")
	for _, r := range reg.Bundles() {
		resourceRows(&b, r, true)
	}
	return b.String()
}

func promptsTable(reg *sdk.Registry) string {
	var b strings.Builder
	b.WriteString("| Prompt | Bundle | Tools its steps call (all must be loaded for it to be listed) | Description |\n|---|---|---|---|\n")
	for _, r := range reg.Bundles() {
		promptRows(&b, r, true)
	}
	return b.String()
}

// regenerate rewrites the generated sections of one file; it reports drift
// (or rewrites the file with -update).
func regenerate(t *testing.T, path string, sections [][3]string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, s := range sections {
		if doc, err = replaceBetween(doc, s[0], s[1], s[2]); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
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
	rel, _ := filepath.Rel(testcap.Root(), path)
	t.Errorf("%s is out of date with the registry; run go test ./tests -run TestMCPToolsDocIsCurrent -update", rel)
}

// bundlePage is where a bundle's page lives: docs/bundles/<id>.md for the
// bundles sipnab ships (linked from docs/mcp-tools.md, whose tables list
// their tools), or bundles/<id>/README.md for a bundle that keeps its page
// in its own folder, as a vendor's does (docs/adding-a-bundle.md): adding
// such a bundle then touches its folder and bundles/all only. shipped says
// which.
func bundlePage(id string) (path string, shipped bool) {
	p := filepath.Join(testcap.Root(), "docs", "bundles", id+".md")
	if _, err := os.Stat(p); err == nil {
		return p, true
	}
	return filepath.Join(testcap.Root(), "bundles", id, "README.md"), false
}

// shippedBundles are the registered bundles whose page is under
// docs/bundles (bundlePage): the ones docs/mcp-tools.md tabulates.
func shippedBundles(reg *sdk.Registry) []sdk.Registered {
	var out []sdk.Registered
	for _, r := range reg.Bundles() {
		if _, shipped := bundlePage(r.Info.ID); shipped {
			out = append(out, r)
		}
	}
	return out
}

// checkBundlePages regenerates each bundle page's tool reference, resources
// and prompts (a subtest of TestMCPToolsDocIsCurrent, so its -update
// rewrites every generated doc).
func checkBundlePages(t *testing.T, reg *sdk.Registry) {
	for _, r := range reg.Bundles() {
		t.Run(r.Info.ID, func(t *testing.T) {
			path, _ := bundlePage(r.Info.ID)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("no page (TestEveryBundleHasItsPage fails): %v", err)
			}
			regenerate(t, path, [][3]string{
				{bundleToolsBegin, bundleToolsEnd, bundleToolsSection(r)},
				{bundleResourcesBegin, bundleResourcesEnd, bundleResourcesSection(r)},
			})
		})
	}
}

// checkProtocolDoc regenerates the resource and prompt tables of
// docs/mcp-protocol.md (a subtest of TestMCPToolsDocIsCurrent).
func checkProtocolDoc(t *testing.T, reg *sdk.Registry) {
	regenerate(t, filepath.Join(testcap.Root(), "docs", "mcp-protocol.md"), [][3]string{
		{resourcesBegin, resourcesEnd, resourcesTable(reg)},
		{promptsBegin, promptsEnd, promptsTable(reg)},
	})
}

// TestEveryBundleHasItsPage: every compiled-in bundle has its page
// (docs/bundles/<id>.md, or bundles/<id>/README.md: bundlePage) with the
// required sections in order and its generated markers; a page under
// docs/bundles is linked from docs/mcp-tools.md; no page documents a bundle
// that is not compiled in.
func TestEveryBundleHasItsPage(t *testing.T) {
	reg := registry(t)
	tools, err := os.ReadFile(filepath.Join(testcap.Root(), "docs", "mcp-tools.md"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range reg.Bundles() {
		ids[r.Info.ID] = true
		t.Run(r.Info.ID, func(t *testing.T) {
			path, shipped := bundlePage(r.Info.ID)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("bundle %q has no page: %v", r.Info.ID, err)
			}
			doc := string(raw)
			if title := "# " + r.Info.ID + " bundle\n"; !strings.HasPrefix(doc, title) {
				t.Errorf("the page must start with %q", strings.TrimSpace(title))
			}
			at := 0
			for _, s := range requiredSections {
				i := strings.Index(doc[at:], "\n"+s+"\n")
				if i < 0 {
					t.Errorf("section %q missing (or out of order; want %s)", s, strings.Join(requiredSections, ", "))
					continue
				}
				at += i + 1
			}
			for _, m := range []string{bundleToolsBegin, bundleToolsEnd, bundleResourcesBegin, bundleResourcesEnd} {
				if strings.Count(doc, m) != 1 {
					t.Errorf("marker %s appears %d times, want once", m, strings.Count(doc, m))
				}
			}
			if link := "(bundles/" + r.Info.ID + ".md)"; shipped && !strings.Contains(string(tools), link) {
				t.Errorf("docs/mcp-tools.md does not link %s", link)
			}
		})
	}
	entries, err := os.ReadDir(filepath.Join(testcap.Root(), "docs", "bundles"))
	if err != nil {
		t.Fatal(err)
	}
	var stray []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".md"); ok && !ids[id] {
			stray = append(stray, e.Name())
		}
	}
	sort.Strings(stray)
	if len(stray) > 0 {
		t.Errorf("pages for bundles that are not compiled in: %v", stray)
	}
}
