package rtp

import (
	"errors"
	"testing"
)

// amrFrame is one table-of-contents entry and its frame's bit count.
type amrFrame struct {
	ft   uint8
	bits int
}

// bePayload lays out a bandwidth-efficient payload bit by bit as RFC 4867
// §4.3 draws it: CMR(4), then F(1) FT(4) Q(1) per frame, then the frames'
// bits, zero-padded to an octet.
func bePayload(cmr uint8, frames []amrFrame) []byte {
	var bits []byte
	push := func(v uint8, n int) {
		for i := n - 1; i >= 0; i-- {
			bits = append(bits, v>>i&1)
		}
	}
	push(cmr, 4)
	for i, f := range frames {
		more := uint8(0)
		if i+1 < len(frames) {
			more = 1
		}
		push(more, 1)
		push(f.ft, 4)
		push(1, 1)
	}
	for _, f := range frames {
		for k := 0; k < f.bits; k++ {
			bits = append(bits, uint8(k&1))
		}
	}
	out := make([]byte, (len(bits)+7)/8)
	for i, b := range bits {
		out[i/8] |= b << (7 - i%8)
	}
	return out
}

// oaPayload lays out an octet-aligned payload (RFC 4867 §4.4): a CMR
// octet, one F FT Q P P octet per frame, each frame padded to octets.
func oaPayload(cmr uint8, frames []amrFrame) []byte {
	out := []byte{cmr << 4}
	for i, f := range frames {
		e := f.ft<<3 | 1<<2
		if i+1 < len(frames) {
			e |= 0x80
		}
		out = append(out, e)
	}
	for _, f := range frames {
		out = append(out, make([]byte, (f.bits+7)/8)...)
	}
	return out
}

// TestParseAMRReadsEveryFrameType: the frame types and CMR of payloads
// built from RFC 4867's layouts in both packings, with the speech bits of
// 3GPP TS 26.201 (AMR-WB) and TS 26.101 (AMR) per type.
func TestParseAMRReadsEveryFrameType(t *testing.T) {
	wb := []int{132, 177, 253, 285, 317, 365, 397, 461, 477}
	nb := []int{95, 103, 118, 134, 148, 159, 204, 244}
	for _, tc := range []struct {
		name   string
		flavor AMRFlavor
		frames []amrFrame
	}{
		{"AMR-WB 12.65 kbit/s, one frame", AMRWideband, []amrFrame{{2, 253}}},
		{"AMR-WB 23.85 kbit/s, three frames", AMRWideband, []amrFrame{{8, 477}, {8, 477}, {8, 477}}},
		{"AMR-WB modes 0 to 8 in one packet", AMRWideband, func() (f []amrFrame) {
			for i, b := range wb {
				f = append(f, amrFrame{uint8(i), b})
			}
			return
		}()},
		{"AMR-WB SID then no data", AMRWideband, []amrFrame{{9, 40}, {15, 0}}},
		{"AMR-WB speech lost", AMRWideband, []amrFrame{{14, 0}}},
		{"AMR 12.2 and 4.75 kbit/s", AMRNarrowband, []amrFrame{{7, nb[7]}, {0, nb[0]}}},
	} {
		for _, octet := range []bool{false, true} {
			name := tc.name + map[bool]string{false: ", bandwidth-efficient", true: ", octet-aligned"}[octet]
			t.Run(name, func(t *testing.T) {
				b := bePayload(5, tc.frames)
				if octet {
					b = oaPayload(5, tc.frames)
				}
				got, err := ParseAMR(b, tc.flavor, AMRParams{OctetAligned: octet})
				if err != nil {
					t.Fatal(err)
				}
				var want [16]uint8
				for _, f := range tc.frames {
					want[f.ft]++
				}
				if got.CMR != 5 || got.Frames != len(tc.frames) || got.Types != want {
					t.Errorf("got CMR %d, %d frames, types %v; want 5, %d, %v", got.CMR, got.Frames, got.Types, len(tc.frames), want)
				}
				// The other packing's reading of the same bytes must not
				// pass for a valid payload of the same frames.
				if other, err := ParseAMR(b, tc.flavor, AMRParams{OctetAligned: !octet}); err == nil && other.Types == want {
					t.Errorf("read in the wrong packing, the payload still gave %v", other.Types)
				}
			})
		}
	}
}

// TestParseAMRRefusesInconsistentPayloads: a payload shorter or longer
// than its frames, a reserved frame type and an endless table of contents
// are errors.
func TestParseAMRRefusesInconsistentPayloads(t *testing.T) {
	one := oaPayload(15, []amrFrame{{2, 253}})
	many := make([]byte, 200)
	for i := 1; i < len(many); i++ {
		many[i] = 0x80 | 15<<3 // F set, no data: the entries never end
	}
	for _, tc := range []struct {
		name  string
		b     []byte
		octet bool
		want  error
	}{
		{"one octet short", one[:len(one)-1], true, ErrAMRShort},
		{"one octet long", append(append([]byte{}, one...), 0), true, ErrAMRLong},
		{"reserved AMR-WB type 10", []byte{0xf0, 10 << 3}, true, ErrAMRReserved},
		{"empty", nil, true, ErrAMRShort},
		{"bandwidth-efficient cut", bePayload(15, []amrFrame{{8, 477}})[:10], false, ErrAMRShort},
		{"a table of contents past 64 entries", many, true, ErrAMRTooMany},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseAMR(tc.b, AMRWideband, AMRParams{OctetAligned: tc.octet}); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// TestParseAMRFmtp reads RFC 4867 §8.1's parameters.
func TestParseAMRFmtp(t *testing.T) {
	for _, tc := range []struct {
		fmtp string
		want AMRParams
	}{
		{"", AMRParams{}},
		{"octet-align=1", AMRParams{OctetAligned: true}},
		{"mode-set=2; octet-align=1", AMRParams{OctetAligned: true, ModeSet: 1 << 2}},
		{"mode-set=0,2,4,8", AMRParams{ModeSet: 1 | 1<<2 | 1<<4 | 1<<8}},
		{"mode-set=9", AMRParams{}},
		{"octet-align=0; interleaving=4", AMRParams{Interleaved: true}},
	} {
		if got := ParseAMRFmtp(tc.fmtp); got != tc.want {
			t.Errorf("ParseAMRFmtp(%q): got %+v, want %+v", tc.fmtp, got, tc.want)
		}
	}
}

// FuzzParseAMR: hostile payloads give errors, never panics, in both
// packings and flavors.
func FuzzParseAMR(f *testing.F) {
	f.Add(oaPayload(15, []amrFrame{{2, 253}}), true, true)
	f.Add(bePayload(15, []amrFrame{{8, 477}, {9, 40}}), false, true)
	f.Add([]byte{0xff, 0xff, 0xff}, false, false)
	f.Fuzz(func(t *testing.T, b []byte, octet, wide bool) {
		fl := AMRNarrowband
		if wide {
			fl = AMRWideband
		}
		p, err := ParseAMR(b, fl, AMRParams{OctetAligned: octet, Interleaved: octet && len(b) > 3 && b[3]&1 == 1})
		if err == nil && (p.Frames < 1 || p.Frames > maxAMRFrames) {
			t.Fatalf("%d frames accepted", p.Frames)
		}
	})
}
