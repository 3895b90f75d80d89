package sip

import "math/bits"

// Word-at-a-time scans for the fast paths: eight bytes per step, each
// test marking bytes in the high bit of a uint64 (little-endian, so the
// lowest mark is the first byte). Every mask below marks the first
// matching byte of a word exactly (no borrow or carry reaches it from the
// bytes before it); marks after it may be spurious, so only the lowest is
// used. OR-ing masks keeps that: the lowest mark of the union is the first
// byte any of them matches.

const (
	ones  = 0x0101010101010101
	highs = ones * 0x80
)

// outsideASCII marks the bytes outside 0x20..0x7e (control bytes, tab,
// DEL, and 0x80 and up).
func outsideASCII(x uint64) uint64 {
	return ((x - ones*0x20) | (x + ones)) & highs
}

// eqMask marks the bytes equal to c.
func eqMask(x uint64, c byte) uint64 {
	y := x ^ (ones * uint64(c))
	return (y - ones) &^ y & highs
}

// load8 returns s[i:i+8] as a little-endian word (one load).
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// firstMark returns the byte offset of the lowest mark of a non-zero mask.
func firstMark(m uint64) int { return bits.TrailingZeros64(m) >> 3 }

// indexURIHostEnd returns the offset of the first ';', '?' or ':' in s
// (where a SIP URI's host ends), len(s) when there is none.
func indexURIHostEnd(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := load8(s, i)
		if m := eqMask(x, ';') | eqMask(x, '?') | eqMask(x, ':'); m != 0 {
			return i + firstMark(m)
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == ';' || c == '?' || c == ':' {
			return i
		}
	}
	return len(s)
}

// indexViaHostEnd returns the offset of the first ';' or ':' in s (where a
// Via's host ends), len(s) when there is none.
func indexViaHostEnd(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := load8(s, i)
		if m := eqMask(x, ';') | eqMask(x, ':'); m != 0 {
			return i + firstMark(m)
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == ';' || c == ':' {
			return i
		}
	}
	return len(s)
}

// plainEnd returns the offset of the first byte at or after i that is not
// plainValueChar (printable ASCII other than space, ';', '"' and '\'),
// len(s) when there is none.
func plainEnd(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := load8(s, i)
		if m := outsideASCII(x) | eqMask(x, ' ') | eqMask(x, ';') | eqMask(x, '"') | eqMask(x, '\\'); m != 0 {
			return i + firstMark(m)
		}
	}
	for i < len(s) && plainValueChar[s[i]] {
		i++
	}
	return i
}
