package mos

import (
	"math"
	"testing"
)

// TestWidebandScoresByHand: G.107.1 R = 129 − Id − Ie,eff,WB and
// MOS_CQEW = G.107 Annex B at R/1.29, worked by hand. Without delay
// (Id(0) = 0): Ie,WB 1 (23.05 kbit/s monotic) gives R 128, R/1.29 =
// 99.2248, MOS 1 + 3.47287 + 99.2248·39.2248·0.7752·7e-6 = 4.4940; Ie,WB
// 41 (6.6 monotic) gives R 88, 68.2171, 3.5123 — the nine modes' span the
// spec names (≈4.49 to 3.51). At the assumed 100 ms, Id = 2.4. With 2 %
// loss at 12.65 diotic: Ie,eff = 20 + 75·2/6.3 = 43.8095.
func TestWidebandScoresByHand(t *testing.T) {
	annexB := func(r float64) float64 { r /= 1.29; return 1 + 0.035*r + r*(r-60)*(100-r)*7e-6 }
	for _, tc := range []struct {
		name                string
		mode                int
		ctx                 Listening
		loss, jitter, delay float64
		wantR, wantMOS      float64
		wantReason          string
	}{
		{"23.05 kbit/s monotic, no delay", 7, Monotic, 0, 0, 0, 128, 4.4940, ""},
		{"6.6 kbit/s monotic, no delay", 0, Monotic, 0, 0, 0, 88, 3.5123, ""},
		{"23.85 kbit/s is worse than 23.05 as published", 8, Monotic, 0, 0, 0, 121, annexB(121), ""},
		{"12.65 kbit/s monotic at the assumed 100 ms", 2, Monotic, 0, 0, 100, 129 - 2.4 - 13, annexB(129 - 2.4 - 13), ""},
		{"6.6 kbit/s diotic", 0, Diotic, 0, 0, 0, 73, 2.9220, ""},
		{"12.65 kbit/s diotic with 2 % loss", 2, Diotic, 2, 0, 0, 129 - 43.8095, annexB(129 - 43.8095), ""},
		{"no diotic Ie,WB for 14.25 kbit/s", 3, Diotic, 0, 0, 0, 0, 0, WBNoIe},
		{"loss without a published Bpl,WB (monotic)", 2, Monotic, 1, 0, 0, 0, 0, WBNoBpl},
		{"loss without a published Bpl,WB (15.85 diotic)", 4, Diotic, 1, 0, 0, 0, 0, WBNoBpl},
		{"an unpinned mode", -1, Monotic, 0, 0, 0, 0, 0, WBNoMode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, reason, ok := Wideband(tc.mode, tc.ctx, tc.loss, tc.jitter, tc.delay)
			if reason != tc.wantReason || ok != (tc.wantReason == "") {
				t.Fatalf("got reason %q ok %v, want %q", reason, ok, tc.wantReason)
			}
			if !ok {
				return
			}
			if math.Abs(s.R-tc.wantR) > 1e-3 || math.Abs(s.MOSCQE-tc.wantMOS) > 5e-4 {
				t.Errorf("got R %.4f MOS_CQEW %.4f, want %.4f %.4f", s.R, s.MOSCQE, tc.wantR, tc.wantMOS)
			}
		})
	}
}
