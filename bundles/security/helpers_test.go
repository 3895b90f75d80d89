package security

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
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
	tl := tools(t, c, "")[tool]
	r, err := tl.Invoke(context.Background(), json.RawMessage(args), sdk.DefaultLimits())
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	if into != nil {
		if err := json.Unmarshal([]byte(r.Blocks[0]), into); err != nil {
			t.Fatalf("%s: decoding %s: %v", tool, r.Blocks[0], err)
		}
	}
	return r
}

// callErr invokes a tool that must fail and returns its error.
func callErr(t *testing.T, c *engine.Capture, tool, args string) *sdk.Error {
	t.Helper()
	_, err := tools(t, c, "")[tool].Invoke(context.Background(), json.RawMessage(args), sdk.DefaultLimits())
	if err == nil {
		t.Fatalf("%s %s: got success, want an error", tool, args)
	}
	return sdk.AsError(err)
}

// sipPacket builds a UDP packet carrying one SIP message written with "\n"
// line ends.
func sipPacket(ts time.Time, src, dst, msg string) *packet.Packet {
	return &packet.Packet{
		TS: ts, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
		Transport: packet.TransportUDP, Origin: packet.OriginWire,
		Payload: []byte(strings.ReplaceAll(msg, "\n", "\r\n")),
	}
}

// unfence strips the fence markers of one fenced field.
func unfence(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(s, sdk.FenceOpen), sdk.FenceClose)
}
