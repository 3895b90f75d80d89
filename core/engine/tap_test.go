package engine

import "testing"

func TestWholeRTCPAcceptsPlainCompoundsOnly(t *testing.T) {
	rr := []byte{0x81, 201, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0} // RR, one report block (32 bytes)
	sdes := []byte{0x81, 202, 0, 2, 1, 2, 3, 4, 1, 1, 'x', 0}                                                         // SDES, one CNAME (12 bytes)
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"receiver report and SDES", append(append([]byte{}, rr...), sdes...), true},
		{"receiver report alone", rr, true},
		{"SRTCP: encrypted bytes, E flag and index, tag after the first packet", append(append([]byte{}, rr...), 0x9c, 0x41, 0x07, 0xee, 0x80, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), false},
		{"length past the datagram", rr[:20], false},
		{"trailing byte", append(append([]byte{}, rr...), 0), false},
		{"RTP packet type 0", []byte{0x80, 0, 0, 0}, false},
	} {
		if got := wholeRTCP(tc.b); got != tc.want {
			t.Errorf("%s: wholeRTCP = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzWholeRTCP: any bytes get an answer, never a panic, and a yes means
// the packet lengths tile the input exactly.
func FuzzWholeRTCP(f *testing.F) {
	f.Add([]byte{0x81, 201, 0, 1, 1, 2, 3, 4})
	f.Add([]byte{0x80, 200, 0, 0, 0x80, 202, 0, 0})
	f.Add([]byte{0x80, 200, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if !wholeRTCP(b) {
			return
		}
		for off := 0; off < len(b); {
			if b[off]>>6 != 2 {
				t.Fatalf("accepted a packet of version %d at %d", b[off]>>6, off)
			}
			off += (int(b[off+2])<<8 | int(b[off+3]) + 1) * 4
			if off > len(b) {
				t.Fatalf("accepted a length past the input")
			}
		}
	})
}
