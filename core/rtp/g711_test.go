package rtp

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestG711DecodesTheRecommendationsValues: the ends and the zeros of both
// laws (G.711 Tables 2a and 2b, scaled to 16 bits: µ-law's decision
// values times 4, A-law's times 8); every code of the two laws against
// sox is in bundles/media (export_audio).
func TestG711DecodesTheRecommendationsValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		code byte
		law  func(byte) int16
		want int16
	}{
		{"µ-law positive zero", 0xFF, ULawToLinear, 0},
		{"µ-law negative zero", 0x7F, ULawToLinear, 0},
		{"µ-law largest positive", 0x80, ULawToLinear, 32124},
		{"µ-law largest negative", 0x00, ULawToLinear, -32124},
		{"µ-law first step", 0xFE, ULawToLinear, 8},
		{"A-law smallest positive", 0xD5, ALawToLinear, 8},
		{"A-law smallest negative", 0x55, ALawToLinear, -8},
		{"A-law largest positive", 0xAA, ALawToLinear, 32256},
		{"A-law largest negative", 0x2A, ALawToLinear, -32256},
	} {
		if got := tc.law(tc.code); got != tc.want {
			t.Errorf("%s (0x%02x): got %d, want %d", tc.name, tc.code, got, tc.want)
		}
	}
}

// TestG711MatchesSoxOnEveryCode decodes all 256 codes of each law with sox
// (sox -t ul|al -r 8000 -c 1 codes.raw -t s16 -e signed -b 16 -L out),
// a peer decoder, and expects every sample equal.
func TestG711MatchesSoxOnEveryCode(t *testing.T) {
	if _, err := exec.LookPath("sox"); err != nil {
		t.Skip("sox is not installed (CI installs it): the decoder cannot be checked against a peer")
	}
	dir := t.TempDir()
	codes := make([]byte, 256)
	for i := range codes {
		codes[i] = byte(i)
	}
	raw := filepath.Join(dir, "codes.raw")
	if err := os.WriteFile(raw, codes, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		typ string
		law func(byte) int16
	}{{"ul", ULawToLinear}, {"al", ALawToLinear}} {
		out := filepath.Join(dir, tc.typ+".s16")
		if b, err := exec.Command("sox", "-t", tc.typ, "-r", "8000", "-c", "1", raw, "-t", "s16", "-e", "signed", "-b", "16", "-L", out).CombinedOutput(); err != nil {
			t.Fatalf("sox: %v %s", err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil || len(b) != 512 {
			t.Fatalf("sox wrote %d bytes (%v), want 512", len(b), err)
		}
		for i := range 256 {
			if got, want := tc.law(byte(i)), int16(binary.LittleEndian.Uint16(b[2*i:])); got != want {
				t.Errorf("%s code 0x%02x: got %d, sox %d", tc.typ, i, got, want)
			}
		}
	}
}
