package sip

import (
	"bytes"
	"encoding/hex"
	"os"
	"reflect"
	"strings"
	"testing"
)

// fuzzParser is the reused Parser FuzzParse checks against Parse (fuzz
// inputs run one at a time in a process).
var fuzzParser = NewParser(Limits{})

// FuzzParse feeds arbitrary bytes to Looks, Parse and MessageLen. Beyond not
// panicking, it checks: Looks and Parser.Looks agree with Parse; the
// message accounts for every input byte (junk + Raw + trailing); a reused
// Parser gives what Parse gives, also when it parses from the start line
// its Looks found; header ranges lie in Raw, start
// with the header's name and unfold to its value; the limits hold (method
// tokens included).
// Seeds: testdata/fuzz/FuzzParse (real messages from the public captures)
// and the hand-written messages below.
func FuzzParse(f *testing.F) {
	f.Add([]byte(crlf(inviteText)))
	f.Add([]byte(minimal("Subject: a\r\n b")))
	f.Add([]byte("\r\n\r\nSIP/2.0 200 OK\r\nl: 10\r\n\r\nabc"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte("\x00\x00xx INVITE sip:a SIP/2.0\n\n"))
	f.Add([]byte("INVITE sip:a@b SIP/2.0\r\nContent-Type: multipart/mixed;boundary=b\r\n\r\n--b\r\nContent-Type: application/sdp\r\n\r\nv=0\r\n--b--"))
	// The PROTOS test-suite INVITEs of c07-sip-r2.cap.
	if hexes, err := os.ReadFile("testdata/c07-sip-r2.sip.hex"); err == nil {
		for _, line := range strings.Fields(string(hexes)) {
			if b, err := hex.DecodeString(line); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		looks := Looks(b)
		m, err := Parse(b)
		if looks != (err == nil) {
			t.Fatalf("Looks %v but Parse error %v", looks, err)
		}
		if looked := fuzzParser.Looks(b); looked != looks {
			t.Fatalf("Parser.Looks %v, Looks %v", looked, looks)
		}
		if n, err := MessageLen(b); err == nil && (n <= 0 || n > len(b)) {
			t.Fatalf("MessageLen: %d of %d bytes", n, len(b))
		}
		if err != nil {
			return
		}
		// A Parser that parsed another message first gives the same.
		fuzzParser.Parse([]byte(crlf(inviteText)))
		if got, err := fuzzParser.Parse(b); err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("reused Parser gave %+v (%v), Parse gave %+v", got, err, m)
		}
		// Parsing from the start line Parser.Looks found gives the same.
		fuzzParser.Looks(b)
		if got, err := fuzzParser.Parse(b); err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("Parse after Parser.Looks gave %+v (%v), Parse gave %+v", got, err, m)
		}
		if got := m.JunkPrefixBytes + len(m.Raw) + m.TrailingBytes; got != len(b) {
			t.Fatalf("junk %d + raw %d + trailing %d = %d, input %d", m.JunkPrefixBytes, len(m.Raw), m.TrailingBytes, got, len(b))
		}
		if !bytes.Equal(m.Raw, b[m.JunkPrefixBytes:m.JunkPrefixBytes+len(m.Raw)]) {
			t.Fatal("Raw differs from the input")
		}
		if len(m.Headers) > MaxHeaders {
			t.Fatalf("%d headers", len(m.Headers))
		}
		if len(m.Body) > len(m.Raw) {
			t.Fatalf("body %d > raw %d", len(m.Body), len(m.Raw))
		}
		if m.IsRequest == (m.Method == "") {
			t.Fatalf("IsRequest %v, Method %q", m.IsRequest, m.Method)
		}
		if len(m.Method) > MaxMethodBytes || len(m.CSeq.Method) > MaxMethodBytes {
			t.Fatalf("method %d bytes, CSeq method %d bytes: cap %d", len(m.Method), len(m.CSeq.Method), MaxMethodBytes)
		}
		for i, h := range m.Headers {
			if h.Start < 0 || h.End < h.Start || h.End > len(m.Raw) {
				t.Fatalf("header %d: range [%d,%d) outside %d bytes", i, h.Start, h.End, len(m.Raw))
			}
			line := m.Raw[h.Start:h.End]
			if !bytes.HasPrefix(line, []byte(h.Name)) {
				t.Fatalf("header %d: %q does not start with %q", i, line, h.Name)
			}
			if len(h.Name)+2+len(h.Value) > MaxLineBytes {
				t.Fatalf("header %d: logical line of %d bytes", i, len(h.Name)+2+len(h.Value))
			}
			colon := bytes.IndexByte(line, ':')
			if colon < 0 {
				t.Fatalf("header %d: no colon in %q", i, line)
			}
			got := unfold(line[colon+1:])
			if got != h.Value && !(m.LineLimitHit && strings.HasPrefix(got, h.Value)) {
				t.Fatalf("header %d: range unfolds to %q, value %q", i, got, h.Value)
			}
		}
		if ct, ok := m.Header(HdrContentType); ok {
			_, _ = SplitMultipart(ct, m.Body)
			_, _ = m.SDPBody()
		}
		for _, v := range m.HeaderValues(HdrReason) {
			_ = ParseReason(v)
		}
		if v, ok := m.Header(HdrSessionID); ok {
			_, _ = ParseSessionID(v)
		}
		if v, ok := m.Header(HdrPChargingVector); ok {
			_, _ = ParsePChargingVector(v)
		}
		_, _ = ParseURI(m.RequestURI)
	})
}
