package testengine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sipnab/sipnab/sdk"
)

// Call invokes a tool through the sdk's public path (arguments checked
// against its input schema, default limits) and decodes its answer, the
// first block, into into when not nil. A failure fails the test.
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
