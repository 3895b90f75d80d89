package gen

import "math"

// E-model constants (simplified ITU-T G.107, engine.md §9).
const (
	// AssumedOneWayDelayMs is the path delay used when nothing better is known.
	AssumedOneWayDelayMs = 100.0
	// G711Ie is the G.113 equipment impairment of G.711 (µ-law and A-law).
	G711Ie = 0.0
	// SpecBpl is the packet-loss robustness engine.md §9 names (BurstR = 1).
	SpecBpl = 10.0
	// G711PLCBpl is G.113 Appendix I's packet-loss robustness for G.711 with
	// packet-loss concealment; core/mos scores G.711 and Opus with it.
	G711PLCBpl = 25.1
)

// EModel scores a narrowband stream with the simplified G.107 E-model that
// sipnab uses (engine.md §9):
//
//	d      = oneWayDelayMs + jitterMs, capped at 3000 ms
//	Id     = 0.024·d                       (d ≤ 177.3 ms)
//	Id     = 0.024·d + 0.11·(d − 177.3)    (d > 177.3 ms)
//	Ie,eff = Ie + (95 − Ie)·Ppl/(Ppl + Bpl), Ppl = lossPct
//	R      = 93.2 − Id − Ie,eff
//	MOS    = 1 + 0.035·R + R·(R − 60)·(100 − R)·7e-6, clamped to [1, 4.5]
//
// (MOS is 1 for R < 0 and 4.5 for R > 100.) It returns the MOS and R.
// Id's second term is Cole and Rosenbluth's linear fit of G.107's delay
// impairment (a Heaviside step at 177.3 ms), as core/mos computes it; the
// square root engine.md §9 prints would put R under 20 at 250 ms, where
// G.107 gives 79.
// engine.md §9 sets Bpl = 10 (SpecBpl); G.113 gives 25.1 for G.711 with
// packet-loss concealment (G711PLCBpl).
func EModel(lossPct, jitterMs, oneWayDelayMs, ie, bpl float64) (mos, r float64) {
	d := math.Min(oneWayDelayMs+jitterMs, 3000)
	id := 0.024 * d
	if d > 177.3 {
		id += 0.11 * (d - 177.3)
	}
	ieEff := ie
	if lossPct > 0 {
		ieEff = ie + (95-ie)*lossPct/(lossPct+bpl)
	}
	r = 93.2 - id - ieEff
	return MOSFromR(r), r
}

// MOSFromR is G.107's conversion from the rating factor R to MOS (CQE).
func MOSFromR(r float64) float64 {
	switch {
	case r < 0:
		return 1
	case r > 100:
		return 4.5
	}
	m := 1 + 0.035*r + r*(r-60)*(100-r)*7e-6
	return math.Max(1, math.Min(4.5, m))
}
