package signaling

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// TestBundleRegisters runs every registry rule over the bundle alone, with
// the write-verb table of docs/mcp-protocol.md and its byte budget, and
// pins the hints of the lint tools: read-only, closed world.
func TestBundleRegisters(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testcap.Root(), "docs", "mcp-protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	verbs, err := sdk.ParseWriteVerbs(doc)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.New(engine.Config{}, nil)
	env := func(sdk.Info) sdk.Env { return sdk.NewEnv(sdk.EnvOptions{Services: []any{c}}) }
	reg, err := sdk.Register(context.Background(), []sdk.Bundle{Bundle{}}, env, sdk.RegistryOptions{WriteVerbs: verbs})
	if err != nil {
		t.Fatal(err)
	}
	b := reg.Bundles()[0]
	t.Logf("tools/list bytes: %d (budget %d), with output schemas %d (budget %d)",
		b.Bytes(false), b.Info.ByteBudget.Default, b.Bytes(true), b.Info.ByteBudget.WithOutputSchemas)
	for _, name := range []string{"lint_dialog", "validate_message", "explain_rule"} {
		tool, bundle, ok := reg.Tool(name)
		if !ok || bundle != "signaling" {
			t.Fatalf("%s: got registered %v in %q, want signaling", name, ok, bundle)
		}
		h := tool.Wire(false).Annotations
		if h.ReadOnlyHint == nil || !*h.ReadOnlyHint || h.OpenWorldHint == nil || *h.OpenWorldHint ||
			h.DestructiveHint == nil || *h.DestructiveHint || h.IdempotentHint == nil || !*h.IdempotentHint {
			t.Errorf("%s: got hints %+v, want read-only, idempotent, non-destructive, closed world", name, h)
		}
	}
}

func TestProvisionNeedsTheEngine(t *testing.T) {
	if _, err := (Bundle{}).Provision(context.Background(), sdk.NewEnv(sdk.EnvOptions{})); err == nil {
		t.Errorf("got no error without the capture engine")
	}
}
