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
		codec          string
		declared       map[string]Declared
		ie, bpl        float64
		grounding      Grounding
		bplPlaceholder bool
	}{
		{"PCMA", nil, 0, 25.1, Published, false},
		{"opus", nil, 0, 25.1, Published, false},
		{"G729A", nil, 10, 19, Published, false},
		{"G722", nil, 5, 10, Unpublished, false},
		{"EVS", nil, 5, 10, Unpublished, false},
		{"", nil, 5, 10, Unpublished, false},
		{"G722", map[string]Declared{"g722": {Ie: 13}}, 13, 10, OperatorDeclared, false},
		{"PCMU", map[string]Declared{"pcmu": {Ie: 2}}, 2, 25.1, OperatorDeclared, false},
		{"G722", map[string]Declared{"g722": {Ie: 95}}, 5, 10, Unpublished, false},
		// ITU-T G.113 Appendix I rows (mos.go's g113 table).
		{"G726-40", nil, 2, 10, Published, true},
		{"G726-32", nil, 7, 10, Published, true},
		{"AAL2-G726-32", nil, 7, 10, Published, true},
		{"G721", nil, 7, 10, Published, true},
		{"G726-24", nil, 25, 10, Published, true},
		{"G726-16", nil, 50, 10, Published, true},
		{"AAL2-G726-16", nil, 50, 10, Published, true},
		{"G728", nil, 7, 10, Published, true},
		{"G723", nil, 15, 16.1, Published, false},
		{"GSM", nil, 20, 10, Published, true},
		{"GSM-EFR", nil, 5, 10, Published, false},
		{"GSM-HR-08", nil, 23, 10, Published, true},
		// A declared Ie on a codec without a published Bpl keeps the
		// placeholder Bpl and is the operator's (grounded with loss).
		{"G726-32", map[string]Declared{"g726-32": {Ie: 9}}, 9, 10, OperatorDeclared, false},
		// A declared Bpl is used as given; an alias finds its codec's entry.
		{"G722", map[string]Declared{"g722": {Ie: 13, Bpl: 4.3}}, 13, 4.3, OperatorDeclared, false},
		{"G729A", map[string]Declared{"g729": {Ie: 11}}, 11, 19, OperatorDeclared, false},
		{"AMR", map[string]Declared{"amr": {Ie: -1}}, 5, 10, Unpublished, false},
	}
	for _, tc := range tests {
		got := ImpairmentFor(tc.codec, tc.declared)
		if got.Ie != tc.ie || got.Bpl != tc.bpl || got.Grounding != tc.grounding || got.BplPlaceholder != tc.bplPlaceholder {
			t.Errorf("ImpairmentFor(%q, %v): got %+v, want Ie %v Bpl %v %s placeholder Bpl %v", tc.codec, tc.declared, got, tc.ie, tc.bpl, tc.grounding, tc.bplPlaceholder)
		}
	}
	for _, tc := range []struct {
		codec    string
		declared map[string]Declared
		want     string
	}{
		{"G722", map[string]Declared{"g722": {Ie: 13, Bpl: 4.3}}, "operator [media.codec_ie] g722: Ie 13, Bpl 4.3 (declared)"},
		{"AMR", map[string]Declared{"amr": {Ie: 6}}, "operator [media.codec_ie] amr: Ie 6, Bpl 10 (not declared: G.107 default)"},
		{"PCMU", map[string]Declared{"pcmu": {Ie: 2}}, "operator [media.codec_ie] pcmu: Ie 2, Bpl 25.1 (not declared: ITU-T G.113 Appendix I: G.711 with PLC)"},
	} {
		if got := ImpairmentFor(tc.codec, tc.declared).Source; got != tc.want {
			t.Errorf("ImpairmentFor(%q, %v).Source: got %q, want %q", tc.codec, tc.declared, got, tc.want)
		}
	}
	if lo, hi := G7231(true), G7231(false); lo.Ie != 19 || !lo.BplPlaceholder || hi.Ie != 15 || hi.Bpl != 16.1 {
		t.Errorf("G7231: got 5.3 kbit/s %+v, 6.3 kbit/s %+v, want Ie 19 (no Bpl) and Ie 15 Bpl 16.1", lo, hi)
	}
}

// TestG113Codecs scores each G.113 Appendix I codec by hand at the assumed
// 100 ms one-way delay without jitter (Id = 0.024·100 = 2.4, so
// R = 93.2 − 2.4 − Ie,eff) and maps R to MOS with G.107 Annex B. G.726's
// score follows its bit rate. A codec with no published Bpl is grounded
// without loss and ProvisionalLoss with it.
func TestG113Codecs(t *testing.T) {
	mosOf := func(r float64) float64 { return 1 + 0.035*r + r*(r-60)*(100-r)*7e-6 }
	tests := []struct {
		codec         string
		imp           Impairment
		loss          float64
		wantR         float64
		wantMOS       float64 // hand-computed
		wantGrounding Grounding
	}{
		{"G726-40", ImpairmentFor("G726-40", nil), 0, 88.8, 4.3085, Published},
		{"G726-32", ImpairmentFor("G726-32", nil), 0, 83.8, 4.1592, Published},
		{"G726-24", ImpairmentFor("G726-24", nil), 0, 65.8, 3.3944, Published},
		{"G726-16", ImpairmentFor("G726-16", nil), 0, 40.8, 2.1034, Published},
		{"G728", ImpairmentFor("G728", nil), 0, 83.8, 4.1592, Published},
		{"G.723.1 6.3k", G7231(false), 0, 75.8, 3.8559, Published},
		{"G.723.1 5.3k", G7231(true), 0, 71.8, 3.6802, Published},
		{"GSM full rate", ImpairmentFor("GSM", nil), 0, 70.8, 3.6343, Published},
		{"GSM half rate", ImpairmentFor("GSM-HR-08", nil), 0, 67.8, 3.4922, Published},
		{"GSM-EFR", ImpairmentFor("GSM-EFR", nil), 0, 85.8, 4.2230, Published},
		// G.723.1 6.3k at 2 % loss, Bpl 16.1: Ie,eff = 15 + 80·2/18.1 = 23.8398.
		{"G.723.1 6.3k 2% loss", G7231(false), 2, 90.8 - 23.8398, 3.4514, Published},
		// GSM-EFR at 1 % loss, Bpl 10: Ie,eff = 5 + 90·1/11 = 13.1818.
		{"GSM-EFR 1% loss", ImpairmentFor("GSM-EFR", nil), 1, 90.8 - 13.1818, 3.9309, Published},
		// GSM full rate at 1 % loss: no published Bpl, placeholder 10:
		// Ie,eff = 20 + 75·1/11 = 26.8182, not grounded.
		{"GSM full rate 1% loss", ImpairmentFor("GSM", nil), 1, 90.8 - 26.8182, mosOf(90.8 - 26.8182), ProvisionalLoss},
		// G726-16 at 1 %: Ie,eff = 50 + 45/11 = 54.0909, not grounded.
		{"G726-16 1% loss", ImpairmentFor("G726-16", nil), 1, 90.8 - 54.0909, mosOf(90.8 - 54.0909), ProvisionalLoss},
	}
	for _, tc := range tests {
		t.Run(tc.codec, func(t *testing.T) {
			got := Estimate(tc.imp, tc.loss, 0, DefaultOneWayDelayMs)
			if !near(got.R, tc.wantR, 0.0005) {
				t.Errorf("R %.4f, want %.4f", got.R, tc.wantR)
			}
			if !near(got.MOS, tc.wantMOS, 0.0005) {
				t.Errorf("MOS %.4f, want %.4f", got.MOS, tc.wantMOS)
			}
			if got.Grounding != tc.wantGrounding || got.Grounded() != (tc.wantGrounding == Published) {
				t.Errorf("grounding %s (grounded %v), want %s", got.Grounding, got.Grounded(), tc.wantGrounding)
			}
		})
	}
	if a, b := Estimate(ImpairmentFor("G726-16", nil), 0, 0, 100), Estimate(ImpairmentFor("G726-32", nil), 0, 0, 100); a.MOS >= b.MOS {
		t.Errorf("G726-16 MOS %.3f not below G726-32's %.3f", a.MOS, b.MOS)
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
