package dialog

import (
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/sip"
)

// sipText builds a message from its start line and headers.
func sipText(start string, headers ...string) string {
	return start + "\r\n" + strings.Join(headers, "\r\n") + "\r\nContent-Length: 0\r\n\r\n"
}

// TestInfoOfEqualsEachStepsOwnReading: what apply works out once per
// message (infoOf) is what each step read for itself before: upperMethod
// of the request's method and of the CSeq method, tagSum of the From tag.
func TestInfoOfEqualsEachStepsOwnReading(t *testing.T) {
	for _, tc := range []struct {
		name, text            string
		wantMethod, wantCSeqM string
	}{
		{"request", sipText("INVITE sip:b@x SIP/2.0", "Call-ID: c", "From: <sip:a@x>;tag=f1", "To: <sip:b@x>", "CSeq: 1 INVITE", "Via: SIP/2.0/UDP h;branch=z9hG4bK1"),
			"INVITE", "INVITE"},
		{"lower-case CSeq method", sipText("BYE sip:b@x SIP/2.0", "Call-ID: c", "From: <sip:a@x>;tag=f1", "To: <sip:b@x>;tag=t1", "CSeq: 2 bye", "Via: SIP/2.0/UDP h;branch=z9hG4bK2"),
			"BYE", "BYE"},
		{"response", sipText("SIP/2.0 200 OK", "Call-ID: c", "From: <sip:a@x>;tag=f1", "To: <sip:b@x>;tag=t1", "CSeq: 1 invite", "Via: SIP/2.0/UDP h;branch=z9hG4bK1"),
			"", "INVITE"},
		{"extension method", sipText("FOO sip:b@x SIP/2.0", "Call-ID: c", "From: <sip:a@x>", "To: <sip:b@x>", "CSeq: 3 Foo", "Via: SIP/2.0/UDP h;branch=z9hG4bK3"),
			"FOO", "FOO"},
		{"unreadable CSeq", sipText("SIP/2.0 180 Ringing", "Call-ID: c", "From: <sip:a@x>;tag=f1", "To: <sip:b@x>;tag=t1", "CSeq: x", "Via: SIP/2.0/UDP h;branch=z9hG4bK1"),
			"", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := sip.Parse([]byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			mi := infoOf(m)
			if mi.method != tc.wantMethod || mi.cseqMethod != tc.wantCSeqM {
				t.Fatalf("methods %q, %q; want %q, %q", mi.method, mi.cseqMethod, tc.wantMethod, tc.wantCSeqM)
			}
			if m.IsRequest && mi.method != upperMethod(m.Method) {
				t.Fatalf("method %q, upperMethod says %q", mi.method, upperMethod(m.Method))
			}
			if m.CSeq.Valid && mi.cseqMethod != upperMethod(m.CSeq.Method) {
				t.Fatalf("CSeq method %q, upperMethod says %q", mi.cseqMethod, upperMethod(m.CSeq.Method))
			}
			if mi.fromSum != tagSum(m.From.Tag) {
				t.Fatal("fromSum is not tagSum of the From tag")
			}
		})
	}
}

// TestNamesCauseGuardsCauseOf: a message without a header causeOf reads
// names no cause, so skipping causeOf when namesCause is false changes no
// answer; with one, namesCause lets causeOf decide.
func TestNamesCauseGuardsCauseOf(t *testing.T) {
	base := []string{"Call-ID: c", "From: <sip:a@x>;tag=f1", "To: <sip:b@x>;tag=t1", "CSeq: 2 BYE", "Via: SIP/2.0/UDP h;branch=z9hG4bK2"}
	for _, tc := range []struct {
		name      string
		extra     []string
		names     bool
		wantCause int // 0: none
	}{
		{"no cause header", nil, false, 0},
		{"unrelated headers", []string{"User-Agent: x", "Reason-Phrase: 16"}, false, 0},
		{"Q.850 Reason", []string{"Reason: Q.850;cause=16;text=\"Normal\""}, true, 16},
		{"Reason without a cause", []string{"Reason: SIP;text=\"x\""}, true, 0},
		{"Asterisk hangup cause", []string{"X-Asterisk-HangupCauseCode: 17"}, true, 17},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := sip.Parse([]byte(sipText("BYE sip:b@x SIP/2.0", append(append([]string{}, base...), tc.extra...)...)))
			if err != nil {
				t.Fatal(err)
			}
			if got := namesCause(m); got != tc.names {
				t.Fatalf("namesCause %v, want %v", got, tc.names)
			}
			c, ok := causeOf(m)
			if ok && !namesCause(m) {
				t.Fatal("causeOf found a cause namesCause would skip")
			}
			got := 0
			if ok {
				got = c.Code
			}
			if got != tc.wantCause {
				t.Fatalf("cause %d, want %d (0: none)", got, tc.wantCause)
			}
		})
	}
}
