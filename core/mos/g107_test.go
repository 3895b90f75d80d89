package mos

import (
	"math"
	"testing"
)

// g107R is the full ITU-T G.107 (06/2015) E-model, §7.1–7.7, with every
// parameter at its Table 3 default except the delays: mean one-way delay
// T, absolute delay Ta and round-trip delay Tr (ms). It is the reference
// the simplified model is checked against; with every delay 0 it gives
// G.107's R = 93.2.
func g107R(T, Ta, Tr float64) float64 {
	const (
		SLR, RLR, STMR, LSTR = 8.0, 2.0, 15.0, 18.0
		Ds                   = 3.0
		TELR, WEPL, qdu      = 65.0, 110.0, 1.0
		Nc, Nfor, Ps, Pr     = -70.0, -64.0, 35.0, 35.0
	)
	lg := math.Log10
	OLR := SLR + RLR
	Nos := Ps - SLR - Ds - 100 + 0.004*math.Pow(Ps-OLR-Ds-14, 2)
	Pre := Pr + 10*lg(1+math.Pow(10, (10-LSTR)/10))
	Nor := RLR - 121 + Pre + 0.008*math.Pow(Pre-35, 2)
	Nfo := Nfor + RLR
	No := 10 * lg(math.Pow(10, Nc/10)+math.Pow(10, Nos/10)+math.Pow(10, Nor/10)+math.Pow(10, Nfo/10))
	Ro := 15 - 1.5*(SLR+No)

	Xolr := OLR + 0.2*(64+No-RLR)
	Iolr := 20 * (math.Pow(1+math.Pow(Xolr/8, 8), 1.0/8) - Xolr/8)
	STMRo := -10 * lg(math.Pow(10, -STMR/10)+math.Exp(-T/4)*math.Pow(10, -TELR/10))
	Ist := 12*math.Pow(1+math.Pow((STMRo-13)/6, 8), 1.0/8) - 28*math.Pow(1+math.Pow((STMRo+1)/19.4, 35), 1.0/35) -
		13*math.Pow(1+math.Pow((STMRo-3)/33, 13), 1.0/13) + 29
	Q := 37 - 15*lg(qdu)
	G := 1.07 + 0.258*Q + 0.0602*Q*Q
	Y := (Ro-100)/15 + 46/8.4 - G/9
	Z := 46.0/30 - G/40
	Iq := 15 * lg(1+math.Pow(10, Y)+math.Pow(10, Z))
	Is := Iolr + Ist + Iq

	TERV := TELR - 40*lg((1+T/10)/(1+T/150)) + 6*math.Exp(-0.3*T*T)
	Roe := -1.5 * (No - RLR)
	Re := 80 + 2.5*(TERV-14)
	Idte := ((Roe-Re)/2 + math.Sqrt((Roe-Re)*(Roe-Re)/4+100) - 1) * (1 - math.Exp(-T))
	Rle := 10.5 * (WEPL + 7) * math.Pow(Tr+1, -0.25)
	Idle := (Ro-Rle)/2 + math.Sqrt((Ro-Rle)*(Ro-Rle)/4+169)
	Idd := 0.0
	if Ta > 100 {
		X := math.Log(Ta/100) / math.Log(2)
		Idd = 25 * (math.Pow(1+math.Pow(X, 6), 1.0/6) - 3*math.Pow(1+math.Pow(X/3, 6), 1.0/6) + 2)
	}
	return Ro - Is - Idte - Idle - Idd
}

// TestAgainstG107 checks the simplified E-model against the full G.107
// model at its default parameters (one-way delay d: T = Ta = d, Tr = 2d):
// the R the simplified Id gives stays within 1 of G.107's up to 300 ms of
// one-way delay, and the MOS within 0.05. The reference points below are
// G.107's own R at those delays (computed by g107R, which reproduces the
// recommendation's R = 93.2 at zero delay).
func TestAgainstG107(t *testing.T) {
	if r := g107R(0, 0, 0); math.Abs(r-R0) > 0.01 {
		t.Fatalf("G.107 at default parameters: got R %.3f, want %.1f", r, R0)
	}
	g711 := ImpairmentFor("PCMA", nil)
	tests := []struct {
		delayMs float64
		g107R   float64 // G.107, rounded to 2 decimals
	}{
		{0, 93.21}, {50, 91.76}, {100, 90.66}, {150, 89.54}, {177.3, 88.05},
		{200, 85.80}, {250, 79.18}, {300, 72.67},
	}
	for _, tc := range tests {
		ref := g107R(tc.delayMs, tc.delayMs, 2*tc.delayMs)
		if math.Abs(ref-tc.g107R) > 0.005 {
			t.Fatalf("reference at %v ms: got %.3f, table says %.2f", tc.delayMs, ref, tc.g107R)
		}
		got := Estimate(g711, 0, 0, tc.delayMs)
		if d := math.Abs(got.R - ref); d > 1.0 {
			t.Errorf("one-way delay %v ms: got R %.2f, G.107 %.2f (off by %.2f)", tc.delayMs, got.R, ref, d)
		}
		if d := math.Abs(got.MOS - FromR(ref)); d > 0.05 {
			t.Errorf("one-way delay %v ms: got MOS %.3f, G.107 %.3f", tc.delayMs, got.MOS, FromR(ref))
		}
	}
	// Every millisecond up to 300 ms, not only the table's points.
	for d := 0.0; d <= 300; d++ {
		if got, ref := Estimate(g711, 0, 0, d).R, g107R(d, d, 2*d); math.Abs(got-ref) > 1.0 {
			t.Fatalf("one-way delay %v ms: got R %.2f, G.107 %.2f", d, got, ref)
		}
	}
	// Jitter adds to the delay: 100 ms assumed + 150 ms of jitter scores
	// as 250 ms of delay, a usable call, not a failed one.
	if got := Estimate(g711, 0, 150, DefaultOneWayDelayMs); got.MOS < 3.9 {
		t.Errorf("100 ms delay + 150 ms jitter: got MOS %.3f, want about 3.99 (G.107 at 250 ms)", got.MOS)
	}
}
