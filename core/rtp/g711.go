package rtp

// G.711 (ITU-T Recommendation G.711, 1988) decoding: one 8-bit code to
// the 16-bit linear sample its reconstruction table gives, µ-law (PCMU,
// payload type 0) and A-law (PCMA, payload type 8; RFC 3551 §4.5.14).
// The values are the Recommendation's decoder outputs scaled to 16 bits:
// µ-law spans ±32124, A-law ±32256.

// ULawToLinear decodes one µ-law code. The code is stored complemented;
// its three segment bits scale the four mantissa bits, biased by 0x84
// (132), the segment's step doubling from one segment to the next.
func ULawToLinear(u byte) int16 {
	u = ^u
	t := (int32(u&0x0F) << 3) + 0x84
	t <<= (u & 0x70) >> 4
	if u&0x80 != 0 {
		return int16(0x84 - t)
	}
	return int16(t - 0x84)
}

// ALawToLinear decodes one A-law code. Even bits are inverted on the wire
// (XOR 0x55); segment 0 is linear, each later segment doubles the step;
// a set sign bit is positive.
func ALawToLinear(a byte) int16 {
	a ^= 0x55
	t := int32(a&0x0F) << 4
	switch seg := (a & 0x70) >> 4; seg {
	case 0:
		t += 8
	case 1:
		t += 0x108
	default:
		t += 0x108
		t <<= seg - 1
	}
	if a&0x80 != 0 {
		return int16(t)
	}
	return int16(-t)
}
