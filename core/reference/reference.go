// Package reference holds the reference pages sipnab serves as
// sipnab://reference/<topic>: text an agent reads once to understand a
// number or a language, built from the tables and constants the engine
// itself uses, so a page cannot drift from the code that produces the
// numbers it explains.
package reference

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/mos"
	"github.com/sipnab/sipnab/core/rtp"
)

// Topic names.
const (
	// TopicMOS explains what a MOS is here: the E-model, its constants,
	// grounding, and which codecs are grounded.
	TopicMOS = "mos-and-codecs"
	// TopicFilter is the filter language with this run's alias expansions.
	TopicFilter = "filter-language"
)

// URIPrefix starts every reference page's address: sipnab://reference/<topic>.
const URIPrefix = "sipnab://reference/"

// FilterURI is the address of the filter-language page.
const FilterURI = URIPrefix + TopicFilter

// FilterHelp is what every tool taking a filter says of it: the language in
// two lines (filter.Synopsis), then where the whole of it is.
const FilterHelp = "Filter: " + filter.Synopsis + " " + FilterURI

// topics is the list in the order Topics returns it.
var topics = []string{TopicFilter, TopicMOS}

// Topics returns the topic names, sorted.
func Topics() []string { return append([]string(nil), topics...) }

// Page renders one topic as Markdown. th are the run's filter thresholds
// (the filter-language page expands every alias with them). ok is false for
// an unknown topic.
func Page(topic string, th filter.Thresholds) (text string, ok bool) {
	switch topic {
	case TopicFilter:
		return filter.Reference(th), true
	case TopicMOS:
		return mosPage(), true
	}
	return "", false
}

// dynamicAudio are the dynamic audio codecs the MOS page lists beside every
// static RFC 3551 audio payload type, spelled as rtpmap lines spell them.
// Their grounding comes from mos.ImpairmentFor, the function every score
// uses, so the page cannot claim a grounding the scores do not have.
var dynamicAudio = []string{"opus", "G729A", "G729AB", "AMR", "AMR-WB", "EVS", "iLBC", "G7221",
	"G726-16", "G726-24", "G726-32", "G726-40", "AAL2-G726-16", "AAL2-G726-24", "AAL2-G726-32", "AAL2-G726-40",
	"GSM-EFR", "GSM-HR-08", "speex", "SILK"}

type codecRow struct {
	name string
	pts  []int
	imp  mos.Impairment
}

func codecRows() []codecRow {
	var rows []codecRow
	index := map[string]int{}
	add := func(name string, pt int) {
		key := strings.ToLower(name)
		if i, ok := index[key]; ok {
			if pt >= 0 {
				rows[i].pts = append(rows[i].pts, pt)
			}
			return
		}
		r := codecRow{name: name, imp: mos.ImpairmentFor(name, nil)}
		if pt >= 0 {
			r.pts = []int{pt}
		}
		index[key] = len(rows)
		rows = append(rows, r)
	}
	for pt := 0; pt < 35; pt++ {
		c, ok := rtp.StaticCodec(uint8(pt))
		if ok && c.Kind == rtp.KindAudio {
			add(c.Name, pt)
		}
	}
	for _, n := range dynamicAudio {
		c := rtp.NamedCodec(n, 0, "audio")
		add(c.Name, -1)
	}
	return rows
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func mosPage() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w(`# MOS and codecs

## What a MOS is here

Every MOS sipnab reports is an **estimate computed from the RTP it captured**, not a listening
test and not a number an endpoint claimed. It follows a simplified ITU-T G.107 E-model:

    R      = R0 − Id − Ie,eff
    Id     = 0.024·d + 0.11·(d − 177.3)                (second term only when d > 177.3 ms)
    Ie,eff = Ie + (95 − Ie) · Ppl / (Ppl + Bpl)
    MOS    = 1 + 0.035·R + R·(R − 60)·(100 − R)·7·10⁻⁶, clamped to [1, 4.5]
             (R ≤ 0 gives 1, R ≥ 100 gives 4.5: G.107 Annex B)

| Term | Value here |
|---|---|
| R0 | %s (G.107 default basic signal-to-noise ratio) |
| d | one-way path delay plus the stream's jitter, in ms, capped at %s ms |
| Ppl | packet loss in percent, measured from RTP sequence numbers (RFC 3550), clamped to [0, 100] |
| Ie, Bpl | the codec's equipment impairment and packet-loss robustness (table below) |

The one-way delay comes from, in order: the operator's --one-way-delay; half the round trip of an
RTCP XR VoIP-metrics block; half the round trip of an RTCP sender-report echo (LSR/DLSR; a lower
bound when captured mid-path); otherwise an assumed %s ms, and the answer says it was assumed.
Loss and jitter are always sipnab's own measurement: what endpoints report over RTCP is shown beside
it (endpoint_reported) and never merged into it.

An interval or stream is **degraded** when loss is over %s %%, jitter over %s ms (the defaults:
--loss-threshold and --jitter-threshold replace them for the run), or a grounded R is
under %s (MOS about %s). Jitter is one value everywhere: jitter_ms, the RFC 3550 running estimate
(J += (|D| − J)/16) at the stream's last packet, or at the interval's last packet for an interval;
the MOS, the high-jitter finding, --report and the rtp.jitter filter all read it (jitter_mean_ms and
jitter_max_ms describe its course and judge nothing). Without timing (unknown clock rate, video, fax, no packets) it is not scorable
and carries no MOS at all: absent, not zero.

## Grounding

A score is **grounded** only when the codec's Ie and Bpl rest on something: a value ITU-T G.113
publishes (grounding "published") or one the operator declared in [media.codec_ie]
("operator_declared", 0 ≤ Ie < 95; it wins over the published value). Every other codec is scored
with a placeholder Ie of %s and Bpl of %s ("unpublished"): that number looks like a measurement but
is not one, so it is marked ungrounded ("%s"). Tools treat it so:
rtp_stats' min_mos/max_mos skip ungrounded streams and count them in ungrounded_excluded,
group_dialogs answers mos_p10 only over dialogs with a grounded stream (null plus a not_grounded
reason otherwise), and a grounded flag (mos_grounded, grounded) sits beside every score.

The published values are ITU-T G.113 Appendix I's provisional planning values: Table I.1 for Ie,
Table I.3 (random loss) for Bpl. G.726 is scored at its bit rate (the rtpmap name G726-16/24/32/40
or AAL2-G726-16/24/32/40; static payload type 2, RFC 1890's G721, is G.726 at 32 kbit/s).
G.723.1 (G723) is scored at the bit rate its frames show (RFC 3551 §4.5.3: 24-octet frames are
6.3 kbit/s as in the table, 20-octet frames 5.3 kbit/s: Ie %s, Bpl %s); when no packet shows it,
6.3 kbit/s is assumed and mos_source says so. GSM is GSM 06.10 full rate; GSM-EFR and GSM-HR-08 are named by rtpmap.

Where G.113 gives a codec's Ie but no Bpl (the "placeholder" Bpl below), the score rests on Ie
alone only without loss: with any loss the loss term uses a placeholder Bpl of %s, and the score
is marked not grounded (grounding "%s") with the note "%s".

Opus has no G.113 value; it is scored with G.711's (Ie 0, Bpl 25.1), so its MOS reads as a G.711
call over the same network, a conservative floor for a wideband codec.

A stream with no score at all (video, a payload that is not a known voice codec, an unknown clock)
says mos_applicable false and why in mos_note; an unscorable or ungrounded codec is never a media
problem or a finding.

## Codecs

| Codec (rtpmap name) | Static payload type | Ie | Bpl | Grounding | Source |
|---|---|---|---|---|---|
`, num(mos.R0), num(mos.MaxDelayMs), num(mos.DefaultOneWayDelayMs),
		num(media.HighLossPct), num(media.HighJitterMs), num(media.AcceptableRMin), num(round2(mos.FromR(media.AcceptableRMin))),
		num(mos.PlaceholderIe), num(mos.PlaceholderBpl), mos.UngroundedNote,
		num(mos.G7231(true).Ie), bplCell(mos.G7231(true)),
		num(mos.PlaceholderBpl), mos.ProvisionalLoss, mos.ProvisionalLossNote)
	rows := codecRows()
	var grounded, ungrounded []string
	for _, r := range rows {
		pts := "dynamic"
		if len(r.pts) > 0 {
			s := make([]string, len(r.pts))
			for i, p := range r.pts {
				s[i] = strconv.Itoa(p)
			}
			pts = strings.Join(s, ", ")
		}
		bpl := bplCell(r.imp)
		src := r.imp.Source
		if src == "" {
			src = "-"
		}
		w("| %s | %s | %s | %s | %s | %s |\n", r.name, pts, num(r.imp.Ie), bpl, r.imp.Grounding, src)
		if r.imp.Grounded() {
			grounded = append(grounded, r.name)
		} else {
			ungrounded = append(ungrounded, r.name)
		}
	}
	w("\nGrounded without any operator setting: %s. Every other name, including any codec not listed\n"+
		"here, is ungrounded unless declared in [media.codec_ie].\n", strings.Join(grounded, ", "))
	w(`
## What the numbers look like

MOS of a grounded G.711 stream (PCMU) and of an ungrounded codec at the assumed %s ms delay and no jitter:

| Loss | PCMU (published) | %s (unpublished, placeholder) |
|---|---|---|
`, num(mos.DefaultOneWayDelayMs), ungroundedExample(ungrounded))
	pcmu := mos.ImpairmentFor("PCMU", nil)
	other := mos.ImpairmentFor(ungroundedExample(ungrounded), nil)
	for _, loss := range []float64{0, 1, 3, 5, 10} {
		a := mos.Estimate(pcmu, loss, 0, mos.DefaultOneWayDelayMs)
		c := mos.Estimate(other, loss, 0, mos.DefaultOneWayDelayMs)
		w("| %s %% | %s (R %s) | %s (R %s) |\n", num(loss), num(round2(a.MOS)), num(round1(a.R)), num(round2(c.MOS)), num(round1(c.R)))
	}
	w(`
The G.107 ceiling under these defaults is about 4.4: a MOS of 4.5 never occurs, and a perfect call
over a clean network reads about 4.4, not 5.
`)
	return b.String()
}

// ungroundedExample is the codec the example table scores without a
// published impairment (G722 when it is ungrounded, else the first one).
func ungroundedExample(ungrounded []string) string {
	for _, n := range ungrounded {
		if n == "G722" {
			return n
		}
	}
	if len(ungrounded) > 0 {
		return ungrounded[0]
	}
	return "G722"
}

// bplCell is a Bpl as the page shows it: "(placeholder)" when G.113
// gives the codec none.
func bplCell(imp mos.Impairment) string {
	if imp.BplPlaceholder {
		return num(imp.Bpl) + " (placeholder)"
	}
	return num(imp.Bpl)
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
func round1(v float64) float64 { return math.Round(v*10) / 10 }
