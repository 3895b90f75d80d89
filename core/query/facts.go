package query

import (
	"math"
	"slices"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/media"
)

// mediaFacts is what the filter fields read of a dialog's RTP streams and
// media diagnosis, folded once: rtp.codec and rtp.ssrc (each RTP stream's,
// UDPTL fax flows skipped), rtp.mos (the worst grounded MOS), rtp.jitter
// (the worst jitter_ms), rtp.loss (the worst loss_pct), rtp.packets (the
// sum) and rtp.orphaned (present when an RTP stream is linked), and the
// diagnosis booleans. A Record computes it on first use; the maintained
// state (maintained.go) keeps it per dialog, recomputed when the dialog or
// its media changes. Both come from mediaFactsOf, so they cannot differ.
type mediaFacts struct {
	codecs []string // distinct, in stream order
	ssrcs  []string
	mos    float64
	jitter float64
	loss   float64
	// packets sums the RTP streams' packets.
	packets float64
	has     uint8 // hasMOS, hasJitter, hasLoss, hasRTP
	diag    uint16
	// diagDone: diag holds the diagnosis (it is computed only when a
	// boolean field is read, or always by the maintained state).
	diagDone bool
}

const (
	hasMOS uint8 = 1 << iota
	hasJitter
	hasLoss
	hasRTP // an RTP stream is linked (rtp.packets and rtp.orphaned present)
)

// The diagnosis bits of mediaFacts.diag.
const (
	diagApplicable uint16 = 1 << iota
	diagOneWay
	diagNAT
	diagNoMedia
	diagCodecAsym
	diagPtimeAsym
	diagPayloadAsym
	diagDurationAsym
	diagLateMedia
)

// diagBit maps each diagnosis field to its bit.
var diagBit = map[filter.Field]uint16{
	filter.FieldOneWay:            diagOneWay,
	filter.FieldNATMismatch:       diagNAT,
	filter.FieldNoMedia:           diagNoMedia,
	filter.FieldCodecAsymmetry:    diagCodecAsym,
	filter.FieldPtimeAsymmetry:    diagPtimeAsym,
	filter.FieldPayloadAsymmetry:  diagPayloadAsym,
	filter.FieldDurationAsymmetry: diagDurationAsym,
	filter.FieldLateMedia:         diagLateMedia,
}

// facts returns the record's media facts, folding its streams on first
// use.
func (r *Record) facts() *mediaFacts {
	if r.mf == nil {
		r.mfVal = mediaFactsOf(r.Streams())
		r.mf = &r.mfVal
	}
	return r.mf
}

// diagFlags returns the diagnosis bits, diagnosing on first use.
func (r *Record) diagFlags() uint16 {
	m := r.facts()
	if !m.diagDone {
		m.diag = diagBits(r)
		m.diagDone = true
	}
	return m.diag
}

// diagBits renders the record's media diagnosis as bits.
func diagBits(r *Record) uint16 {
	d := r.Diagnosis()
	if !d.Applicable {
		return 0
	}
	b := diagApplicable
	set := func(on bool, bit uint16) {
		if on {
			b |= bit
		}
	}
	set(d.OneWayAudio, diagOneWay)
	set(d.NATMismatch, diagNAT)
	set(d.NoMedia, diagNoMedia)
	set(d.CodecAsymmetry != nil, diagCodecAsym)
	set(d.PtimeAsymmetry != nil, diagPtimeAsym)
	set(d.PayloadAsymmetry != nil, diagPayloadAsym)
	set(d.DurationAsymmetry != nil, diagDurationAsym)
	set(d.LateMediaMs != nil, diagLateMedia)
	return b
}

// mediaFactsOf folds a dialog's streams (its diagnosis is added apart).
func mediaFactsOf(streams []media.StreamInfo) mediaFacts {
	var m mediaFacts
	for i := range streams {
		s := &streams[i]
		if !isRTP(s) {
			continue
		}
		if s.Codec != "" && !slices.Contains(m.codecs, s.Codec) {
			m.codecs = append(m.codecs, s.Codec)
		}
		if s.SSRC != "" {
			m.ssrcs = append(m.ssrcs, s.SSRC)
		}
		if s.MOS != nil && s.MOSGrounded && !math.IsNaN(*s.MOS) && (m.has&hasMOS == 0 || *s.MOS < m.mos) {
			m.mos = *s.MOS
			m.has |= hasMOS
		}
		if s.JitterMs != nil && !math.IsNaN(*s.JitterMs) && (m.has&hasJitter == 0 || *s.JitterMs > m.jitter) {
			m.jitter = *s.JitterMs
			m.has |= hasJitter
		}
		if !math.IsNaN(s.LossPct) && (m.has&hasLoss == 0 || s.LossPct > m.loss) {
			m.loss = s.LossPct
			m.has |= hasLoss
		}
		m.packets += float64(s.Packets)
		m.has |= hasRTP
	}
	return m
}
