package sip

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// hasVersionRef is the two-pass reference: the exact spelling, or "/2.0"
// preceded by "sip" in any case.
func hasVersionRef(b []byte) bool {
	if bytes.Contains(b, []byte("SIP/2.0")) {
		return true
	}
	for i := 0; ; {
		k := bytes.Index(b[i:], []byte("/2.0"))
		if k < 0 {
			return false
		}
		j := i + k
		if j >= 3 && sipVersionAt(b, j-3) {
			return true
		}
		i = j + 1
	}
}

func TestHasVersion(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want bool
	}{
		{"empty", "", false},
		{"exact", "SIP/2.0", true},
		{"lower", "sip/2.0", true},
		{"mixed", "xx Sip/2.0 200", true},
		{"at end", "INVITE sip:a@b SIP/2.0", true},
		{"slash only", "/2.0", false},
		{"short prefix", "IP/2.0", false},
		{"other version", "SIP/3.0 SIP/2.1", false},
		{"http", "GET / HTTP/1.1", false},
		{"many slashes", "////sip//2.0/sip/2.", false},
		{"after slashes", "//////SIP/2.0", true},
		{"cut", "SIP/2.", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasVersion([]byte(tc.in)); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if got := hasVersionRef([]byte(tc.in)); got != tc.want {
				t.Fatalf("reference: got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHasVersionMatchesReference checks the one-pass scan against the
// reference on random inputs made of the bytes that matter.
func TestHasVersionMatchesReference(t *testing.T) {
	alphabet := []byte("SIPsip/2.0 \x80")
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200000; n++ {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if got, want := hasVersion(b), hasVersionRef(b); got != want {
			t.Fatalf("%q: got %v, want %v", b, got, want)
		}
	}
}
