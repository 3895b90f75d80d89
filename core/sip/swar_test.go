package sip

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWordScansMatchByteScans checks the word-at-a-time scans against
// byte-by-byte loops on random strings of every length up to 40 made from
// the bytes that matter to them (delimiters, bounds of printable ASCII,
// high bytes) and letters, from every start offset.
func TestWordScansMatchByteScans(t *testing.T) {
	alphabet := []byte("ab;?:\"\\ \t\x00\x1f\x20\x7e\x7f\x80\xff@>")
	naive := func(s string, from int, stop func(byte) bool) int {
		for i := from; i < len(s); i++ {
			if stop(s[i]) {
				return i
			}
		}
		return len(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 40; n++ {
		for trial := 0; trial < 300; trial++ {
			b := make([]byte, n)
			for i := range b {
				if rng.IntN(3) == 0 {
					b[i] = alphabet[rng.IntN(len(alphabet))]
				} else {
					b[i] = 'a' + byte(rng.IntN(26))
				}
			}
			s := string(b)
			if got, want := indexURIHostEnd(s), naive(s, 0, func(c byte) bool { return strings.IndexByte(";?:", c) >= 0 }); got != want {
				t.Fatalf("indexURIHostEnd(%q) = %d, want %d", s, got, want)
			}
			if got, want := indexViaHostEnd(s), naive(s, 0, func(c byte) bool { return c == ';' || c == ':' }); got != want {
				t.Fatalf("indexViaHostEnd(%q) = %d, want %d", s, got, want)
			}
			for from := 0; from <= n; from++ {
				if got, want := plainEnd(s, from), naive(s, from, func(c byte) bool { return !plainValueChar[c] }); got != want {
					t.Fatalf("plainEnd(%q, %d) = %d, want %d", s, from, got, want)
				}
			}
			for i := 0; i+8 <= n; i++ {
				x := load8(s, i)
				for _, c := range []byte(";:\"") {
					want := naive(s[i:i+8], 0, func(b byte) bool { return b == c })
					got := 8
					if m := eqMask(x, c); m != 0 {
						got = firstMark(m)
					}
					if got != want {
						t.Fatalf("eqMask(%q, %q): first mark %d, want %d", s[i:i+8], c, got, want)
					}
				}
			}
		}
	}
}
