package tests

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestDirectImportsFollowTheLayerRules reads the dependency rules of architecture.md
// and the team rules literally, on each package's direct imports (go list
// .Imports, non-test files): TestImportDirection checks transitive
// dependencies and, to admit what mcp-go's wire types import, lets sdk and
// bundle packages depend on any third-party module but three. Here:
//
//	core/...       stdlib, core, internal/textsafe, gopacket, golang.org/x/sys, golang.org/x/net/bpf (core/live's filters)
//	sdk/...        stdlib, sdk, internal/textsafe, mcp-go's mcp wire types
//	bundles/<x>    stdlib, sdk, core, bundles/internal, its own packages (never another bundle)
//	bundles/all    stdlib, sdk, the bundles
//	host/...       stdlib, sdk, core, mcp-go, koanf, go-hclog (never a bundle)
//	cmd/sipnab     stdlib, host, bundles/all
func TestDirectImportsFollowTheLayerRules(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./core/...", "./sdk/...", "./bundles/...", "./host/...", "./cmd/...")
	cmd.Dir = testcap.Root()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	in := func(p string, prefixes ...string) bool {
		for _, pre := range prefixes {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return false
	}
	m := module + "/"
	groups := map[string]int{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, m)
		var group string
		var ok func(d string) bool
		switch {
		case in(rel, "core"):
			group, ok = "core", func(d string) bool {
				// cilium/ebpf: core/tlsprobe/uprobe's eBPF loader alone (imports_test.go)
				return in(d, m+"core", m+"internal/textsafe", "github.com/gopacket/gopacket", "golang.org/x/sys", "golang.org/x/net/bpf", "github.com/pelletier/go-toml/v2") ||
					rel == "core/tlsprobe/uprobe" && in(d, "github.com/cilium/ebpf")
			}
		case in(rel, "sdk"):
			group, ok = "sdk", func(d string) bool { return in(d, m+"sdk", m+"internal/textsafe", "github.com/mark3labs/mcp-go/mcp") }
		case rel == "bundles/all":
			group, ok = "bundles/all", func(d string) bool { return in(d, m+"sdk", m+"bundles") && !in(d, m+"bundles/all") }
		case in(rel, "bundles"):
			own := m + strings.Join(strings.Split(rel, "/")[:2], "/")
			group, ok = "bundles/<x>", func(d string) bool { return in(d, m+"sdk", m+"core", m+"bundles/internal", own) }
		case in(rel, "host"):
			group, ok = "host", func(d string) bool {
				return in(d, m+"host", m+"sdk", m+"core", "github.com/mark3labs/mcp-go", "github.com/knadh/koanf", "github.com/hashicorp/go-hclog")
			}
		case rel == "cmd/sipnab":
			group, ok = "cmd/sipnab", func(d string) bool { return in(d, m+"host", m+"bundles/all") }
		default:
			continue
		}
		groups[group]++
		for _, d := range p.Imports {
			if isStd(d) {
				continue
			}
			if !ok(d) {
				t.Errorf("%s (%s) imports %s", p.ImportPath, group, d)
			}
		}
	}
	for _, g := range []string{"core", "sdk", "bundles/<x>", "bundles/all", "host", "cmd/sipnab"} {
		if groups[g] == 0 {
			t.Errorf("no package of group %s checked", g)
		}
	}
}
