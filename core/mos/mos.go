// Package mos scores voice quality with a simplified ITU-T G.107 E-model:
// R = 93.2 − Id − Ie,eff and the G.107 Annex B R→MOS mapping.
//
// A score is grounded only when ITU-T G.113 Appendix I gives the codec's
// equipment impairment (G.711 µ-law and A-law, G.726 at each bit rate,
// G.728, G.729, G.723.1, GSM full rate, half rate and EFR; Opus scored as
// G.711) or the operator declared it. Every other codec gets a placeholder
// Ie of 5 and is reported ungrounded: a number that looks like a measurement
// but is not one. Where G.113 gives an Ie but no packet-loss robustness
// (Bpl), a score with loss uses a placeholder Bpl and is not grounded
// either (ProvisionalLoss); without loss it rests on Ie alone and is.
package mos

import (
	"math"
	"strconv"
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
	// ProvisionalLoss: a score with packet loss on a codec whose Ie G.113
	// gives but whose Bpl it does not: the loss term uses PlaceholderBpl.
	ProvisionalLoss Grounding = "published_ie_placeholder_bpl"
)

// Impairment is a codec's equipment impairment factor and its packet-loss
// robustness factor.
type Impairment struct {
	Ie        float64
	Bpl       float64
	Grounding Grounding
	// BplPlaceholder says Bpl is PlaceholderBpl because G.113 Appendix I
	// gives none for the codec: a score with loss is ProvisionalLoss.
	BplPlaceholder bool
	// Source names the G.113 row the values come from ("" when none).
	Source string
}

// Grounded reports whether the impairment's Ie is a published or declared
// value (its Bpl may still be a placeholder: see BplPlaceholder).
func (i Impairment) Grounded() bool { return i.Grounding != Unpublished }

// g113 is ITU-T G.113 (11/2007) Appendix I, "Provisional planning values for
// the equipment impairment factor Ie" (Table I.1) and, where it gives one,
// the packet-loss robustness factor Bpl (Table I.3, random loss):
//
//	G.711 with packet-loss concealment ........ Ie 0,  Bpl 25.1
//	G.726/G.727 ADPCM 40 / 32 / 24 / 16 kbit/s  Ie 2 / 7 / 25 / 50, no Bpl
//	G.728 LD-CELP 16 kbit/s ................... Ie 7,  no Bpl
//	G.729 CS-ACELP 8 kbit/s ................... Ie 10; Bpl 19.0 (given for G.729A+VAD)
//	G.723.1 MP-MLQ 6.3 kbit/s ................. Ie 15, Bpl 16.1 (G.723.1+VAD, 30 ms)
//	G.723.1 ACELP 5.3 kbit/s .................. Ie 19, no Bpl
//	GSM 06.10 full rate (RPE-LTP 13 kbit/s) ... Ie 20, no Bpl
//	GSM 06.20 half rate (VSELP 5.6 kbit/s) .... Ie 23, no Bpl
//	GSM 06.60 enhanced full rate (12.2 kbit/s)  Ie 5,  Bpl 10.0
//
// Keys are lowercase RTP encoding names (RFC 3551 §4.5, RFC 4867, RFC
// 5993): GSM is full rate (RFC 3551 §4.5.8), AAL2-G726-nn and G726-nn are
// the same ADPCM at nn kbit/s in the two RFC 3551 §4.5.4 packings, and G723
// is G.723.1 at 6.3 kbit/s unless the payload says 5.3 (G7231 below). Opus
// has no G.113 row; it is scored as G.711.
var published = map[string]Impairment{
	"pcmu":      {0, 25.1, Published, false, g113 + "G.711 with PLC"},
	"pcma":      {0, 25.1, Published, false, g113 + "G.711 with PLC"},
	"g711":      {0, 25.1, Published, false, g113 + "G.711 with PLC"},
	"g726-40":   {2, PlaceholderBpl, Published, true, g113 + "G.726 ADPCM 40 kbit/s"},
	"g726-32":   {7, PlaceholderBpl, Published, true, g113 + "G.726 ADPCM 32 kbit/s"},
	"g726-24":   {25, PlaceholderBpl, Published, true, g113 + "G.726 ADPCM 24 kbit/s"},
	"g726-16":   {50, PlaceholderBpl, Published, true, g113 + "G.726 ADPCM 16 kbit/s"},
	"g728":      {7, PlaceholderBpl, Published, true, g113 + "G.728 LD-CELP 16 kbit/s"},
	"g729":      {10, 19.0, Published, false, g113 + "G.729 CS-ACELP 8 kbit/s"},
	"g723":      {15, 16.1, Published, false, g113 + "G.723.1 MP-MLQ 6.3 kbit/s"},
	"g723-5.3":  {19, PlaceholderBpl, Published, true, g113 + "G.723.1 ACELP 5.3 kbit/s"},
	"gsm":       {20, PlaceholderBpl, Published, true, g113 + "GSM 06.10 full rate"},
	"gsm-hr-08": {23, PlaceholderBpl, Published, true, g113 + "GSM 06.20 half rate"},
	"gsm-efr":   {5, 10.0, Published, false, g113 + "GSM 06.60 enhanced full rate"},
	"opus":      {0, 25.1, Published, false, "scored as G.711 (no G.113 row)"},
}

const g113 = "ITU-T G.113 Appendix I: "

// aliases maps other spellings of a codec to its published key: G.729
// annexes, the AAL2 packing of G.726 and G721 (RFC 1890's name for
// G.726 at 32 kbit/s), G.723.1 spellings, and GSM-HR's short name.
var aliases = map[string]string{
	"g729a": "g729", "g729ab": "g729", "g729b": "g729",
	"aal2-g726-40": "g726-40", "aal2-g726-32": "g726-32", "aal2-g726-24": "g726-24", "aal2-g726-16": "g726-16",
	"g721": "g726-32", "g7231": "g723", "g723.1": "g723", "gsm-hr": "gsm-hr-08",
}

// G7231 returns G.723.1's impairment at the bit rate its frames show: 5.3
// kbit/s when low is true, else 6.3 kbit/s (RFC 3551 §4.5.3: a 6.3 kbit/s
// frame is 24 octets, a 5.3 kbit/s one 20).
func G7231(low bool) Impairment {
	if low {
		return published["g723-5.3"]
	}
	return published["g723"]
}

// Declared is an operator's equipment impairment for one codec, from the
// config section [media.codec_ie] (docs/media-quality.md): Ie in [0, 95)
// and, optionally, Bpl (0 when not declared).
type Declared struct {
	Ie  float64
	Bpl float64
}

// ImpairmentFor returns the impairment of a codec by its encoding name
// (case-insensitive: "PCMU", "G729", "opus" ...). declared holds operator
// values by lowercase name (0 ≤ Ie < 95); they win over published ones. A
// declaration without Bpl takes the codec's published Bpl, else the G.107
// default PlaceholderBpl (BurstR = 1), and says so in Source. Names G.113
// does not cover return the placeholder, ungrounded.
func ImpairmentFor(codec string, declared map[string]Declared) Impairment {
	name := strings.ToLower(codec)
	d, ok := declared[name]
	if a, alias := aliases[name]; alias {
		name = a
		if !ok {
			d, ok = declared[name]
		}
	}
	if ok && d.Ie >= 0 && d.Ie < 95 {
		imp := Impairment{Ie: d.Ie, Bpl: d.Bpl, Grounding: OperatorDeclared}
		bplFrom := "declared"
		if d.Bpl <= 0 || math.IsNaN(d.Bpl) || math.IsInf(d.Bpl, 0) {
			imp.Bpl, bplFrom = PlaceholderBpl, "not declared: G.107 default"
			if p, ok := published[name]; ok && !p.BplPlaceholder {
				imp.Bpl, bplFrom = p.Bpl, "not declared: "+p.Source
			}
		}
		imp.Source = "operator [media.codec_ie] " + strings.ToLower(codec) + ": Ie " + num(imp.Ie) + ", Bpl " + num(imp.Bpl) + " (" + bplFrom + ")"
		return imp
	}
	if p, ok := published[name]; ok {
		return p
	}
	return Impairment{Ie: PlaceholderIe, Bpl: PlaceholderBpl, Grounding: Unpublished}
}

// num formats a factor without trailing zeros (5, 25.1).
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// UngroundedNote is the note carried by an ungrounded score.
const UngroundedNote = "no published G.113 impairment for this codec: the score uses a placeholder Ie of 5 and is not a measurement"

// ProvisionalLossNote is the note carried by a ProvisionalLoss score.
const ProvisionalLossNote = "G.113 Appendix I gives this codec's Ie but no packet-loss robustness (Bpl): with loss the score uses a placeholder Bpl of 10 and is not grounded"

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

// Grounded reports whether the score rests on a published or declared Ie
// and, with loss, a published or declared Bpl.
func (s Score) Grounded() bool { return s.Grounding != Unpublished && s.Grounding != ProvisionalLoss }

// Estimate scores a codec at a loss percentage, jitter and one-way delay.
// A published Ie without a published Bpl grounds the score only without
// loss; with loss it is ProvisionalLoss.
func Estimate(imp Impairment, lossPct, jitterMs, oneWayDelayMs float64) Score {
	r := RFactor(imp, lossPct, jitterMs, oneWayDelayMs)
	g := imp.Grounding
	if g == Published && imp.BplPlaceholder && lossPct > 0 {
		g = ProvisionalLoss
	}
	return Score{R: r, MOS: FromR(r), Grounding: g}
}
