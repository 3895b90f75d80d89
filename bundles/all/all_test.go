package all

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// register provisions every compiled-in bundle the way the host does, with
// the write-verb table of docs/mcp-protocol.md.
func register(t *testing.T, opts sdk.RegistryOptions) (*sdk.Registry, error) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testcap.Root(), "docs", "mcp-protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	verbs, err := sdk.ParseWriteVerbs(doc)
	if err != nil {
		t.Fatal(err)
	}
	opts.WriteVerbs = verbs
	capture := engine.New(engine.Config{}, nil)
	env := func(sdk.Info) sdk.Env { return sdk.NewEnv(sdk.EnvOptions{Services: []any{capture}}) }
	return sdk.Register(context.Background(), Bundles(), env, opts)
}

// TestEveryCompiledInBundleRegisters runs every registry rule (names,
// annotations, the write-verb table, schemas, budgets) over bundles/all.
func TestEveryCompiledInBundleRegisters(t *testing.T) {
	if _, err := register(t, sdk.RegistryOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestEachBundleStaysWithinItsByteBudget measures each bundle's compact
// tools/list bytes, as the host sends them, with and without output
// schemas, against the budget recorded in its Info.
func TestEachBundleStaysWithinItsByteBudget(t *testing.T) {
	reg, err := register(t, sdk.RegistryOptions{SkipBudgets: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range reg.Bundles() {
		t.Run(b.Info.ID, func(t *testing.T) {
			if got, max := b.Bytes(false), b.Info.ByteBudget.Default; got > max || got == 0 {
				t.Errorf("tools/list bytes: got %d, budget %d", got, max)
			}
			if got, max := b.Bytes(true), b.Info.ByteBudget.WithOutputSchemas; got > max || got == 0 {
				t.Errorf("tools/list bytes with output schemas: got %d, budget %d", got, max)
			}
		})
	}
}

// TestCoreRegistersNoStateChangingTool: core excludes every write verb.
func TestCoreRegistersNoStateChangingTool(t *testing.T) {
	reg, err := register(t, sdk.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"open_capture", "export_capture", "shutdown_server", "save_findings"} {
		if _, bundle, ok := reg.Tool(name); ok && bundle == "core" {
			t.Errorf("core registers %s", name)
		}
	}
}
