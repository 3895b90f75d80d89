package analysis

import (
	"testing"

	"github.com/sipnab/sipnab/core/media"
)

// TestPtimesCompareModalPtimes: each direction's ptime is the one backed by
// the most timestamp steps across its audio streams (a short stream after
// an SSRC change does not stand for the direction), so two directions at
// 20 ms are not a ptime asymmetry, and 20 ms against 40 ms is.
func TestPtimesCompareModalPtimes(t *testing.T) {
	st := func(ptime float64, modal uint64) *media.StreamInfo {
		return &media.StreamInfo{Kind: "audio", PtimeMs: &ptime, PtimeSteps: &media.PtimeSteps{Modal: modal, Counted: modal}}
	}
	tests := []struct {
		name     string
		fwd, rev []*media.StreamInfo
		wantF    float64
		wantR    float64
	}{
		{"one stream each way", []*media.StreamInfo{st(20, 400)}, []*media.StreamInfo{st(20, 400)}, 20, 20},
		{"a short first stream at 10 ms", []*media.StreamInfo{st(10, 3), st(20, 400)}, []*media.StreamInfo{st(20, 390)}, 20, 20},
		{"20 against 40", []*media.StreamInfo{st(20, 400)}, []*media.StreamInfo{st(40, 200)}, 20, 40},
	}
	for _, tc := range tests {
		f, r, ok := ptimes(tc.fwd, tc.rev)
		if !ok || f != tc.wantF || r != tc.wantR {
			t.Errorf("%s: got %v / %v (%v), want %v / %v", tc.name, f, r, ok, tc.wantF, tc.wantR)
		}
	}
	if _, _, ok := ptimes([]*media.StreamInfo{{Kind: "audio"}}, []*media.StreamInfo{st(20, 5)}); ok {
		t.Errorf("a direction without a measured ptime compared")
	}
}
