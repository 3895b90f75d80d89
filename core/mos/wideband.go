package mos

import "math"

// Wideband scoring of AMR-WB (ITU-T G.722.2) with the wideband E-model of
// ITU-T G.107.1: R = Ro,WB − Id − Ie,eff,WB with Ro,WB = 129 (Is,WB and A
// are 0 by default), Ie,eff,WB = Ie,WB + (95 − Ie,WB)·Ppl/(Ppl + Bpl,WB)
// (the constant is G.107's 95, not 129), and MOS_CQEW from G.107.1 Annex A:
// the G.107 Annex B polynomial at R/1.29. Id is the narrowband model's
// delay impairment (DelayImpairment) at the resolved one-way delay plus
// jitter, as for every other score here.
//
// Ie,WB and Bpl,WB are ITU-T G.113 Appendix IV's provisional planning
// values: Table IV.1 (monotic listening: handset, one-ear headset) for all
// nine modes, Table IV.3 (diotic: two-ear headset, loudspeaker) for six,
// and Table IV.4's Bpl,WB for three modes, diotic, random loss only. A mode
// without a value in the listening context, or loss without a Bpl,WB, is
// not scored: nothing published describes it.
//
// The scale is not the narrowband one: a MOS_CQEW is never compared with,
// averaged with or substituted for a narrowband MOS.

// RoWB is G.107.1's basic signal-to-noise ratio on the wideband scale.
const RoWB = 129.0

// Listening is the G.113 Appendix IV listening context.
type Listening string

const (
	Monotic Listening = "monotic" // Table IV.1 (the default)
	Diotic  Listening = "diotic"  // Table IV.3
)

// ieWB is Ie,WB by AMR-WB mode (frame type 0-8); -1 where the table has no
// value.
var ieWB = map[Listening][9]float64{
	// 6.6, 8.85, 12.65, 14.25, 15.85, 18.25, 19.85, 23.05, 23.85 kbit/s
	Monotic: {41, 26, 13, 10, 7, 5, 3, 1, 8},
	Diotic:  {56, 41, 20, -1, 17, -1, -1, 8, 10},
}

// bplWB is Table IV.4's Bpl,WB (diotic, random loss) by mode; -1: none.
var bplWB = [9]float64{-1, -1, 4.3, -1, -1, -1, -1, 4.6, 4.9}

// WidebandScore is one G.107.1 evaluation of an AMR-WB mode.
type WidebandScore struct {
	R      float64
	MOSCQE float64 // MOS_CQEW
	IeWB   float64
	BplWB  float64 // 0 when no loss entered the score
	Source string  // the G.113 Appendix IV table(s) behind Ie,WB and Bpl,WB
}

// Refusals of Wideband: the reason a mode is not scored.
const (
	WBNoMode       = "AMR-WB mode not pinned: the SDP mode-set names several modes and the frames carry more than one (or none): the nine modes span Ie,WB 1 to 41"
	WBNoIe         = "G.113 Appendix IV Table IV.3 has no diotic Ie,WB for this AMR-WB mode"
	WBNoBpl        = "packet loss, and G.113 Appendix IV Table IV.4 gives Bpl,WB for 12.65, 23.05 and 23.85 kbit/s only, diotic only"
	WBBadListening = "unknown listening context"
)

// Wideband scores AMR-WB mode (frame type 0-8) under a listening context
// at a loss percentage, jitter and one-way delay; reason says why not when
// ok is false.
func Wideband(mode int, ctx Listening, lossPct, jitterMs, oneWayDelayMs float64) (s WidebandScore, reason string, ok bool) {
	tab, known := ieWB[ctx]
	switch {
	case !known:
		return s, WBBadListening, false
	case mode < 0 || mode > 8:
		return s, WBNoMode, false
	case tab[mode] < 0:
		return s, WBNoIe, false
	}
	s.IeWB = tab[mode]
	s.Source = "ITU-T G.113 Appendix IV Table IV.1 (monotic)"
	if ctx == Diotic {
		s.Source = "ITU-T G.113 Appendix IV Table IV.3 (diotic)"
	}
	if math.IsNaN(lossPct) || lossPct < 0 {
		lossPct = 0
	}
	lossPct = math.Min(lossPct, 100)
	ie := s.IeWB
	if lossPct > 0 {
		if ctx != Diotic || bplWB[mode] < 0 {
			return WidebandScore{}, WBNoBpl, false
		}
		s.BplWB = bplWB[mode]
		s.Source += ", Table IV.4 (Bpl,WB)"
		ie += (95 - ie) * lossPct / (lossPct + s.BplWB)
	}
	if math.IsNaN(jitterMs) || jitterMs < 0 {
		jitterMs = 0
	}
	s.R = RoWB - DelayImpairment(oneWayDelayMs+jitterMs) - ie
	s.MOSCQE = FromR(s.R / 1.29)
	return s, "", true
}
