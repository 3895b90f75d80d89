package decode

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/websocket"
)

// seg is one TCP segment of a scripted exchange.
type seg struct {
	fromServer bool
	seq        uint32
	flags      string
	data       string
}

const (
	client = "192.0.2.10:40000"
	server = "192.0.2.20:5060"
)

func sipWithBody(start, callID, body string) string {
	return fmt.Sprintf("%s\r\nVia: SIP/2.0/TCP 192.0.2.10:40000;branch=z9hG4bK%s\r\nCall-ID: %s\r\nCSeq: 1 INVITE\r\nContent-Type: application/sdp\r\nContent-Length: %d\r\n\r\n%s",
		start, callID, callID, len(body), body)
}

var (
	sdp   = "v=0\r\no=- 1 1 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n"
	mInv  = sipWithBody("INVITE sip:bob@example.com SIP/2.0", "tcp-1", sdp)
	m100  = "SIP/2.0 100 Trying\r\nCall-ID: tcp-1\r\nCSeq: 1 INVITE\r\nl: 0\r\n\r\n"
	mAck  = "ACK sip:bob@example.com SIP/2.0\r\nCall-ID: tcp-1\r\nCSeq: 1 ACK\r\nContent-Length:   0\r\n\r\n"
	iSeq  = uint32(1000)
	sSeq  = uint32(5000)
	lInv  = uint32(len(mInv))
	l100  = uint32(len(m100))
	wsKey = [4]byte{0x11, 0x22, 0x33, 0x44}
)

// scriptFrames turns segments into Ethernet frames between client and
// server ports cport and sport, one millisecond apart.
func scriptFrames(t *testing.T, cport, sport uint16, segs []seg) []*packet.Frame {
	var out []*packet.Frame
	for i, s := range segs {
		var b []byte
		if s.fromServer {
			b = tcpSegAddr(t, ipB, ipA, sport, cport, s.seq, s.flags, []byte(s.data))
		} else {
			b = tcpSegAddr(t, ipA, ipB, cport, sport, s.seq, s.flags, []byte(s.data))
		}
		f := frameAt(LinkEthernet, b, t0.Add(time.Duration(i)*time.Millisecond))
		f.Ordinal = uint64(i + 1)
		out = append(out, f)
	}
	return out
}

func wsFrame(fin bool, op websocket.Opcode, masked bool, payload string) string {
	var key *[4]byte
	if masked {
		key = &wsKey
	}
	return string(websocket.AppendFrame(nil, fin, op, key, []byte(payload)))
}

const (
	wsClient  = "192.0.2.10:40000"
	wsServer  = "192.0.2.20:8080"
	wsRequest = "GET /sip HTTP/1.1\r\nHost: ws.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: sip\r\nSec-WebSocket-Version: 13\r\n\r\n"
	wsResponse = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: sip\r\n\r\n"
)

func TestTCPReassembly(t *testing.T) {
	c2s := func(payload string, re bool) want { return want{client, server, packet.TransportTCP, payload, re} }
	s2c := func(payload string, re bool) want { return want{server, client, packet.TransportTCP, payload, re} }

	big := strings.Repeat("a=fmtp:101 0-15\r\n", 6000) // ~100 KB body
	mBig := sipWithBody("MESSAGE sip:bob@example.com SIP/2.0", "big", big)

	// A lost segment followed by more out-of-order segments than the queue holds.
	gapSegs := []seg{{false, iSeq, "PA", mInv}}
	lost := iSeq + lInv + l100 // m100's bytes never arrive
	var gapWant []want
	gapWant = append(gapWant, c2s(mInv, false))
	for i := 0; i < 70; i++ {
		gapSegs = append(gapSegs, seg{false, lost + uint32(i*len(mAck)), "PA", mAck})
		gapWant = append(gapWant, c2s(mAck, i < 64))
	}

	tests := []struct {
		name  string
		segs  []seg
		cfg   Config
		want  []want
		check func(t *testing.T, st Stats)
	}{
		{"several messages in one segment", []seg{{false, iSeq, "PA", mInv + m100 + mAck}}, Config{},
			[]want{c2s(mInv, false), c2s(m100, false), c2s(mAck, false)}, nil},
		{"one message across three segments", []seg{
			{false, iSeq, "A", mInv[:40]}, {false, iSeq + 40, "A", mInv[40:200]}, {false, iSeq + 200, "PA", mInv[200:]},
		}, Config{}, []want{c2s(mInv, true)}, nil},
		{"tail of a message and the next message in one segment", []seg{
			{false, iSeq, "A", mInv[:50]}, {false, iSeq + 50, "PA", mInv[50:] + m100},
		}, Config{}, []want{c2s(mInv, true), c2s(m100, false)}, nil},
		{"retransmitted segment counted once", []seg{
			{false, iSeq, "PA", mInv}, {false, iSeq, "PA", mInv}, {false, iSeq + lInv, "PA", m100},
		}, Config{}, []want{c2s(mInv, false), c2s(m100, false)},
			func(t *testing.T, st Stats) { eq(t, "retransmissions", st.TCPRetransmissions, 1) }},
		{"retransmission overlapping new bytes", []seg{
			{false, iSeq, "A", mInv[:30]}, {false, iSeq, "PA", mInv},
		}, Config{}, []want{c2s(mInv, true)},
			func(t *testing.T, st Stats) { eq(t, "overlaps", st.TCPOverlaps, 1) }},
		{"out-of-order messages", []seg{
			{false, iSeq - 1, "S", ""}, {false, iSeq + lInv, "PA", m100}, {false, iSeq, "PA", mInv},
		}, Config{}, []want{c2s(mInv, false), c2s(m100, true)},
			func(t *testing.T, st Stats) { eq(t, "out of order", st.TCPOutOfOrder, 1) }},
		{"out of order at the start of the capture", []seg{
			{false, iSeq + lInv, "PA", m100}, {false, iSeq, "PA", mInv}, {false, iSeq, "PA", mInv}, {false, iSeq + lInv + l100, "PA", mAck},
		}, Config{}, []want{c2s(m100, false), c2s(mInv, true), c2s(mAck, false)},
			func(t *testing.T, st Stats) {
				eq(t, "out of order", st.TCPOutOfOrder, 1)
				eq(t, "retransmissions", st.TCPRetransmissions, 1)
			}},
		{"out-of-order pieces of one message, one duplicated", []seg{
			{false, iSeq, "A", mInv[:40]}, {false, iSeq + 200, "PA", mInv[200:]}, {false, iSeq + 200, "PA", mInv[200:]}, {false, iSeq + 40, "A", mInv[40:200]},
		}, Config{}, []want{c2s(mInv, true)},
			func(t *testing.T, st Stats) { eq(t, "retransmissions", st.TCPRetransmissions, 1) }},
		{"SYN sets the sequence", []seg{{false, iSeq - 1, "S", ""}, {false, iSeq, "PA", m100}}, Config{}, []want{c2s(m100, false)}, nil},
		{"new connection on the same ports", []seg{
			{false, iSeq - 1, "S", ""}, {false, iSeq, "A", mInv[:20]}, {false, 90000, "S", ""}, {false, 90001, "PA", m100},
		}, Config{}, []want{c2s(mInv[:20], true), c2s(m100, false)},
			func(t *testing.T, st Stats) { eq(t, "incomplete", st.TCPIncomplete, 1) }},
		{"both directions", []seg{{false, iSeq, "PA", mInv}, {true, sSeq, "PA", m100}}, Config{},
			[]want{c2s(mInv, false), s2c(m100, false)}, nil},
		{"CRLF keep-alives", []seg{{false, iSeq, "PA", "\r\n\r\n"}, {false, iSeq + 4, "PA", m100}, {false, iSeq + 4 + l100, "PA", "\r\n"}}, Config{},
			[]want{c2s(m100, false)}, func(t *testing.T, st Stats) { eq(t, "keep-alives", st.TCPKeepalives, 2) }},
		{"HTTP on the SIP port is not SIP", []seg{{false, iSeq, "PA", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"}}, Config{},
			[]want{c2s("GET / HTTP/1.1\r\nHost: x\r\n\r\n", false)}, nil},
		{"junk before a message", []seg{{false, iSeq, "PA", "garbage\r\nmore garbage\r\n" + m100}}, Config{},
			[]want{c2s("garbage\r\nmore garbage\r\n", false), c2s(m100, false)}, nil},
		{"FIN flushes an unfinished message", []seg{{false, iSeq, "A", mInv[:40]}, {false, iSeq + 40, "FA", ""}}, Config{},
			[]want{c2s(mInv[:40], true)}, func(t *testing.T, st Stats) { eq(t, "incomplete", st.TCPIncomplete, 1) }},
		{"Flush emits an unfinished message", []seg{{false, iSeq, "A", mInv[:40]}}, Config{},
			[]want{c2s(mInv[:40], true)}, nil},
		{"a message larger than the stream buffer is flushed", []seg{
			{false, iSeq, "A", mBig[:30000]}, {false, iSeq + 30000, "A", mBig[30000:60000]}, {false, iSeq + 60000, "A", mBig[60000:90000]},
		}, Config{}, []want{c2s(mBig[:90000], true)},
			func(t *testing.T, st Stats) { eq(t, "overflow flushes", st.TCPOverflowFlushes, 1) }},
		{"a lost segment is skipped once the queue is full", gapSegs, Config{}, gapWant,
			func(t *testing.T, st Stats) { eq(t, "gaps", st.TCPGaps, 1) }},
		{"pure ACK of an unknown stream", []seg{{false, iSeq, "A", ""}}, Config{}, nil,
			func(t *testing.T, st Stats) { eq(t, "streams", st.TCPStreams, 0) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, st := decodeAll(t, scriptFrames(t, 40000, 5060, tc.segs), tc.cfg)
			checkPackets(t, c.pkts, tc.want)
			checkUndecodable(t, st, nil)
			if tc.check != nil {
				tc.check(t, st)
			}
		})
	}
}

func TestHEP3OverTCP(t *testing.T) {
	var env [3][]byte
	for i := range env {
		b, err := hep.Encode(&hep.Message{Version: 3, Protocol: 17, Src: ap("10.0.0.1:5060"), Dst: ap("10.0.0.2:5060"),
			ProtoType: hep.ProtoSIP, HasAgentID: true, AgentID: uint32(i), Payload: []byte(m100)})
		if err != nil {
			t.Fatal(err)
		}
		env[i] = b
	}
	stream := string(env[0]) + string(env[1]) + string(env[2][:10])
	segs := []seg{{false, iSeq, "PA", stream}, {false, iSeq + uint32(len(stream)), "PA", string(env[2][10:])}}
	c, st := decodeAll(t, scriptFrames(t, 40000, 9060, segs), Config{})
	cli, srv := client, "192.0.2.20:9060"
	checkPackets(t, c.pkts, []want{
		{cli, srv, packet.TransportTCP, string(env[0]), false},
		{cli, srv, packet.TransportTCP, string(env[1]), false},
		{cli, srv, packet.TransportTCP, string(env[2]), true},
	})
	checkUndecodable(t, st, nil)
	for i, p := range c.pkts {
		m, err := hep.Decode(p.Payload)
		if err != nil || m.AgentID != uint32(i) || string(m.Payload) != m100 {
			t.Fatalf("envelope %d: got %+v, %v", i, m, err)
		}
	}
}

func TestWebSocket(t *testing.T) {
	hs := func() []seg {
		return []seg{{false, iSeq, "PA", wsRequest}, {true, sSeq, "PA", wsResponse}}
	}
	cSeq := iSeq + uint32(len(wsRequest))
	sSeq2 := sSeq + uint32(len(wsResponse))
	upgrade := []want{
		{wsClient, wsServer, packet.TransportTCP, wsRequest, false},
		{wsServer, wsClient, packet.TransportTCP, wsResponse, false},
	}
	wc := func(payload string, re bool) want { return want{wsClient, wsServer, packet.TransportWS, payload, re} }
	ws := func(payload string, re bool) want { return want{wsServer, wsClient, packet.TransportWS, payload, re} }

	frag := wsFrame(false, websocket.OpText, true, mInv[:100]) + wsFrame(true, websocket.OpPing, true, "hi") +
		wsFrame(false, websocket.OpContinuation, true, mInv[100:200]) + wsFrame(true, websocket.OpContinuation, true, mInv[200:])
	masked := wsFrame(true, websocket.OpText, true, mInv)
	long := sipWithBody("MESSAGE sip:bob@example.com SIP/2.0", "ws-long", strings.Repeat("x", 300))
	tooBig := wsFrame(true, websocket.OpText, true, strings.Repeat("y", 200))

	tests := []struct {
		name  string
		segs  []seg
		cfg   Config
		want  []want
		check func(t *testing.T, st Stats)
	}{
		{"masked client frame and unmasked server frame", append(hs(),
			seg{false, cSeq, "PA", masked}, seg{true, sSeq2, "PA", wsFrame(true, websocket.OpText, false, m100)}),
			Config{}, append(upgrade, wc(mInv, false), ws(m100, false)),
			func(t *testing.T, st Stats) {
				eq(t, "handshakes", st.WSHandshakes, 2)
				eq(t, "messages", st.WSMessages, 2)
			}},
		{"fragmented message with a ping in between", append(hs(), seg{false, cSeq, "PA", frag}),
			Config{}, append(upgrade, wc(mInv, true)),
			func(t *testing.T, st Stats) { eq(t, "control frames", st.WSControlFrames, 1) }},
		{"frame split across segments", append(hs(), seg{false, cSeq, "A", masked[:30]}, seg{false, cSeq + 30, "PA", masked[30:]}),
			Config{}, append(upgrade, wc(mInv, true)), nil},
		{"two frames in one segment, 16-bit length", append(hs(), seg{true, sSeq2, "PA", wsFrame(true, websocket.OpText, false, long) + wsFrame(true, websocket.OpBinary, false, m100)}),
			Config{}, append(upgrade, ws(long, false), ws(m100, false)), nil},
		{"frame over the payload limit is declined", append(hs(), seg{false, cSeq, "PA", tooBig + wsFrame(true, websocket.OpText, true, m100)}),
			Config{MaxWSPayload: 100}, append(upgrade, wc(m100, false)),
			func(t *testing.T, st Stats) { eq(t, "declined", st.WSDeclined, 1) }},
		{"frame over the limit arriving in pieces is skipped", append(hs(), seg{false, cSeq, "A", tooBig[:50]}, seg{false, cSeq + 50, "A", tooBig[50:]}, seg{false, cSeq + uint32(len(tooBig)), "PA", wsFrame(true, websocket.OpText, true, m100)}),
			Config{MaxWSPayload: 100}, append(upgrade, wc(m100, false)),
			func(t *testing.T, st Stats) {
				eq(t, "declined", st.WSDeclined, 1)
				if len(st.WSDeclinedPorts) != 1 || st.WSDeclinedPorts[0] != (PortCount{Port: 8080, Count: 1}) {
					t.Errorf("got declined ports %v, want [{8080 1}]", st.WSDeclinedPorts)
				}
			}},
		{"close frame skipped", append(hs(), seg{false, cSeq, "PA", wsFrame(true, websocket.OpClose, true, "\x03\xe8") + masked}),
			Config{}, append(upgrade, wc(mInv, false)), nil},
		{"frames without a captured handshake", []seg{{true, sSeq, "PA", wsFrame(true, websocket.OpText, false, m100)}, {false, iSeq, "PA", masked}},
			Config{}, []want{ws(m100, false), wc(mInv, false)}, nil},
		{"reserved bits end WebSocket framing", append(hs(), seg{false, cSeq, "PA", "\xc1\x02hi"}),
			Config{}, append(upgrade, want{wsClient, wsServer, packet.TransportTCP, "\xc1\x02hi", false}),
			func(t *testing.T, st Stats) { eq(t, "declined", st.WSDeclined, 1) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, st := decodeAll(t, scriptFrames(t, 40000, 8080, tc.segs), tc.cfg)
			checkPackets(t, c.pkts, tc.want)
			checkUndecodable(t, st, nil)
			if tc.check != nil {
				tc.check(t, st)
			}
		})
	}
}

func TestTCPOverIPv4Fragments(t *testing.T) {
	b := tcpSeg(t, 40000, 5060, iSeq, "PA", []byte(mInv))
	body := b[14+20:]
	c, st := decodeAll(t, frames(LinkEthernet, fragments4(t, layers.IPProtocolTCP, 9, body, 128)...), Config{})
	checkPackets(t, c.pkts, []want{{client, server, packet.TransportTCP, mInv, true}})
	eq(t, "reassembled", st.DatagramsReassembled, 1)
}

// TestHEP3MidStream: a capture that starts inside a HEP3 stream finds the
// next envelope after the cut.
func TestHEP3MidStream(t *testing.T) {
	var stream []byte
	var env [][]byte
	for i := range 3 {
		b, err := hep.Encode(&hep.Message{Version: 3, Protocol: 17, Src: ap("10.0.0.1:5060"), Dst: ap("10.0.0.2:5060"),
			ProtoType: hep.ProtoSIP, HasAgentID: true, AgentID: uint32(i), Payload: []byte(m100)})
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, b)
		stream = append(stream, b...)
	}
	// The capture starts 20 bytes into the first envelope; the second one is
	// cut by the segment boundary.
	cut := len(env[0]) + 30
	segs := []seg{{false, iSeq, "PA", string(stream[20:cut])}, {false, iSeq + uint32(cut-20), "PA", string(stream[cut:])}}
	c, _ := decodeAll(t, scriptFrames(t, 40000, 9060, segs), Config{})
	srv := "192.0.2.20:9060"
	checkPackets(t, c.pkts, []want{
		{client, srv, packet.TransportTCP, string(env[0][20:]), false},
		{client, srv, packet.TransportTCP, string(env[1]), true},
		{client, srv, packet.TransportTCP, string(env[2]), false},
	})
}
