// Package tooltest calls a bundle's tools the way the host does, for the
// bundles' unit tests: provision the bundle over an Env, invoke a tool
// through the sdk's public path (input schema checks included) and decode
// its answer. One copy for every bundle (a bundle never imports another).
package tooltest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sipnab/sipnab/sdk"
)

// Provision builds b's tools over an Env made of o, by name.
func Provision(tb testing.TB, b sdk.Bundle, o sdk.EnvOptions) map[string]sdk.Tool {
	tb.Helper()
	list, err := b.Provision(context.Background(), sdk.NewEnv(o))
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]sdk.Tool, len(list))
	for _, tl := range list {
		out[tl.Name] = tl
	}
	return out
}

// Call invokes tool with the JSON arguments args under the default limits,
// fails the test on an error, and decodes the answer (the first block) into
// into when it is not nil.
func Call(tb testing.TB, tool sdk.Tool, args string, into any) sdk.Reply {
	tb.Helper()
	r, err := tool.Invoke(context.Background(), json.RawMessage(args), sdk.DefaultLimits())
	if err != nil {
		tb.Fatalf("%s %s: %v", tool.Name, args, err)
	}
	if into != nil {
		if err := json.Unmarshal([]byte(r.Blocks[0]), into); err != nil {
			tb.Fatalf("%s: decoding %s: %v", tool.Name, r.Blocks[0], err)
		}
	}
	return r
}

// CallErr invokes a tool that must fail and returns its error.
func CallErr(tb testing.TB, tool sdk.Tool, args string) *sdk.Error {
	tb.Helper()
	_, err := tool.Invoke(context.Background(), json.RawMessage(args), sdk.DefaultLimits())
	if err == nil {
		tb.Fatalf("%s %s: got success, want an error", tool.Name, args)
	}
	return sdk.AsError(err)
}
