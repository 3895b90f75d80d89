package tests

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

const module = "github.com/sipnab/sipnab"

type listedPackage struct {
	ImportPath string
	Deps       []string
	Standard   bool
}

// goListDeps returns every non-test package of the module with its
// transitive dependencies (go list -deps semantics through .Deps).
func goListDeps(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = testcap.Root()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func under(path, prefix string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }

// TestImportDirection checks the dependency rules of
// architecture.md §2 against `go list -deps` for every package group.
func TestImportDirection(t *testing.T) {
	pkgs := goListDeps(t)
	if len(pkgs) == 0 {
		t.Fatal("go list returned no packages")
	}
	const (
		gopacket = "github.com/gopacket/gopacket"
		xsys     = "golang.org/x/sys"
		// the classic BPF assembler and machine of core/live's filters
		// (engine.md §1 auto BPF: no libpcap, no cgo); standard library only
		xbpf = "golang.org/x/net/bpf"
		// the TOML parser of core/expect (sipnab.expect.toml, engine.md
		// §15): a parsing library with no dependency outside its module;
		// koanf's TOML parser wraps the same module, and core never
		// imports koanf
		gotoml = "github.com/pelletier/go-toml/v2"
		// the eBPF loader of core/tlsprobe/uprobe alone (engine.md §3,
		// TLS plaintext via uprobes): programs written as Go
		// instructions, no cgo, no C toolchain, the way core/live's
		// classic BPF uses x/net/bpf
		ebpf    = "github.com/cilium/ebpf"
		mcpWire = "github.com/mark3labs/mcp-go/mcp"
		mcpgo   = "github.com/mark3labs/mcp-go"
		koanf   = "github.com/knadh/koanf"
		hclog   = "github.com/hashicorp/go-hclog"
	)
	// textsafe is the one sanitizer of sender-written text, shared by
	// core's renderers and sdk's fences: a leaf importing the standard
	// library alone, the one module package both may import.
	textsafe := module + "/internal/textsafe"
	checked := map[string]int{}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		var group string
		var allowed func(dep string) bool
		switch {
		case rel == "internal/textsafe":
			group = "internal/textsafe"
			allowed = isStd
		case under(rel, "core"):
			group = "core"
			allowed = func(d string) bool {
				return isStd(d) || under(d, module+"/core") || d == textsafe || under(d, gopacket) || under(d, xsys) || d == xbpf || under(d, gotoml) ||
					rel == "core/tlsprobe/uprobe" && under(d, ebpf)
			}
		case under(rel, "sdk"):
			group = "sdk"
			// mcp-go's mcp wire types and what they themselves import.
			allowed = func(d string) bool {
				return isStd(d) || under(d, module+"/sdk") || d == textsafe || d == mcpWire || !under(d, module) && !under(d, mcpgo) && !under(d, koanf) && !under(d, hclog)
			}
		case under(rel, "bundles/all"):
			group = "bundles/all"
			allowed = func(d string) bool {
				return !under(d, module+"/host") && !under(d, koanf) && !under(d, mcpgo+"/server")
			}
		case under(rel, "bundles"):
			group = "bundles"
			own := module + "/" + strings.Join(strings.Split(rel, "/")[:2], "/")
			allowed = func(d string) bool {
				if under(d, module+"/bundles") && !under(d, own) && !under(d, module+"/bundles/internal") {
					return false // never another bundle; bundles/internal is what they share
				}
				return !under(d, module+"/host") && !under(d, koanf) && !under(d, mcpgo+"/server") && !under(d, mcpgo+"/client") && !under(d, hclog)
			}
		case under(rel, "host"):
			group = "host"
			allowed = func(d string) bool { return !under(d, module+"/bundles") }
		case under(rel, "cmd"):
			group = "cmd"
			allowed = func(d string) bool { return true }
		default:
			continue
		}
		checked[group]++
		for _, d := range p.Deps {
			if !allowed(d) {
				t.Errorf("%s (%s group) depends on %s, which architecture.md §2 forbids", p.ImportPath, group, d)
			}
		}
	}
	for _, g := range []string{"core", "sdk", "host", "cmd", "bundles/all", "internal/textsafe"} {
		if checked[g] == 0 {
			t.Errorf("no package checked in group %s", g)
		}
	}
}
