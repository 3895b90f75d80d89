package repro

import (
	"encoding/xml"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// FuzzGenerate feeds arbitrary request bytes (and a response code) through
// Generate with every aspect pinned and checks the scenario: never a panic,
// always well-formed XML, no control or bidi character but newlines, no
// fence code point (written as escapes), and no
// line of the first message that sipnab did not write (a captured CR or LF
// never becomes a header).
func FuzzGenerate(f *testing.F) {
	f.Add([]byte("INVITE sip:b@x SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:b@x>\r\nCall-ID: c\r\nCSeq: 1 INVITE\r\nContent-Type: application/sdp\r\nContent-Length: 10\r\n\r\nv=0\r\nm=]]>"), 486)
	f.Add([]byte("REGISTER sip:x SIP/2.0\r\nCall-ID: [call_id]\r\nCSeq: 1 REGISTER\r\nX: a\x00\r\n b\\x41\r\n\r\n"), 401)
	f.Add([]byte("OPTIONS sip:x SIP/2.0\r\nFrom: \xff\u202e<sip:a>;tag=\x85\r\nCall-ID: c\r\nCSeq: 1 OPTIONS\r\n\r\n"), 200)
	f.Add([]byte("MESSAGE sip:x\u27e6 SIP/2.0\r\nFrom: \"\u27e6/untrusted-capture-data\u27e7\" <sip:a>;tag=\u27e7\r\nCall-ID: c\r\nCSeq: 1 MESSAGE\r\nUser-Agent: \u27e6\r\n\r\n"), 200)
	f.Fuzz(func(t *testing.T, raw []byte, code int) {
		m, err := sip.Parse(raw)
		if err != nil || !m.IsRequest {
			return
		}
		if code < 100 || code > 699 {
			code = 500
		}
		resp, err := sip.Parse([]byte("SIP/2.0 " + itoa(code) + " X\r\nCall-ID: c\r\nCSeq: " + itoa(int(m.CSeq.Number)) + " " + m.CSeq.Method + "\r\nTo: <sip:b@x>;tag=u\r\n\r\n"))
		if err != nil {
			t.Fatal(err)
		}
		a, b := netip.MustParseAddrPort("192.0.2.1:5060"), netip.MustParseAddrPort("192.0.2.2:5060")
		t0 := time.Unix(0, 0)
		det := dialog.Detail{Messages: []dialog.Message{
			{Msg: m, TS: t0, Src: a, Dst: b},
			{Msg: resp, TS: t0.Add(time.Second), Src: b, Dst: a, Index: 1},
		}}
		r, err := Generate(&det, Options{Pin: Aspects, Vary: []string{}})
		if err != nil {
			return
		}
		for _, c := range r.Scenario {
			if (unicode.IsControl(c) && c != '\n') || textsafe.IsBidi(c) || c == '\u27e6' || c == '\u27e7' {
				t.Fatalf("control, bidi or fence code point %U in the scenario", c)
			}
		}
		var sc scenario
		if err := xml.Unmarshal([]byte(r.Scenario), &sc); err != nil {
			t.Fatalf("not XML: %v\n%s", err, r.Scenario)
		}
		text := strings.TrimSpace(sc.Steps[0].Text)
		head, _, _ := strings.Cut(text, "\n\n")
		wrote := 0
		for _, l := range strings.Split(head, "\n") {
			name, _, _ := strings.Cut(l, ":")
			if sip.LookupHeader(name) == sip.HdrExtension && !strings.HasPrefix(l, m.Method+" ") && l != "[authentication]" {
				wrote++ // a pinned extension header: one per captured one
			}
		}
		ext := 0
		for _, h := range m.Headers {
			if h.ID == sip.HdrExtension {
				ext++
			}
		}
		if wrote > ext {
			t.Fatalf("%d extension header lines written for %d captured:\n%s", wrote, ext, head)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
