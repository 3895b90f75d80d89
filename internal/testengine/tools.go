package testengine

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/sdk"
)

// SIPPacket builds a UDP packet (seen on the wire) carrying one SIP
// message written with "\n" line ends, which become "\r\n".
func SIPPacket(ts time.Time, src, dst, msg string) *packet.Packet {
	return &packet.Packet{
		TS: ts, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
		Transport: packet.TransportUDP, Origin: packet.OriginWire,
		Payload: []byte(strings.ReplaceAll(msg, "\n", "\r\n")),
	}
}

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
