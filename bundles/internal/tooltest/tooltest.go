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
	out := map[string]sdk.Tool{}
	for _, tl := range tools {
		out[tl.Name] = tl
	}
	return out
}

// Call invokes a tool that must answer and decodes its answer (the first
// block) into into when not nil.
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

// Refused invokes a tool that must refuse and returns its error.
func Refused(tb testing.TB, tool sdk.Tool, args string) *sdk.Error {
	tb.Helper()
	_, err := tool.Invoke(context.Background(), json.RawMessage(args), sdk.DefaultLimits())
	if err == nil {
		tb.Fatalf("%s %s: got success, want a refusal", tool.Name, args)
	}
	return sdk.AsError(err)
}
