package lint

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// t0 is the crafted dialogs' start time.
var t0 = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

var (
	addrA = netip.MustParseAddrPort("10.0.0.1:5060")
	addrB = netip.MustParseAddrPort("10.0.0.2:5060")
)

// mb builds one crafted SIP message: a valid default request or response
// that a case then breaks in exactly one way.
type mb struct {
	start  string
	prefix string // bytes before the start line (junk)
	hdrs   [][2]string
	body   string
	fromB  bool
	at     time.Duration
	atSet  bool
}

// req is a valid request from A (10.0.0.1) to B.
func req(method string) *mb {
	return &mb{start: method + " sip:bob@example.com SIP/2.0", hdrs: [][2]string{
		{"Via", "SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK" + strings.ToLower(method)},
		{"Max-Forwards", "70"},
		{"To", "Bob <sip:bob@example.com>"},
		{"From", "Alice <sip:alice@example.com>;tag=a1"},
		{"Call-ID", "call-1@example.com"},
		{"CSeq", "1 " + method},
		{"Contact", "<sip:alice@10.0.0.1:5060>"},
	}}
}

// resp is a valid response from B to A, in the transaction of the default
// request of method.
func resp(code int, reason, method string) *mb {
	return &mb{start: fmt.Sprintf("SIP/2.0 %d %s", code, reason), fromB: true, hdrs: [][2]string{
		{"Via", "SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK" + strings.ToLower(method)},
		{"To", "Bob <sip:bob@example.com>;tag=b1"},
		{"From", "Alice <sip:alice@example.com>;tag=a1"},
		{"Call-ID", "call-1@example.com"},
		{"CSeq", "1 " + method},
		{"Contact", "<sip:bob@10.0.0.2:5060>"},
	}}
}

// set replaces the first header of that name (case-insensitive), or adds it.
func (b *mb) set(name, value string) *mb {
	for i := range b.hdrs {
		if strings.EqualFold(b.hdrs[i][0], name) {
			b.hdrs[i][1] = value
			return b
		}
	}
	b.hdrs = append(b.hdrs, [2]string{name, value})
	return b
}

// del removes every header of that name.
func (b *mb) del(name string) *mb {
	out := b.hdrs[:0]
	for _, h := range b.hdrs {
		if !strings.EqualFold(h[0], name) {
			out = append(out, h)
		}
	}
	b.hdrs = out
	return b
}

// withSDP attaches an SDP body (LF lines become CRLF).
func (b *mb) withSDP(s string) *mb {
	b.set("Content-Type", "application/sdp")
	b.body = crlf(s)
	return b
}

// after places the message at t0 + d.
func (b *mb) after(d time.Duration) *mb {
	b.at, b.atSet = d, true
	return b
}

func crlf(s string) string { return strings.ReplaceAll(strings.TrimLeft(s, "\n"), "\n", "\r\n") }

// junk puts bytes before the start line.
func (b *mb) junk(prefix string) *mb {
	b.prefix = prefix
	return b
}

// text renders the message; Content-Length is computed unless set.
func (b *mb) text() string {
	var sb strings.Builder
	sb.WriteString(b.prefix + b.start + "\r\n")
	hasCL := false
	for _, h := range b.hdrs {
		if strings.EqualFold(h[0], "Content-Length") {
			hasCL = true
		}
		sb.WriteString(h[0] + ": " + h[1] + "\r\n")
	}
	if !hasCL {
		fmt.Fprintf(&sb, "Content-Length: %d\r\n", len(b.body))
	}
	sb.WriteString("\r\n" + b.body)
	return sb.String()
}

// msgs parses the builders into a dialog's messages: indexes in order,
// 100 ms apart unless placed, requests A→B, responses B→A.
func msgs(t testing.TB, bs ...*mb) []dialog.Message {
	t.Helper()
	out := make([]dialog.Message, len(bs))
	for i, b := range bs {
		m, err := sip.Parse([]byte(b.text()))
		if err != nil {
			t.Fatalf("message %d: %v\n%s", i, err, b.text())
		}
		at := time.Duration(i) * 100 * time.Millisecond
		if b.atSet {
			at = b.at
		}
		src, dst := addrA, addrB
		if b.fromB {
			src, dst = addrB, addrA
		}
		out[i] = dialog.Message{
			Msg: m, TS: t0.Add(at), Src: src, Dst: dst, Transport: packet.TransportUDP, Index: i,
			Frame: packet.FrameRef{Source: "crafted", Ordinal: uint64(i + 1)},
		}
	}
	return out
}

// sdpA and sdpB are valid SDP of A (media at 10.0.0.1:6000) and B
// (10.0.0.2:7000), PCMU only, with a version and extra media attributes.
func sdpA(version int, attrs ...string) string {
	return fmt.Sprintf("v=0\no=alice 2890844526 %d IN IP4 10.0.0.1\ns=-\nc=IN IP4 10.0.0.1\nt=0 0\nm=audio 6000 RTP/AVP 0\na=rtpmap:0 PCMU/8000\n%s",
		version, joinAttrs(attrs))
}

func sdpB(version int, attrs ...string) string {
	return fmt.Sprintf("v=0\no=bob 2808844564 %d IN IP4 10.0.0.2\ns=-\nc=IN IP4 10.0.0.2\nt=0 0\nm=audio 7000 RTP/AVP 0\na=rtpmap:0 PCMU/8000\n%s",
		version, joinAttrs(attrs))
}

func joinAttrs(attrs []string) string {
	var sb strings.Builder
	for _, a := range attrs {
		sb.WriteString(a + "\n")
	}
	return sb.String()
}

// call is a complete INVITE/200/ACK exchange with the given offer and answer.
func call(offer, answer string) []*mb {
	return []*mb{
		req("INVITE").withSDP(offer),
		resp(200, "OK", "INVITE").withSDP(answer),
		req("ACK"),
	}
}

// stream crafts an RTP stream of the dialog: packets of payloadBytes each,
// one every packetMs, starting 1 s after t0.
func stream(src, dst, codec string, pt int, packets uint64, payloadBytes uint64, packetMs float64) media.StreamInfo {
	first := t0.Add(time.Second)
	dur := float64(packets-1) * packetMs
	pms := packetMs
	return media.StreamInfo{
		SSRC: "0x11223344", Src: src, Dst: dst, Kind: "audio", Codec: codec, PayloadType: pt,
		PayloadTypes: []media.PTCount{{PayloadType: pt, Codec: codec, Packets: packets}},
		ClockRateHz:  8000, Packets: packets, Octets: packets * payloadBytes, Expected: int64(packets),
		PtimeMs: &pms, FirstSeen: first, LastSeen: first.Add(time.Duration(dur * float64(time.Millisecond))),
		DurationMs: dur, AssociatedDialog: "call-1@example.com", QualityIntervals: []media.Interval{},
	}
}
