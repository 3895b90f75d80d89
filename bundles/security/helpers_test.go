package security

import (
	"context"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/bundles/internal/tooltest"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// load runs a public capture (testdata/captures/public) through the engine
// to its end.
func load(t *testing.T, name string) *engine.Capture {
	t.Helper()
	return testengine.Load(t, engine.Config{Node: "test"}, testcap.Public(name))
}

// tools provisions the bundle over a capture (and an optional file root).
func tools(t *testing.T, c *engine.Capture, root string) map[string]sdk.Tool {
	t.Helper()
	opts := sdk.EnvOptions{Services: []any{c}}
	if root != "" {
		opts.FileRoot = sdk.NewFileRoot(root, nil)
	}
	env := sdk.NewEnv(opts)
	ts, err := Bundle{}.Provision(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sdk.Tool{}
	for _, tl := range ts {
		out[tl.Name] = tl
	}
	return out
}

// call invokes a tool with args (a JSON object) and decodes its answer
// into into (when not nil).
func call(t *testing.T, c *engine.Capture, tool, args string, into any) sdk.Reply {
	t.Helper()
	return tooltest.Call(t, tools(t, c, "")[tool], args, into)
}

// callErr invokes a tool that must fail and returns its error.
func callErr(t *testing.T, c *engine.Capture, tool, args string) *sdk.Error {
	t.Helper()
	return tooltest.CallErr(t, tools(t, c, "")[tool], args)
}

// sipPacket builds a UDP packet carrying one SIP message written with "\n"
// line ends.
var sipPacket = testengine.SIP

// unfence strips the fence markers of one fenced field.
func unfence(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(s, sdk.FenceOpen), sdk.FenceClose)
}
