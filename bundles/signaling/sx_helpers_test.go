package signaling

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/tooltest"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// Helpers of the SDP, codec, response-code, repro and Wireshark-filter
// tool tests (prefixed sx so other tool tests in the package cannot collide).

// sxLoad runs a public capture through the engine to its end.
func sxLoad(t *testing.T, name string) *engine.Capture {
	t.Helper()
	return testengine.Load(t, engine.Config{Node: "test"}, testcap.Public(name))
}

// sxCall invokes a tool through the sdk's public path and decodes its
// answer into into (when not nil).
func sxCall(t *testing.T, tool sdk.Tool, args string, into any) sdk.Reply {
	t.Helper()
	return tooltest.Call(t, tool, args, into)
}

// sxCallErr invokes a tool that must fail and returns its error.
func sxCallErr(t *testing.T, tool sdk.Tool, args string) *sdk.Error {
	t.Helper()
	return tooltest.CallErr(t, tool, args)
}

func sxItoa(n int) string { return strconv.Itoa(n) }

// sxJSON quotes a string as a JSON value.
func sxJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sxSIP builds a UDP packet carrying one SIP message written with "\n"
// line ends.
func sxSIP(ts time.Time, src, dst, msg string) *packet.Packet {
	return testengine.SIP(ts, src, dst, msg)
}

// sxUnfence strips the fence markers of one fenced field.
func sxUnfence(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(s, sdk.FenceOpen), sdk.FenceClose)
}

// sxUnfenceAll strips the markers of every field.
func sxUnfenceAll(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = sxUnfence(s)
	}
	return strings.Join(out, ",")
}
