// Package mos scores voice quality with a simplified ITU-T G.107 E-model:
// R = 93.2 − Id − Ie,eff and the G.107 Annex B R→MOS mapping.
//
// A score is grounded only when ITU-T G.113 publishes the codec's equipment
// impairment (G.711 µ-law and A-law, G.729, and Opus scored as G.711) or the
// operator declared it. Every other codec gets a placeholder Ie of 5 and is
// reported ungrounded: a number that looks like a measurement but is not one.
package mos

import (
	"math"
	"strings"
)

// R0 is the G.107 basic signal-to-noise ratio with default parameters.
const R0 = 93.2

// DefaultOneWayDelayMs is the path delay assumed when nothing measured it.
const DefaultOneWayDelayMs = 100.0

// MaxDelayMs caps the delay fed into Id.
const MaxDelayMs = 3000.0

// PlaceholderIe is the equipment impairment used for codecs without a
// published G.113 value.
const PlaceholderIe = 5.0

// PlaceholderBpl is the packet-loss robustness used with PlaceholderIe
// (G.107 random-loss default with BurstR = 1).
const PlaceholderBpl = 10.0

// Grounding says what a score's codec impairment rests on.
type Grounding string

const (
	Published        Grounding = "published"         // ITU-T G.113 value
	OperatorDeclared Grounding = "operator_declared" // [media.codec_ie]
	Unpublished      Grounding = "unpublished"       // placeholder Ie
)

// Impairment is a codec's equipment impairment factor and its packet-loss
// robustness factor.
type Impairment struct {
	Ie        float64
	Bpl       float64
	Grounding Grounding
}

// Grounded reports whether the impairment is a published or declared value.
func (i Impairment) Grounded() bool { return i.Grounding != Unpublished }

// published holds G.113 Appendix I values: G.711 with packet-loss
// concealment (Ie 0, Bpl 25.1), G.729 (Ie 10; Bpl 19.0 as for G.729A). Opus
// is scored as G.711.
var published = map[string]Impairment{
	"pcmu": {0, 25.1, Published},
	"pcma": {0, 25.1, Published},
	"g711": {0, 25.1, Published},
	"g729": {10, 19.0, Published},
	"opus": {0, 25.1, Published},
}

// ImpairmentFor returns the impairment of a codec by its encoding name
// (case-insensitive: "PCMU", "G729", "opus" ...). declared holds operator
// values by lowercase name (0 ≤ Ie < 95); they win over published ones.
// Names G.113 does not cover return the placeholder, ungrounded.
func ImpairmentFor(codec string, declared map[string]float64) Impairment {
	name := strings.ToLower(codec)
	if name == "g729a" || name == "g729ab" || name == "g729b" {
		name = "g729"
	}
	if ie, ok := declared[name]; ok && ie >= 0 && ie < 95 {
		bpl := PlaceholderBpl
		if p, ok := published[name]; ok {
			bpl = p.Bpl
		}
		return Impairment{Ie: ie, Bpl: bpl, Grounding: OperatorDeclared}
	}
	if p, ok := published[name]; ok {
		return p
	}
	return Impairment{Ie: PlaceholderIe, Bpl: PlaceholderBpl, Grounding: Unpublished}
}

// UngroundedNote is the note carried by an ungrounded score.
const UngroundedNote = "no published G.113 impairment for this codec: the score uses a placeholder Ie of 5 and is not a measurement"

// DelaySource says where the one-way delay behind a score came from.
type DelaySource string

const (
	DelayDeclared DelaySource = "declared"           // operator --one-way-delay
	DelayXR       DelaySource = "xr_voip_metrics"    // half an RTCP XR round trip
	DelaySREcho   DelaySource = "sender_report_echo" // half an LSR/DLSR round trip (a lower bound off-path)
	DelayAssumed  DelaySource = "assumed"            // DefaultOneWayDelayMs
)

// Delay is the resolved one-way path delay.
type Delay struct {
	Source   DelaySource `json:"source"`
	Assumed  bool        `json:"assumed"`
	OneWayMs float64     `json:"one_way_ms"`
}

// ResolveDelay picks the one-way delay: the operator's value, else half of
// an XR round trip, else half of an SR-echo round trip, else the assumed
// 100 ms. Negative, NaN or zero round trips count as absent.
func ResolveDelay(declaredMs float64, hasDeclared bool, xrRTTMs, srRTTMs float64) Delay {
	switch {
	case hasDeclared && declaredMs >= 0 && !math.IsNaN(declaredMs) && !math.IsInf(declaredMs, 0):
		return Delay{Source: DelayDeclared, OneWayMs: declaredMs}
	case xrRTTMs > 0 && !math.IsInf(xrRTTMs, 0):
		return Delay{Source: DelayXR, OneWayMs: xrRTTMs / 2}
	case srRTTMs > 0 && !math.IsInf(srRTTMs, 0):
		return Delay{Source: DelaySREcho, OneWayMs: srRTTMs / 2}
	}
	return Delay{Source: DelayAssumed, Assumed: true, OneWayMs: DefaultOneWayDelayMs}
}

// DelayImpairment is Id for a delay d in ms: 0.024·d, plus
// 0.11·(d − 177.3) above 177.3 ms (Cole and Rosenbluth's fit of the full
// G.107 delay impairment at default parameters: the second term is the
// Heaviside step H(d − 177.3), not a square root), with d capped at
// MaxDelayMs. It stays within 1 R of G.107's Idte + Idle + Idd up to
// 300 ms; a square-root knee would take R under 20 at 250 ms, where G.107
// gives 79.
func DelayImpairment(d float64) float64 {
	if math.IsNaN(d) || d < 0 {
		d = 0
	}
	if d > MaxDelayMs {
		d = MaxDelayMs
	}
	id := 0.024 * d
	if d > 177.3 {
		id += 0.11 * (d - 177.3)
	}
	return id
}

// EffectiveIe is Ie,eff = Ie + (95 − Ie)·Ppl/(Ppl + Bpl) for a loss
// percentage ppl (clamped to [0, 100]).
func EffectiveIe(imp Impairment, ppl float64) float64 {
	if math.IsNaN(ppl) || ppl < 0 {
		ppl = 0
	}
	if ppl > 100 {
		ppl = 100
	}
	if ppl == 0 {
		return imp.Ie
	}
	return imp.Ie + (95-imp.Ie)*ppl/(ppl+imp.Bpl)
}

// RFactor computes R = 93.2 − Id − Ie,eff where Id is taken at one-way
// delay plus jitter (ms) and Ie,eff at lossPct.
func RFactor(imp Impairment, lossPct, jitterMs, oneWayDelayMs float64) float64 {
	if math.IsNaN(jitterMs) || jitterMs < 0 {
		jitterMs = 0
	}
	return R0 - DelayImpairment(oneWayDelayMs+jitterMs) - EffectiveIe(imp, lossPct)
}

// FromR maps an R-factor to MOS (G.107 Annex B):
// 1 + 0.035R + R(R−60)(100−R)·7e-6, clamped to [1, 4.5].
func FromR(r float64) float64 {
	if math.IsNaN(r) || r <= 0 {
		return 1
	}
	if r >= 100 {
		return 4.5
	}
	m := 1 + 0.035*r + r*(r-60)*(100-r)*7e-6
	return math.Max(1, math.Min(4.5, m))
}

// Score is one E-model evaluation.
type Score struct {
	R         float64
	MOS       float64
	Grounding Grounding
}

// Grounded reports whether the score rests on a published or declared Ie.
func (s Score) Grounded() bool { return s.Grounding != Unpublished }

// Estimate scores a codec at a loss percentage, jitter and one-way delay.
func Estimate(imp Impairment, lossPct, jitterMs, oneWayDelayMs float64) Score {
	r := RFactor(imp, lossPct, jitterMs, oneWayDelayMs)
	return Score{R: r, MOS: FromR(r), Grounding: imp.Grounding}
}
