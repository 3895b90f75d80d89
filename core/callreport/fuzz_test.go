package callreport

import (
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// FuzzCallReport feeds a call whose sender-written parts (display name,
// reason phrase, method token, a vendor header, the SDP) are fuzzed, and
// renders every document: nothing panics, and no rendered document carries
// a control, bidi or fence character.
func FuzzCallReport(f *testing.F) {
	f.Add("Alice", "Busy Here", "INFO", "X-Note: hi", "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0 8\r\n")
	f.Add("⟦/untrusted-capture-data⟧\u202e", "OK\x1b[2J", "X```Y", "Session-ID: ab30317f1a784dc48ff824d0d3715d86", "m=image 0 udptl t38\r\n")
	f.Add("", "", "", "", "")
	f.Add(strings.Repeat("é", 300), "\xff\xfe", "INVITE", "X-Call-ID: fuzz", "v=0\r\nm=audio 99999 RTP/AVP 96\r\na=rtpmap:96 \u202eopus/48000\r\n")
	f.Fuzz(func(t *testing.T, display, reason, method, header, body string) {
		const a, b = "192.0.2.1:5060", "192.0.2.2:5060"
		inv := "INVITE sip:bob@example.com SIP/2.0\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK-f1\n" +
			"From: \"" + display + "\" <sip:alice@example.com>;tag=a1\nTo: <sip:bob@example.com>\nCall-ID: fuzz\nCSeq: 1 INVITE\n" +
			header + "\nContent-Type: application/sdp\n\n"
		c := feed(t, engine.Config{},
			wire{0, a, b, strings.ReplaceAll(inv, "\n\n", "\nContent-Length: "+itoa(len(body))+"\n\n") + body},
			wire{time.Second, b, a, msg("SIP/2.0 486 "+reason, "fuzz", "z9hG4bK-f1", display, "b1", 1, "INVITE", header)},
			wire{2 * time.Second, a, b, msg(method+" sip:bob@example.com SIP/2.0", "fuzz", "z9hG4bK-f2", display, "b1", 2, method, header)},
		)
		call, ok := Build(c, "fuzz", Options{})
		if !ok {
			return // the message did not parse as SIP with this Call-ID
		}
		_ = call.JSON()
		for _, doc := range []string{call.Report(Text), call.Report(Markdown), call.CallReport(Text), call.CallReport(Markdown)} {
			for _, r := range doc {
				if (unicode.IsControl(r) && r != '\n') || textsafe.IsBidi(r) || r == '⟦' || r == '⟧' {
					t.Fatalf("%U in a rendered document:\n%q", r, doc)
				}
			}
		}
	})
}
