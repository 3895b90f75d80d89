package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

// tools provisions the bundle over capture with the given services and
// opt-in flags, and returns its tools by name.
func tools(t *testing.T, capture *engine.Capture, opts map[string]bool, root sdk.FileRoot, services ...any) map[string]sdk.Tool {
	t.Helper()
	env := sdk.NewEnv(sdk.EnvOptions{Services: append([]any{capture}, services...), Options: opts, FileRoot: root})
	list, err := Bundle{}.Provision(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sdk.Tool{}
	for _, tl := range list {
		out[tl.Name] = tl
	}
	return out
}

// call invokes a tool through the sdk's public path (schema checks
// included) and decodes its answer into into.
func call(t *testing.T, tool sdk.Tool, args string, into any) sdk.Reply {
	t.Helper()
	r, err := tool.Invoke(context.Background(), json.RawMessage(args), sdk.DefaultLimits())
	if err != nil {
		t.Fatalf("%s %s: %v", tool.Name, args, err)
	}
	if into != nil {
		if err := json.Unmarshal([]byte(r.Blocks[0]), into); err != nil {
			t.Fatalf("%s: decoding %s: %v", tool.Name, r.Blocks[0], err)
		}
	}
	return r
}

// callErr invokes a tool that must fail and returns its error.
func callErr(t *testing.T, tool sdk.Tool, args string) *sdk.Error {
	t.Helper()
	_, err := tool.Invoke(context.Background(), json.RawMessage(args), sdk.DefaultLimits())
	if err == nil {
		t.Fatalf("%s %s: got success, want an error", tool.Name, args)
	}
	return sdk.AsError(err)
}

// noWait replaces the sample window's sleep for the test: during runs
// inside the window (between the tool's two readings) and the window the
// tool asked for is recorded.
func noWait(t *testing.T, during func()) *[]int {
	t.Helper()
	asked := &[]int{}
	old := wait
	wait = func(ctx context.Context, d time.Duration) error {
		*asked = append(*asked, int(d.Seconds()))
		if during != nil {
			during()
		}
		return nil
	}
	t.Cleanup(func() { wait = old })
	return asked
}
