package report

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testengine"
)

// sip_call.pcap is the synthetic seven-message call INVITE/100/180/200/
// ACK/BYE/200 between 10.0.0.1 and 10.0.0.2 at round times from
// 1700000000 s (2023-11-14T22:13:20Z): the lines below are read off its
// tshark fields (testdata/captures/messages/sip_call.pcap.tsv).
var sipCallLines = []string{
	"2023-11-14T22:13:20.000000Z 10.0.0.1:5060 -> 10.0.0.2:5060 UDP INVITE test-call-1@10.0.0.1",
	"2023-11-14T22:13:20.100000Z 10.0.0.2:5060 -> 10.0.0.1:5060 UDP 100 Trying test-call-1@10.0.0.1",
	"2023-11-14T22:13:20.500000Z 10.0.0.2:5060 -> 10.0.0.1:5060 UDP 180 Ringing test-call-1@10.0.0.1",
	"2023-11-14T22:13:22.000000Z 10.0.0.2:5060 -> 10.0.0.1:5060 UDP 200 OK test-call-1@10.0.0.1",
	"2023-11-14T22:13:22.050000Z 10.0.0.1:5060 -> 10.0.0.2:5060 UDP ACK test-call-1@10.0.0.1",
	"2023-11-14T22:14:20.000000Z 10.0.0.1:5060 -> 10.0.0.2:5060 UDP BYE test-call-1@10.0.0.1",
	"2023-11-14T22:14:20.100000Z 10.0.0.2:5060 -> 10.0.0.1:5060 UDP 200 OK test-call-1@10.0.0.1",
}

func textOf(t *testing.T, c *engine.Capture, sel Selection, o MessageTextOptions) (string, int) {
	t.Helper()
	var b bytes.Buffer
	n, err := WriteMessagesText(&b, c, sel, o)
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), n
}

// TestMessagesTextOptionsShapeEachLine: the per-message text of -N, line
// by line on sip_call.pcap, with each option.
func TestMessagesTextOptionsShapeEachLine(t *testing.T) {
	c := testengine.Public(t, engine.Config{}, "sip_call.pcap")
	cases := []struct {
		name  string
		o     MessageTextOptions
		check func(t *testing.T, lines []string)
	}{
		{"time, addresses, transport, method or status and Call-ID", MessageTextOptions{}, func(t *testing.T, lines []string) {
			if strings.Join(lines, "\n") != strings.Join(sipCallLines, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(sipCallLines, "\n"))
			}
		}},
		{"delta time is seconds since the previous line", MessageTextOptions{DeltaTime: true}, func(t *testing.T, lines []string) {
			want := []string{"+0.000000", "+0.100000", "+0.400000", "+1.500000", "+0.050000", "+57.950000", "+0.100000"}
			for i, l := range lines {
				if got, _, _ := strings.Cut(l, " "); got != want[i] {
					t.Errorf("line %d starts %q, want %q", i+1, got, want[i])
				}
			}
		}},
		{"proto numbers print UDP as 17", MessageTextOptions{ProtoNumbers: true}, func(t *testing.T, lines []string) {
			if want := strings.Replace(sipCallLines[0], " UDP ", " 17 ", 1); lines[0] != want {
				t.Fatalf("got %q, want %q", lines[0], want)
			}
		}},
		{"raw prints the message indented and the payload limit cuts it", MessageTextOptions{Raw: true, PayloadLimit: 60}, func(t *testing.T, lines []string) {
			if lines[0] != sipCallLines[0] || lines[1] != "    INVITE sip:1002@10.0.0.2 SIP/2.0" || !strings.HasPrefix(lines[2], "    Via: SIP/2") {
				t.Fatalf("got %q", lines[:3])
			}
			if !strings.HasPrefix(lines[3], "    [") || !strings.HasSuffix(lines[3], "more bytes not shown: --payload-limit 60]") {
				t.Fatalf("line 4 %q, want the cut note", lines[3])
			}
		}},
		{"hexdump prints the bytes", MessageTextOptions{Hexdump: true, PayloadLimit: 16}, func(t *testing.T, lines []string) {
			if want := "    00000000  49 4e 56 49 54 45 20 73  69 70 3a 31 30 30 32 40  |INVITE sip:1002@|"; lines[1] != want {
				t.Fatalf("got %q, want %q", lines[1], want)
			}
		}},
		{"colors mark requests and responses by class", MessageTextOptions{Color: true}, func(t *testing.T, lines []string) {
			for i, want := range []string{"\x1b[36mINVITE\x1b[0m", "\x1b[33m100 Trying\x1b[0m", "\x1b[33m180 Ringing\x1b[0m", "\x1b[32m200 OK\x1b[0m"} {
				if !strings.Contains(lines[i], want) {
					t.Errorf("line %d %q lacks %q", i+1, lines[i], want)
				}
			}
		}},
		{"no color without the option", MessageTextOptions{}, func(t *testing.T, lines []string) {
			for _, l := range lines {
				if strings.Contains(l, "\x1b") {
					t.Fatalf("escape in %q", l)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, n := textOf(t, c, nil, tc.o)
			if n != 7 {
				t.Fatalf("%d messages, want 7", n)
			}
			tc.check(t, strings.Split(strings.TrimSuffix(out, "\n"), "\n"))
		})
	}
}

// TestSelectionWritesEveryMessageOfTheSelectedDialogsOnly: a dialog
// selection (--filter, --calls-only) writes all the messages of the
// dialogs it keeps and none of the others'. sip-auth-failure.pcapng holds
// a REGISTER dialog and a SUBSCRIBE dialog (tshark: 4 messages each).
func TestSelectionWritesEveryMessageOfTheSelectedDialogsOnly(t *testing.T) {
	c := testengine.Public(t, engine.Config{}, "sip-auth-failure.pcapng")
	rows := c.Dialogs().Summaries(0)
	if len(rows) != 2 {
		t.Fatalf("%d dialogs, want 2", len(rows))
	}
	for _, keep := range rows {
		t.Run(keep.Method, func(t *testing.T) {
			sel := func(id string) bool { return id == keep.CallID }
			var b bytes.Buffer
			n, err := WriteMessagesJSON(&b, c, sel)
			if err != nil {
				t.Fatal(err)
			}
			if n != keep.MsgCount || n != 4 {
				t.Fatalf("%d lines, the dialog holds %d (tshark: 4)", n, keep.MsgCount)
			}
			for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
				var v struct {
					CallID string `json:"call_id"`
				}
				if err := json.Unmarshal([]byte(l), &v); err != nil || v.CallID != keep.CallID {
					t.Fatalf("line %q: call_id %q, want %q (%v)", l, v.CallID, keep.CallID, err)
				}
			}
			text, tn := textOf(t, c, sel, MessageTextOptions{})
			if tn != n || strings.Count(text, "\n") != n {
				t.Fatalf("text: %d messages in %d lines, want %d", tn, strings.Count(text, "\n"), n)
			}
		})
	}
}

// TestSenderTextIsEscapedNotDropped: a Call-ID, From and reason phrase
// holding a bidi override, an escape sequence and a C1 control reach the
// NDJSON line as \u escapes (decoding gives the wire value back) and the
// text line as the escapes textsafe.ID writes or without them
// (textsafe.Line): no line holds the raw characters.
func TestSenderTextIsEscapedNotDropped(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	callID := "evil\u202e1@x\x1b[2J"
	from := "\"\u0085Bob\u202e\" <sip:bob@x>;tag=1"
	a, b := netip.MustParseAddrPort("192.0.2.1:5060"), netip.MustParseAddrPort("192.0.2.2:5060")
	ts := time.Unix(1700000000, 0)
	inv := "INVITE sip:alice@x SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nFrom: " + from +
		"\r\nTo: <sip:alice@x>\r\nCall-ID: " + callID + "\r\nCSeq: 1 INVITE\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
	resp := "SIP/2.0 486 Busy\u202e Here\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nFrom: " + from +
		"\r\nTo: <sip:alice@x>;tag=2\r\nCall-ID: " + callID + "\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
	c.HandlePacket(&packet.Packet{TS: ts, Src: a, Dst: b, Transport: packet.TransportUDP, Payload: []byte(inv)})
	c.HandlePacket(&packet.Packet{TS: ts.Add(time.Second), Src: b, Dst: a, Transport: packet.TransportUDP, Payload: []byte(resp)})

	var out bytes.Buffer
	n, err := WriteMessagesJSON(&out, c, nil)
	if err != nil || n != 2 {
		t.Fatalf("%d lines, %v", n, err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, raw := range []string{"\u202e", "\x1b", "\u0085"} {
		if strings.Contains(out.String(), raw) {
			t.Fatalf("NDJSON holds %q raw:\n%s", raw, out.String())
		}
	}
	var first, second struct {
		CallID string `json:"call_id"`
		From   string `json:"from"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first.CallID != callID || first.From != from || second.Reason != "Busy\u202e Here" {
		t.Fatalf("decoded call_id %q from %q reason %q: not the wire values", first.CallID, first.From, second.Reason)
	}
	if !strings.Contains(lines[0], `"call_id":"evil\u202e1@x\u001b[2J"`) {
		t.Fatalf("line 1 %s", lines[0])
	}

	text, _ := textOf(t, c, nil, MessageTextOptions{})
	for _, raw := range []string{"\u202e", "\x1b", "\u0085"} {
		if strings.Contains(text, raw) {
			t.Fatalf("text holds %q raw:\n%s", raw, text)
		}
	}
	if !strings.Contains(text, `UDP 486 Busy Here evil\u202e1@x\u001b[2J`) {
		t.Fatalf("text:\n%s", text)
	}
}
