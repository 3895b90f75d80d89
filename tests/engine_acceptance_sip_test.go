package tests

// Engine I acceptance on captures written by the test: SIP recognized by
// content on any port, the parser's tolerance and limits, TCP and
// WebSocket framing, every encapsulation of the issue and every source
// format, each asserting exact message counts.

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/sipnab/sipnab/core/report"
)

const (
	accA = "192.0.2.10:5060"
	accB = "192.0.2.20:5060"
)

func accAt(ms int) time.Time { return accT0.Add(time.Duration(ms) * time.Millisecond) }

// accUDPFrames turns (src, dst, payload) triples into Ethernet frames 10 ms
// apart.
func accUDPFrames(t *testing.T, msgs ...any) []accFrame {
	t.Helper()
	var out []accFrame
	for i := 0; i+2 < len(msgs); i += 3 {
		out = append(out, accFrame{accAt(10 * len(out)), accIPEth(accUDP(t, msgs[i].(string), msgs[i+1].(string), msgs[i+2].([]byte)))})
	}
	return out
}

type accSIPCase struct {
	name   string
	frames func(t *testing.T) []accFrame
	// want: SIP messages, dialogs, malformed messages, messages without a
	// Call-ID.
	msgs, dialogs, malformed, noCallID uint64
	check                              func(t *testing.T, doc report.Document)
}

func TestEngineAcceptanceSIPByContent(t *testing.T) {
	invite := accReq("INVITE", "odd-port@a.example", 1, "", "")
	bigSubject := "Subject: " + strings.Repeat("s", 10*1024)
	var many []string
	for i := 0; i < 250; i++ {
		many = append(many, fmt.Sprintf("X-Hdr-%d: %d", i, i))
	}
	compact := "INVITE sip:bob@b.example SIP/2.0\r\n" +
		"v: SIP/2.0/UDP a.example;branch=z9hG4bK-compact\r\n" +
		"f: <sip:alice@a.example>;tag=at1\r\n" +
		"t: <sip:bob@b.example>\r\n" +
		"i: compact@a.example\r\n" +
		"CSeq: 1 INVITE\r\n" +
		"m: <sip:alice@a.example>\r\n" +
		"Subject: a subject\r\n  folded onto a second line\r\n" +
		"Route: <sip:p1.example;lr>, <sip:p2.example;lr>\r\n" +
		"Route: <sip:p3.example;lr>\r\n" +
		"l: 0\r\n\r\n"
	noCallID := strings.Replace(string(accReq("OPTIONS", "x", 1, "", "")), "Call-ID: x\r\n", "", 1)
	lying := strings.Replace(string(accReq("MESSAGE", "lying@a.example", 1, "", "hello")), "Content-Length: 5", "Content-Length: 500", 1)

	cases := []accSIPCase{
		{name: "SIP on ports that are no SIP port", frames: func(t *testing.T) []accFrame {
			return accUDPFrames(t,
				"198.51.100.1:40000", "198.51.100.2:40002", invite,
				"198.51.100.2:40002", "198.51.100.1:40000", accResp(200, "OK", "INVITE", "odd-port@a.example", 1, ""),
				"198.51.100.1:40000", "198.51.100.2:40002", accReq("ACK", "odd-port@a.example", 1, "bt1", ""))
		}, msgs: 3, dialogs: 1, check: func(t *testing.T, doc report.Document) {
			if d := doc.Dialogs[0]; d.State != "InCall" || d.FinalStatusCode != 200 || d.MsgCount != 3 {
				t.Errorf("got %s %d %d messages, want InCall 200 3", d.State, d.FinalStatusCode, d.MsgCount)
			}
		}},
		{name: "HTTP on 5060 is not SIP", frames: func(t *testing.T) []accFrame {
			return append(accUDPFrames(t,
				"198.51.100.1:40000", accB, []byte("GET /index.html HTTP/1.1\r\nHost: b.example\r\n\r\n"),
				accB, "198.51.100.1:40000", []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
				"198.51.100.1:40001", accB, []byte("POST /sip HTTP/1.0\r\nContent-Length: 4\r\n\r\nSIP/")),
				accFrame{accAt(100), accIPEth(accTCP(t, "198.51.100.1:40003", accB, 1, false, []byte("GET / HTTP/1.1\r\nHost: b.example\r\nUser-Agent: INVITE sip:x SIP/2.0\r\n\r\n")))})
		}},
		{name: "keepalives on 5060 are not SIP", frames: func(t *testing.T) []accFrame {
			return accUDPFrames(t,
				accA, accB, []byte("\r\n\r\n"),
				accB, accA, []byte("\r\n"),
				accA, accB, []byte("\x00\x00\x00\x00\x00"),
				accA, accB, []byte("hello"),
				accA, accB, []byte("ping\n"),
				accA, accB, []byte("jaK\n\n"))
		}},
		{name: "junk before the request line", frames: func(t *testing.T) []accFrame {
			return accUDPFrames(t, accA, accB, append([]byte("\r\n\r\n"), accReq("OPTIONS", "junk@a.example", 1, "", "")...))
		}, msgs: 1, dialogs: 1},
		{name: "compact forms, folded and repeated headers", frames: func(t *testing.T) []accFrame {
			return accUDPFrames(t, accA, accB, []byte(compact))
		}, msgs: 1, dialogs: 1, check: func(t *testing.T, doc report.Document) {
			if doc.Dialogs[0].CallID != "compact@a.example" || doc.Dialogs[0].Method != "INVITE" {
				t.Errorf("got %q %s, want compact@a.example INVITE", doc.Dialogs[0].CallID, doc.Dialogs[0].Method)
			}
		}},
		{name: "a message without Call-ID is kept and counted", frames: func(t *testing.T) []accFrame {
			return accUDPFrames(t, accA, accB, []byte(noCallID))
		}, msgs: 1, malformed: 1, noCallID: 1},
		{name: "a Content-Length that lies", frames: func(t *testing.T) []accFrame {
			return accUDPFrames(t, accA, accB, []byte(lying))
		}, msgs: 1, dialogs: 1, malformed: 1},
		{name: "more than 200 headers", frames: func(t *testing.T) []accFrame {
			return accUDPFrames(t, accA, accB, accReq("OPTIONS", "many@a.example", 1, "", "", many...))
		}, msgs: 1, dialogs: 1, malformed: 1},
		{name: "a header line over 8 KiB", frames: func(t *testing.T) []accFrame {
			// 10 KiB of Subject does not fit a datagram: IPv4 fragments.
			ip := accUDP(t, accA, accB, accReq("OPTIONS", "longline@a.example", 1, "", "", bigSubject))
			var out []accFrame
			for i, f := range accFragments(t, ip, 1480) {
				out = append(out, accFrame{accAt(i), accEth(0x0800, f)})
			}
			return out
		}, msgs: 1, dialogs: 1, malformed: 1},
		{name: "two messages in one datagram", frames: func(t *testing.T) []accFrame {
			two := append(accReq("OPTIONS", "two-a@a.example", 1, "", ""), accReq("OPTIONS", "two-b@a.example", 1, "", "")...)
			return accUDPFrames(t, accA, accB, two)
		}, msgs: 2, dialogs: 2},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := accWrite(t, dir, fmt.Sprintf("case%d.pcap", i), layers.LinkTypeEthernet, tc.frames(t))
			_, doc := accLoad(t, p)
			r := doc.Run
			if r.SIPMessages != tc.msgs || uint64(len(doc.Dialogs)) != tc.dialogs || r.SIPMalformed != tc.malformed || r.SIPWithoutCallID != tc.noCallID {
				t.Fatalf("got %d messages, %d dialogs, %d malformed, %d without Call-ID; want %d, %d, %d, %d",
					r.SIPMessages, len(doc.Dialogs), r.SIPMalformed, r.SIPWithoutCallID, tc.msgs, tc.dialogs, tc.malformed, tc.noCallID)
			}
			if !r.Complete {
				t.Errorf("run not complete")
			}
			if tc.check != nil {
				tc.check(t, doc)
			}
		})
	}
}

// accCall is the INVITE / 100 / 180 / 200 / ACK / BYE / 200 of one Call-ID
// between A and B, as (src, dst, payload) triples.
func accCall(callID string) [][3]any {
	offer := accSDP("192.0.2.10", 16000, "0")
	answer := accSDP("192.0.2.20", 20000, "0")
	return [][3]any{
		{accA, accB, accReq("INVITE", callID, 1, "", offer)},
		{accB, accA, accResp(100, "Trying", "INVITE", callID, 1, "")},
		{accB, accA, accResp(180, "Ringing", "INVITE", callID, 1, "")},
		{accB, accA, accResp(200, "OK", "INVITE", callID, 1, answer)},
		{accA, accB, accReq("ACK", callID, 1, "bt1", "")},
		{accA, accB, accReq("BYE", callID, 2, "bt1", "")},
		{accB, accA, accResp(200, "OK", "BYE", callID, 2, "")},
	}
}

// TestEngineAcceptanceEncapsulations carries one whole call (7 messages)
// through every encapsulation of the issue, written to a capture of the
// matching link type, and expects exactly 7 SIP messages and a Completed
// call each time.
func TestEngineAcceptanceEncapsulations(t *testing.T) {
	type wrap struct {
		name string
		lt   layers.LinkType
		// frames wraps one IPv4 packet (the call's datagram, or a
		// fragment) into the frames that carry it.
		frame func(t *testing.T, ip []byte, src, dst string, payload []byte) [][]byte
		hep   bool // the payload travels in a HEP envelope
	}
	eth := func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte { return [][]byte{accIPEth(ip)} }
	gre := func(proto uint16, seq bool, hdr []byte) []byte {
		b := []byte{0, 0}
		if seq {
			b[0] = 0x10
		}
		b = binary.BigEndian.AppendUint16(b, proto)
		if seq {
			b = binary.BigEndian.AppendUint32(b, 7)
		}
		return append(b, hdr...)
	}
	erspan3 := []byte{0x20, 0x64, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0} // version 2, VLAN 100, session 1
	cases := []wrap{
		{name: "Ethernet", lt: layers.LinkTypeEthernet, frame: eth},
		{name: "802.1Q", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			return [][]byte{accEth(0x8100, append(accTag(100, 0x0800), ip...))}
		}},
		{name: "QinQ", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			return [][]byte{accEth(0x88A8, append(append(accTag(10, 0x8100), accTag(20, 0x0800)...), ip...))}
		}},
		{name: "IPv6", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, _ []byte, src, dst string, payload []byte) [][]byte {
			m := map[string]string{accA: "[2001:db8::10]:5060", accB: "[2001:db8::20]:5060"}
			return [][]byte{accIPEth(accUDP(t, m[src], m[dst], payload))}
		}},
		{name: "IPv4 fragments", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			var out [][]byte
			for _, f := range accFragments(t, ip, 256) {
				out = append(out, accEth(0x0800, f))
			}
			// reversed: reassembly does not need order
			for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
				out[i], out[j] = out[j], out[i]
			}
			return out
		}},
		{name: "IP in IP", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			return [][]byte{accEth(0x0800, accIPv4Proto(t, "203.0.113.1", "203.0.113.2", layers.IPProtocolIPv4, ip))}
		}},
		{name: "GRE", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			return [][]byte{accEth(0x0800, accIPv4Proto(t, "203.0.113.1", "203.0.113.2", layers.IPProtocolGRE, gre(0x0800, false, ip)))}
		}},
		{name: "ERSPAN type II", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			e2 := append([]byte{0x10, 0x64, 0x00, 0x01, 0, 0, 0, 0}, accIPEth(ip)...)
			return [][]byte{accEth(0x0800, accIPv4Proto(t, "203.0.113.1", "203.0.113.2", layers.IPProtocolGRE, gre(0x88BE, true, e2)))}
		}},
		{name: "ERSPAN type III", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			e3 := append(append([]byte(nil), erspan3...), accIPEth(ip)...)
			return [][]byte{accEth(0x0800, accIPv4Proto(t, "203.0.113.1", "203.0.113.2", layers.IPProtocolGRE, gre(0x22EB, true, e3)))}
		}},
		{name: "VXLAN", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			vx := append([]byte{0x08, 0, 0, 0, 0, 0, 0x2a, 0}, accIPEth(ip)...)
			return [][]byte{accIPEth(accUDP(t, "203.0.113.1:49152", "203.0.113.2:4789", vx))}
		}},
		{name: "SCTP DATA", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, _ []byte, src, dst string, payload []byte) [][]byte {
			s, d := accAP(src), accAP(dst)
			return [][]byte{accEth(0x0800, accIPv4Proto(t, s.Addr().String(), d.Addr().String(), layers.IPProtocolSCTP, accSCTP(s.Port(), d.Port(), payload)))}
		}},
		{name: "Linux SLL", lt: layers.LinkTypeLinuxSLL, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			h := []byte{0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 0x0a, 0, 0, 0x08, 0x00}
			return [][]byte{append(h, ip...)}
		}},
		{name: "Linux SLL2", lt: 276, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			h := []byte{0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 0x0a, 0, 0}
			return [][]byte{append(h, ip...)}
		}},
		{name: "BSD NULL", lt: layers.LinkTypeNull, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			return [][]byte{append([]byte{2, 0, 0, 0}, ip...)}
		}},
		{name: "OpenBSD LOOP", lt: layers.LinkTypeLoop, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			return [][]byte{append([]byte{0, 0, 0, 2}, ip...)}
		}},
		{name: "raw IPv4", lt: layers.LinkTypeRaw, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			return [][]byte{ip}
		}},
		{name: "raw IPv6 (229)", lt: 229, frame: func(t *testing.T, _ []byte, src, dst string, payload []byte) [][]byte {
			m := map[string]string{accA: "[2001:db8::10]:5060", accB: "[2001:db8::20]:5060"}
			return [][]byte{accUDP(t, m[src], m[dst], payload)}
		}},
		{name: "HEP3 in UDP", lt: layers.LinkTypeEthernet, hep: true, frame: func(t *testing.T, _ []byte, src, dst string, payload []byte) [][]byte {
			return [][]byte{accIPEth(accUDP(t, "203.0.113.5:40000", "203.0.113.9:9060", accHEP3(t, src, dst, accT0, payload, false)))}
		}},
		{name: "HEP3 with zlib-compressed payload", lt: layers.LinkTypeEthernet, hep: true, frame: func(t *testing.T, _ []byte, src, dst string, payload []byte) [][]byte {
			return [][]byte{accIPEth(accUDP(t, "203.0.113.5:40000", "203.0.113.9:9060", accHEP3(t, src, dst, accT0, payload, true)))}
		}},
		{name: "HEP2 in UDP", lt: layers.LinkTypeEthernet, hep: true, frame: func(t *testing.T, _ []byte, src, dst string, payload []byte) [][]byte {
			return [][]byte{accIPEth(accUDP(t, "203.0.113.5:40000", "203.0.113.9:9060", accHEP2(src, dst, accT0, payload)))}
		}},
	}
	call := accCall("encap@a.example")
	dir := t.TempDir()
	for i, w := range cases {
		t.Run(w.name, func(t *testing.T) {
			var frames []accFrame
			for j, m := range call {
				src, dst, payload := m[0].(string), m[1].(string), m[2].([]byte)
				for _, f := range w.frame(t, accUDP(t, src, dst, payload), src, dst, payload) {
					frames = append(frames, accFrame{accAt(100*j + len(frames)), f})
				}
			}
			p := accWrite(t, dir, fmt.Sprintf("encap%d.pcap", i), w.lt, frames)
			_, doc := accLoad(t, p)
			r := doc.Run
			if r.SIPMessages != 7 || len(doc.Dialogs) != 1 || r.UndecodableFrames != 0 {
				t.Fatalf("got %d SIP messages, %d dialogs, undecodable %v; want 7, 1, none", r.SIPMessages, len(doc.Dialogs), r.Undecodable)
			}
			if d := doc.Dialogs[0]; d.State != "Completed" || d.FinalStatusCode != 200 || d.MsgCount != 7 {
				t.Errorf("got %s %d with %d messages, want Completed 200 with 7", d.State, d.FinalStatusCode, d.MsgCount)
			}
			if w.hep && (r.HEP.Envelopes != 7 || r.HEP.SIP != 7 || doc.Dialogs[0].InputOrigin != "hep") {
				t.Errorf("got %d HEP envelopes (%d SIP), origin %q; want 7, 7, hep", r.HEP.Envelopes, r.HEP.SIP, doc.Dialogs[0].InputOrigin)
			}
		})
	}
}

// TestEngineAcceptanceTCPAndWebSocket: SIP over TCP (one message across
// three segments, two messages in one segment, a retransmitted segment
// counted once, HEP3 envelopes in a TCP stream) and over WebSocket (the
// upgrade, a masked client frame and an unmasked server frame).
func TestEngineAcceptanceTCPAndWebSocket(t *testing.T) {
	const cA, cB = "192.0.2.10:50123", "192.0.2.20:5060"
	id := "tcp@a.example"
	inv := accReq("INVITE", id, 1, "", accSDP("192.0.2.10", 16000, "0"))
	two := append(accResp(100, "Trying", "INVITE", id, 1, ""), accResp(180, "Ringing", "INVITE", id, 1, "")...)
	ok := accResp(200, "OK", "INVITE", id, 1, accSDP("192.0.2.20", 20000, "0"))
	ack := accReq("ACK", id, 1, "bt1", "")
	n1, n2 := len(inv)/3, 2*len(inv)/3
	seqA, seqB := uint32(1000), uint32(5000)
	seg := func(ms int, src, dst string, seq uint32, syn bool, p []byte) accFrame {
		return accFrame{accAt(ms), accEth(0x0800, accTCP(t, src, dst, seq, syn, p))}
	}
	tcp := []accFrame{
		seg(0, cA, cB, seqA-1, true, nil),
		seg(1, cB, cA, seqB-1, true, nil),
		seg(2, cA, cB, seqA, false, inv[:n1]),
		seg(3, cA, cB, seqA+uint32(n1), false, inv[n1:n2]),
		seg(4, cA, cB, seqA+uint32(n1), false, inv[n1:n2]), // retransmitted
		seg(5, cA, cB, seqA+uint32(n2), false, inv[n2:]),
		seg(6, cB, cA, seqB, false, two),
		seg(7, cB, cA, seqB+uint32(len(two)), false, ok),
		seg(8, cB, cA, seqB+uint32(len(two)), false, ok), // retransmitted
		seg(9, cA, cB, seqA+uint32(len(inv)), false, ack),
	}

	const wA, wB = "192.0.2.11:50200", "192.0.2.21:8080"
	wid := "ws@a.example"
	up := []byte("GET / HTTP/1.1\r\nHost: b.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: sip\r\nSec-WebSocket-Version: 13\r\n\r\n")
	upOK := []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: sip\r\n\r\n")
	wsInv := accWSFrame(accReq("INVITE", wid, 1, "", ""), []byte{1, 2, 3, 4})
	wsOK := accWSFrame(accResp(200, "OK", "INVITE", wid, 1, ""), nil)
	ws := []accFrame{
		seg(20, wA, wB, 99, true, nil),
		seg(21, wB, wA, 199, true, nil),
		seg(22, wA, wB, 100, false, up),
		seg(23, wB, wA, 200, false, upOK),
		seg(24, wA, wB, 100+uint32(len(up)), false, wsInv[:10]), // a frame across two segments
		seg(25, wA, wB, 110+uint32(len(up)), false, wsInv[10:]),
		seg(26, wB, wA, 200+uint32(len(upOK)), false, wsOK),
	}

	const hA, hB = "203.0.113.5:41000", "203.0.113.9:9060"
	h1 := accHEP3(t, accA, accB, accT0, accReq("OPTIONS", "hep-tcp@a.example", 1, "", ""), false)
	h2 := accHEP3(t, accB, accA, accT0, accResp(200, "OK", "OPTIONS", "hep-tcp@a.example", 1, ""), true)
	hepTCP := []accFrame{
		seg(30, hA, hB, 9, true, nil),
		seg(31, hA, hB, 10, false, append(append([]byte(nil), h1...), h2[:7]...)),
		seg(32, hA, hB, 10+uint32(len(h1)+7), false, h2[7:]),
	}

	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		frames  []accFrame
		msgs    uint64
		callID  string
		final   int
		retrans uint64
	}{
		{"TCP", tcp, 5, id, 200, 0},
		{"WebSocket", ws, 2, wid, 200, 0},
		{"HEP3 over TCP", hepTCP, 2, "hep-tcp@a.example", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := accWrite(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".pcap", layers.LinkTypeEthernet, tc.frames)
			_, doc := accLoad(t, p)
			r := doc.Run
			if r.SIPMessages != tc.msgs || r.SIPRetransmissions != tc.retrans || len(doc.Dialogs) != 1 {
				t.Fatalf("got %d messages (%d retransmissions), %d dialogs; want %d (%d), 1", r.SIPMessages, r.SIPRetransmissions, len(doc.Dialogs), tc.msgs, tc.retrans)
			}
			if d := doc.Dialogs[0]; d.CallID != tc.callID || d.FinalStatusCode != tc.final || d.MsgCount != int(tc.msgs) {
				t.Errorf("got %s final %d with %d messages, want %s %d %d", d.CallID, d.FinalStatusCode, d.MsgCount, tc.callID, tc.final, tc.msgs)
			}
		})
	}
}

// TestEngineAcceptanceSourceFormats writes one call as pcap (microsecond
// and nanosecond, both byte orders) and as pcapng with two interfaces of
// different link types, and reads each (and each gzip-compressed) with
// the timestamps to the resolution of the format.
func TestEngineAcceptanceSourceFormats(t *testing.T) {
	call := accCall("formats@a.example")
	var frames []accFrame
	for j, m := range call {
		// 123456789 ns past each 100 ms step: microsecond files keep 123456 µs.
		ts := accT0.Add(time.Duration(j)*100*time.Millisecond + 123456789)
		frames = append(frames, accFrame{ts, accIPEth(accUDP(t, m[0].(string), m[1].(string), m[2].([]byte)))})
	}
	sll := func(f accFrame) accFrame {
		h := []byte{0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 0x0a, 0, 0, 0x08, 0x00}
		return accFrame{f.ts, append(h, f.data[14:]...)}
	}
	dir := t.TempDir()
	type variant struct {
		name string
		path string
		res  time.Duration
	}
	var vs []variant
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, ns := range []bool{false, true} {
			res := time.Microsecond
			if ns {
				res = time.Nanosecond
			}
			name := fmt.Sprintf("pcap %v ns=%v", order, ns)
			vs = append(vs, variant{name, accPcap(t, filepath.Join(dir, strings.ReplaceAll(name, " ", "_")), 1, order, ns, frames), res})
		}
	}
	mixed := make([]accFrame, len(frames))
	ifaces := make([]int, len(frames))
	for i, f := range frames {
		mixed[i] = f
		if i%2 == 1 {
			mixed[i], ifaces[i] = sll(f), 1
		}
	}
	vs = append(vs, variant{"pcapng Ethernet and SLL interfaces", accPcapNG(t, filepath.Join(dir, "mixed.pcapng"), []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL}, ifaces, mixed), time.Nanosecond})
	for _, v := range vs {
		for _, gz := range []bool{false, true} {
			name := v.name
			path := v.path
			if gz {
				name += " gzip"
				path = accGzip(t, v.path)
			}
			t.Run(name, func(t *testing.T) {
				c, doc := accLoad(t, path)
				if doc.Run.FramesRead != 7 || doc.Run.SIPMessages != 7 || len(doc.Dialogs) != 1 || !doc.Run.Complete {
					t.Fatalf("got %d frames, %d messages, %d dialogs, complete %v; want 7, 7, 1, true", doc.Run.FramesRead, doc.Run.SIPMessages, len(doc.Dialogs), doc.Run.Complete)
				}
				d := doc.Dialogs[0]
				want := frames[0].ts.Truncate(v.res)
				if !d.CreatedAt.Equal(want) || !d.UpdatedAt.Equal(frames[6].ts.Truncate(v.res)) {
					t.Errorf("created %v updated %v, want %v and %v", d.CreatedAt, d.UpdatedAt, want, frames[6].ts.Truncate(v.res))
				}
				det, _ := c.Dialogs().Get(d.CallID)
				if det.State != "Completed" || det.MsgCount != 7 || det.TimingDetail.SetupMs == nil {
					t.Errorf("got %s with %d messages, want Completed with 7 and a setup time", det.State, det.MsgCount)
				}
			})
		}
	}
}
