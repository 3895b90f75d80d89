package sip

import (
	"encoding/hex"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/sipnab/sipnab/internal/testcap"
)

// checkRetained rebuilds m from its compact form and wants every field
// equal, by Message and by MessageInto into scratch (which holds the
// message rebuilt before, to be overwritten).
func checkRetained(t *testing.T, m *Message, scratch *Message) {
	t.Helper()
	r, ok := m.Retain()
	if !ok {
		// Only a Call-ID that is not a view into Raw (a folded header,
		// unfolded into a copy) keeps a parsed message from being
		// retained; the store keeps such a message whole.
		if inRaw(m.Raw, m.CallID) && inRaw(m.Raw, m.StartLine) {
			t.Fatalf("a parsed message cannot be retained")
		}
		return
	}
	if raw := r.Raw(); len(raw) != len(m.Raw) || len(raw) > 0 && &raw[0] != &m.Raw[0] {
		t.Fatalf("Raw() is %d bytes at %p, want the message's own %d at %p", len(raw), raw, len(m.Raw), m.Raw)
	}
	got := r.Message()
	if got == nil {
		t.Fatalf("the retained bytes do not parse: %q", r.Raw())
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("rebuilt message differs:\n got %+v\nwant %+v", got, m)
	}
	// The retained bytes are read-only (Message.Raw): the rebuilt message
	// shares them rather than copying them on every read.
	if len(got.Raw) > 0 && &got.Raw[0] != &m.Raw[0] {
		t.Fatal("the rebuilt message copied the retained bytes (it must share them)")
	}
	if into := r.MessageInto(scratch); into != scratch || !reflect.DeepEqual(into, m) {
		t.Fatalf("message rebuilt into a used Message differs:\n got %+v\nwant %+v", into, m)
	}
}

// TestRetainedIsThirtyTwoBytes: a store keeps one per message (the bytes'
// pointer and length, the limits, the two counts), so its size is part of
// every retained message's cost (core/dialog membudget.go counts it).
func TestRetainedIsThirtyTwoBytes(t *testing.T) {
	if n := unsafe.Sizeof(Retained{}); n != 32 {
		t.Fatalf("Retained is %d bytes, want 32", n)
	}
	var zero Retained
	if zero.Raw() != nil || zero.Message() != nil {
		t.Fatalf("the zero Retained gives Raw %v, Message %v; want nil, nil", zero.Raw(), zero.Message())
	}
}

// TestRetainedMessageEqualsParsed rebuilds every SIP message of every
// public capture, with junk before it and trailing bytes after it, and
// with other limits.
func TestRetainedMessageEqualsParsed(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Skip(err)
	}
	n := 0
	var scratch Message // every message rebuilt into the one before
	for _, name := range names {
		msgs, err := CaptureMessages(t, testcap.Public(name))
		if errors.Is(err, ErrNotPcap) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			checkRetained(t, m, &scratch)
			n++
			framed := append([]byte("\r\n\x00junk "), m.Raw...)
			framed = append(framed, "trailing bytes"...)
			for _, lim := range []Limits{DefaultLimits, {MaxHeaders: 3, MaxLineBytes: 40}} {
				w, err := ParseLimits(framed, lim)
				if err != nil {
					t.Fatal(err)
				}
				checkRetained(t, w, &scratch)
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d messages checked", n)
	}
	if _, ok := (&Message{CallID: "hand made"}).Retain(); ok {
		t.Fatal("a hand-built message was retained")
	}
	m, err := Parse([]byte(crlf(inviteText)))
	if err != nil {
		t.Fatal(err)
	}
	changed := *m
	changed.CallID = "changed after parsing"
	if _, ok := changed.Retain(); ok {
		t.Fatal("a message whose Call-ID was replaced was retained")
	}
}

// FuzzRetain checks that any parsed message is rebuilt equal.
func FuzzRetain(f *testing.F) {
	f.Add([]byte(crlf(inviteText)))
	f.Add([]byte("\r\n\r\nSIP/2.0 200 OK\r\nl: 3\r\n\r\nabcdef"))
	f.Add([]byte("\x00\x00xx INVITE sip:a SIP/2.0\nSubject: a\n b\n\n"))
	if hexes, err := os.ReadFile("testdata/c07-sip-r2.sip.hex"); err == nil {
		for _, line := range strings.Fields(string(hexes)) {
			if b, err := hex.DecodeString(line); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var scratch Message
		// a used scratch: the junk message first
		if m, err := Parse([]byte("INVITE sip:a@b SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bKx\r\nVia: SIP/2.0/TCP g\r\nCall-ID: c\r\nX: \x01\r\n\r\nbody")); err == nil {
			if r, ok := m.Retain(); ok {
				r.MessageInto(&scratch)
			}
		}
		for _, lim := range []Limits{DefaultLimits, {MaxHeaders: 2, MaxLineBytes: 16}} {
			m, err := ParseLimits(b, lim)
			if err != nil {
				return
			}
			checkRetained(t, m, &scratch)
		}
	})
}

// TestParserReusedGivesWhatParseGives parses every SIP message of every
// public capture, in order, with one Parser (its Message, headers and Vias
// reused from the message before) and checks each equals what Parse gives;
// the strings of one message stay intact after the Parser moved on.
func TestParserReusedGivesWhatParseGives(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Skip(err)
	}
	ps := NewParser(Limits{})
	n := 0
	for _, name := range names {
		msgs, err := CaptureMessages(t, testcap.Public(name))
		if errors.Is(err, ErrNotPcap) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var prevCallID, prevWant string
		for _, m := range msgs {
			want, err := Parse(m.Raw)
			if err != nil {
				t.Fatal(err)
			}
			buf := append([]byte(nil), m.Raw...)
			got, err := ps.Parse(buf)
			if err != nil {
				t.Fatal(err)
			}
			clear(buf) // the caller's buffer is reused: the Message must not share it
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: reused Parser gave %+v, Parse gave %+v", name, got, want)
			}
			if prevCallID != prevWant {
				t.Fatalf("%s: Call-ID %q of the message before became %q", name, prevWant, prevCallID)
			}
			prevCallID, prevWant = got.CallID, want.CallID
			n++
		}
	}
	if n < 1000 {
		t.Fatalf("only %d messages checked", n)
	}
}

// TestHeaderLookupFromBytesEqualsByName checks the parser's header-name
// lookup against LookupHeader for every known name in three spellings and
// for names that are not known.
func TestHeaderLookupFromBytesEqualsByName(t *testing.T) {
	var names []string
	for id := HeaderID(1); id < hdrCount; id++ {
		c := id.String()
		names = append(names, c, strings.ToLower(c), strings.ToUpper(c), c+"x", c[:len(c)-1], "x"+c[1:])
	}
	names = append(names, "", "v", "V", "z", "1", "X-Unknown", "Call_ID", "Via ", strings.Repeat("a", 40))
	for _, n := range names {
		if got, want := lookupHeaderBytes([]byte(n)), LookupHeader(n); got != want {
			t.Errorf("lookupHeaderBytes(%q) = %v, LookupHeader = %v", n, got, want)
		}
	}
	if got := lookupHeaderBytes([]byte("cAlL-iD")); got != HdrCallID {
		t.Errorf("cAlL-iD: got %v, want Call-ID", got)
	}
}
