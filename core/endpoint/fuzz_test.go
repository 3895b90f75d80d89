package endpoint

import (
	"net/netip"
	"testing"
	"unicode/utf8"

	"github.com/sipnab/sipnab/core/sip"
)

// FuzzSenderTokens: every reader of sender-written tokens is total and
// bounded: shapes come from the closed vocabulary, a cookie is at most
// MaxFingerprintChars, a cut key is at most MaxKeyBytes and keeps a valid
// string valid, a prefix is digits or a literal, and a Contact never
// panics the observation.
func FuzzSenderTokens(f *testing.F) {
	f.Add("z9hG4bKPj5f2c9e1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "+15551234000")
	f.Add("as1a2b3c4d", "\"<sip:x@203.0.113.9>\" <sip:alice@[2001:db8::1]:5060>")
	f.Add("é\xff", "*")
	f.Fuzz(func(t *testing.T, tok, contact string) {
		switch TokenShape(tok) {
		case ShapeUUID, ShapeAsHex, ShapeHex, ShapeOther:
		default:
			t.Fatalf("shape outside the vocabulary for %q", tok)
		}
		if c, _, ok := branchParts(tok); ok && len(c) > MaxFingerprintChars {
			t.Fatalf("cookie %q over %d", c, MaxFingerprintChars)
		}
		cut := cutUTF8(tok, MaxKeyBytes)
		if len(cut) > MaxKeyBytes || utf8.ValidString(tok) && !utf8.ValidString(cut) {
			t.Fatalf("cut %q of %q", cut, tok)
		}
		if p := PrefixKey(tok, MaxPrefixDigits); p != NoDestination && p != NonNumericDestination {
			for i := 0; i < len(p); i++ {
				if p[i] < '0' || p[i] > '9' {
					t.Fatalf("prefix %q of %q", p, tok)
				}
			}
		}
		raw := "REGISTER sip:x SIP/2.0\r\nCall-ID: a\r\nCSeq: 1 REGISTER\r\nContact: " + contact + "\r\n\r\n"
		if m, err := sip.Parse([]byte(raw)); err == nil {
			_ = ObserveContact(m, netip.MustParseAddr("203.0.113.9"))
		}
		var a FingerprintAcc
		a.Observe(tok, contact, tok)
		_ = a.Finish()
	})
}
