package mos

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestFromRAnnexB checks the R→MOS mapping against the values ITU-T G.107
// Annex B tabulates (R 50…100 → MOS 2.58…4.5).
func TestFromRAnnexB(t *testing.T) {
	tests := []struct {
		r, want float64
	}{
		{-5, 1}, {0, 1}, {50, 2.575}, {60, 3.1}, {70, 3.597}, {80, 4.024}, {90, 4.339}, {93.2, 4.409}, {100, 4.5}, {120, 4.5},
	}
	for _, tc := range tests {
		if got := FromR(tc.r); !near(got, tc.want, 0.0005) {
			t.Errorf("FromR(%v): got %.4f, want %.3f", tc.r, got, tc.want)
		}
	}
	// The cubic dips under 1 for small positive R; the clamp holds.
	if got := FromR(4); got < 1 {
		t.Errorf("FromR(4): got %v, want >= 1", got)
	}
}

func TestEstimate(t *testing.T) {
	g711 := ImpairmentFor("PCMU", nil)
	g729 := ImpairmentFor("G729", nil)
	amrwb := ImpairmentFor("AMR-WB", nil)
	tests := []struct {
		name                string
		imp                 Impairment
		loss, jitter, delay float64
		wantR, wantMOS      float64
		wantGrounding       Grounding
	}{
		// G.107 default parameters, no delay: R = 93.2, MOS 4.41.
		{"g.107 defaults", g711, 0, 0, 0, 93.2, 4.409, Published},
		// 100 ms assumed delay, 10 ms jitter: Id = 0.024·110 = 2.64.
		{"g711 clean", g711, 0, 10, 100, 90.56, 4.3525, Published},
		// Placeholder Ie 5 gives 4.216 at 10 ms jitter, no loss (engine.md §9).
		{"placeholder amr-wb", amrwb, 0, 10, 100, 85.56, 4.216, Unpublished},
		// G.729 Ie 10 with 1 % loss, Bpl 19: Ie,eff = 10 + 85·1/20 = 14.25.
		{"g729 one percent loss", g729, 1, 0, 100, 93.2 - 2.4 - 14.25, 3.887, Published},
		// G.711 (Bpl 25.1) at 5 % loss: Ie,eff = 95·5/30.1 = 15.78.
		{"g711 five percent loss", g711, 5, 0, 100, 93.2 - 2.4 - 95*5/30.1, 3.823, Published},
		// Above the 177.3 ms knee: d = 200, Id = 4.8 + 0.11·22.7·√22.7.
		{"g711 past knee", g711, 0, 0, 200, 93.2 - 4.8 - 0.11*22.7, 4.226, Published},
		// Total loss: R 14.86, MOS 1.12.
		{"total loss", g711, 100, 0, 100, 93.2 - 2.4 - 95*100/125.1, 1.120, Published},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Estimate(tc.imp, tc.loss, tc.jitter, tc.delay)
			if !near(got.R, tc.wantR, 0.01) {
				t.Errorf("got R %.3f, want %.3f", got.R, tc.wantR)
			}
			if !near(got.MOS, tc.wantMOS, 0.0005) {
				t.Errorf("got MOS %.4f, want %.3f", got.MOS, tc.wantMOS)
			}
			if got.Grounding != tc.wantGrounding {
				t.Errorf("got grounding %s, want %s", got.Grounding, tc.wantGrounding)
			}
		})
	}
}

func TestImpairmentFor(t *testing.T) {
	tests := []struct {
		codec    string
		declared map[string]float64
		want     Impairment
	}{
		{"PCMA", nil, Impairment{0, 25.1, Published}},
		{"opus", nil, Impairment{0, 25.1, Published}},
		{"G729A", nil, Impairment{10, 19, Published}},
		{"G722", nil, Impairment{5, 10, Unpublished}},
		{"EVS", nil, Impairment{5, 10, Unpublished}},
		{"", nil, Impairment{5, 10, Unpublished}},
		{"G722", map[string]float64{"g722": 13}, Impairment{13, 10, OperatorDeclared}},
		{"PCMU", map[string]float64{"pcmu": 2}, Impairment{2, 25.1, OperatorDeclared}},
		{"G722", map[string]float64{"g722": 95}, Impairment{5, 10, Unpublished}},
	}
	for _, tc := range tests {
		if got := ImpairmentFor(tc.codec, tc.declared); got != tc.want {
			t.Errorf("ImpairmentFor(%q, %v): got %+v, want %+v", tc.codec, tc.declared, got, tc.want)
		}
	}
}

func TestResolveDelay(t *testing.T) {
	tests := []struct {
		name        string
		declared    float64
		hasDeclared bool
		xr, sr      float64
		want        Delay
	}{
		{"operator wins", 40, true, 300, 200, Delay{DelayDeclared, false, 40}},
		{"xr round trip halved", 0, false, 300, 200, Delay{DelayXR, false, 150}},
		{"sr echo halved", 0, false, 0, 200, Delay{DelaySREcho, false, 100}},
		{"assumed", 0, false, 0, 0, Delay{DelayAssumed, true, 100}},
		{"nan declared ignored", math.NaN(), true, 0, 0, Delay{DelayAssumed, true, 100}},
	}
	for _, tc := range tests {
		if got := ResolveDelay(tc.declared, tc.hasDeclared, tc.xr, tc.sr); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDelayCap(t *testing.T) {
	if got, want := DelayImpairment(1e9), DelayImpairment(MaxDelayMs); got != want {
		t.Errorf("got %v, want capped %v", got, want)
	}
}
