// Package tooltest holds what the bundles' tests share to drive a tool the
// way the host does (a bundle's tests never import another bundle's): the
// bundle provisioned on an Env, a tool invoked through its public path
// (argument validation, decoding, handler, serialization), and a refusal
// read back. Imported by _test files only.
package tooltest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sipnab/sipnab/sdk"
)

// Tools provisions b on env and returns its tools by name.
func Tools(tb testing.TB, b sdk.Bundle, env sdk.Env) map[string]sdk.Tool {
	tb.Helper()
	tools, err := b.Provision(context.Background(), env)
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]sdk.Tool, len(tools))
	for _, tl := range tools {
		out[tl.Name] = tl
	}
	return out
}

// Provision builds b's tools over an Env made of o, by name.
func Provision(tb testing.TB, b sdk.Bundle, o sdk.EnvOptions) map[string]sdk.Tool {
	tb.Helper()
	return Tools(tb, b, sdk.NewEnv(o))
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

// CallErr invokes a tool that must refuse and returns its error.
func CallErr(tb testing.TB, tool sdk.Tool, args string) *sdk.Error {
	tb.Helper()
	_, err := tool.Invoke(context.Background(), json.RawMessage(args), sdk.DefaultLimits())
	if err == nil {
		tb.Fatalf("%s %s: got success, want a refusal", tool.Name, args)
	}
	return sdk.AsError(err)
}
