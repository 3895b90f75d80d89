package media

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// load runs a public capture through the engine to its end.
func load(t *testing.T, name string) *engine.Capture {
	t.Helper()
	return loadWith(t, engine.Config{Node: "test"}, name)
}

// loadWith runs a public capture through an engine configured with cfg.
func loadWith(t *testing.T, cfg engine.Config, name string) *engine.Capture {
	t.Helper()
	return testengine.Load(t, cfg, testcap.Public(name))
}

// call invokes a tool through the sdk's public path with limits and decodes
// its answer into into (when not nil).
func callWith(t *testing.T, tool sdk.Tool, args string, lim sdk.Limits, into any) sdk.Reply {
	t.Helper()
	r, err := tool.Invoke(context.Background(), json.RawMessage(args), lim)
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

func call(t *testing.T, tool sdk.Tool, args string, into any) sdk.Reply {
	t.Helper()
	return callWith(t, tool, args, sdk.DefaultLimits(), into)
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

// quote writes a string as a JSON value.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// unfence strips the fence markers of one fenced field.
func unfence(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(s, sdk.FenceOpen), sdk.FenceClose)
}

// rtpPacket builds one RTP packet (RFC 3550 §5.1: version 2, no padding,
// extension or CSRC) from src to dst, 160 payload bytes, with the IP
// header's DSCP.
func rtpPacket(ts time.Time, src, dst string, pt uint8, seq uint16, rtpTS, ssrc uint32, dscp uint8) *packet.Packet {
	b := make([]byte, 12+160)
	b[0] = 0x80
	b[1] = pt
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[4:], rtpTS)
	binary.BigEndian.PutUint32(b[8:], ssrc)
	return &packet.Packet{TS: ts, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
		Transport: packet.TransportUDP, Origin: packet.OriginWire, Payload: b, DSCP: dscp, HasDSCP: true}
}

// invite is an INVITE from 192.0.2.10 offering PCMU at 192.0.2.10:4000
// under Call-ID callID.
func invite(callID string) string {
	body := "v=0\no=- 1 1 IN IP4 192.0.2.10\ns=-\nc=IN IP4 192.0.2.10\nt=0 0\nm=audio 4000 RTP/AVP 0\na=rtpmap:0 PCMU/8000\n"
	body = strings.ReplaceAll(body, "\n", "\r\n")
	return "INVITE sip:bob@198.51.100.20 SIP/2.0\nVia: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK-1\nFrom: <sip:alice@192.0.2.10>;tag=a1\n" +
		"To: <sip:bob@198.51.100.20>\nCall-ID: " + callID + "\nCSeq: 1 INVITE\nContact: <sip:alice@192.0.2.10>\nMax-Forwards: 70\n" +
		"Content-Type: application/sdp\nContent-Length: " + strconv.Itoa(len(body)) + "\n\n" + strings.ReplaceAll(body, "\r\n", "\n")
}

// testCallIDRefusals checks a call_id tool's refusals on the sample
// capture: an empty call_id is missing_argument, a Call-ID the capture
// does not hold unknown_id, both -32602 naming call_id.
func testCallIDRefusals(t *testing.T, mk func(*deps) sdk.Tool) {
	t.Helper()
	c := load(t, "sip-rtp-g711.pcap")
	for _, tc := range []struct {
		args string
		kind sdk.Kind
	}{
		{`{"call_id":""}`, sdk.KindMissingArgument},
		{`{"call_id":"no-such-call"}`, sdk.KindUnknownID},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			e := callErr(t, mk(&deps{capture: c}), tc.args)
			if e.Code != sdk.CodeInvalidParams || e.Kind != tc.kind || e.Argument != "call_id" {
				t.Errorf("got %d %s %q, want -32602 %s on call_id", e.Code, e.Kind, e.Argument, tc.kind)
			}
		})
	}
}
