package lint

import (
	"bytes"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// fuzzSep separates the SIP messages of one fuzz input.
var fuzzSep = []byte("\x00--\x00")

// FuzzLint runs the whole catalogue over arbitrary SIP bytes: the input is
// split into up to 16 messages, each parsed the way the engine parses the
// wire, linted as a dialog (with RTP aimed at the endpoints the crafted SDP
// declares) and one by one. Nothing may panic, and every finding must name a
// catalogue rule and a message of the dialog.
func FuzzLint(f *testing.F) {
	for _, seed := range [][]*mb{
		call(sdpA(1, "a=ptime:20", "a=maxptime:40"), sdpB(1)),
		append(call(sdpA(1), sdpB(1)), reinvite(sdpA(2, "a=sendonly")).after(5*time.Second), reinviteOK(sdpB(2, "a=recvonly"))),
		{req("INVITE").set("Supported", "100rel"), resp(183, "Session Progress", "INVITE").set("Require", "100rel").set("RSeq", "1"),
			req("PRACK").set("RAck", "1 1 INVITE"), resp(200, "OK", "INVITE").set("Session-Expires", "60")},
		{req("REGISTER").set("Contact", "*").set("To", "sip:a@b;tag=1").set("Session-ID", "ABC;remote=x")},
		{req("INVITE").set("To", "sip:a@b?x,y;transport=tcp").set("Max-Forwards", "abc").set("Subject", "a\x01b")},
		{req("INVITE"), resp(200, "OK", "INVITE").withSDP("v=0\nm=audio 0 RTP/AVP\n"), req("ACK").withSDP("m=audio 1 RTP/AVP 0 0 0\nc=IN IP4 ::\n")},
	} {
		var b bytes.Buffer
		for i, m := range seed {
			if i > 0 {
				b.Write(fuzzSep)
			}
			b.WriteString(m.text())
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte("SIP/2.0 200 OK\r\n\r\n"))
	f.Add([]byte("INVITE x SIP/2.0\r\nCSeq: 4294967295 INVITE\r\nContent-Type: application/sdp\r\n\r\nv=0\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parts := bytes.SplitN(data, fuzzSep, 17)
		if len(parts) > 16 {
			parts = parts[:16]
		}
		var ms []dialog.Message
		for i, p := range parts {
			m, err := sip.Parse(p)
			if err != nil {
				continue
			}
			src, dst := addrA, addrB
			if !m.IsRequest {
				src, dst = addrB, addrA
			}
			ms = append(ms, dialog.Message{Msg: m, TS: t0.Add(time.Duration(i) * time.Second), Src: src, Dst: dst,
				Index: len(ms), Retransmission: i%5 == 4, Frame: packet.FrameRef{Source: "fuzz", Ordinal: uint64(i + 1)}})
		}
		streams := []media.StreamInfo{
			withIntervals(stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 160, 20), iv{10 * time.Second, 250}),
			withPT(stream("10.0.0.1:6000", "10.0.0.2:7000", "G729", 18, 50, 20, 20), 101, 3),
			stream("10.0.0.1:6000", "10.0.0.2:7001", "opus", 96, 0, 0, 20),
		}
		check := func(res Result, n int) {
			for _, f := range res.Findings {
				if _, ok := Lookup(f.RuleID); !ok {
					t.Fatalf("finding of unknown rule %q", f.RuleID)
				}
				if f.MessageIndex < 0 || f.MessageIndex >= n {
					t.Fatalf("finding points at message %d of %d", f.MessageIndex, n)
				}
			}
		}
		check(Lint(Input{Messages: ms, Streams: streams}, Options{}), len(ms))
		check(Lint(Input{Messages: ms}, Options{Cap: 1}), len(ms))
		for _, m := range ms {
			res := LintMessage(m, Options{})
			for _, f := range res.Findings {
				if f.MessageIndex != m.Index {
					t.Fatalf("single-message finding points at %d, want %d", f.MessageIndex, m.Index)
				}
			}
		}
	})
}
