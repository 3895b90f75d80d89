package media

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/sipnab/sipnab/core/mos"
	"github.com/sipnab/sipnab/core/rtp"
)

// SchemaVersion is the version of the StreamInfo wire shape.
const SchemaVersion = 1

// Verdicts of a quality interval.
const (
	VerdictAcceptable  = "acceptable"
	VerdictDegraded    = "degraded"
	VerdictNotScorable = "not_scorable"
)

// Default thresholds behind a degraded verdict and the high-loss/high-jitter
// findings (the run's --loss-threshold and --jitter-threshold replace the
// first two: Config.LossThresholdPct, JitterThresholdMs). HighJitterMs is judged against jitter_ms, the RFC 3550 running
// jitter (J += (|D| − J)/16) at the stream's last packet (an interval's
// last packet for an interval), never its mean or maximum: the value the
// E-model scores, rtp_stats reports, the rtp.jitter filter selects on and
// the diagnosis, findings and --report judge.
const (
	HighLossPct     = 5.0
	HighJitterMs    = 50.0
	AcceptableRMin  = 70.0 // R below this (MOS ≈ 3.6) is degraded
	DialogAssertion = "signaled"
)

// PTCount is how many packets carried one payload type.
type PTCount struct {
	PayloadType int    `json:"payload_type"`
	Codec       string `json:"codec,omitempty"`
	Packets     uint64 `json:"packets"`
}

// Interval is one per-interval quality snapshot, scored on its own loss and
// jitter and the stream's path delay.
type Interval struct {
	Timestamp time.Time `json:"timestamp"` // interval start
	Packets   uint32    `json:"packets"`
	Expected  int32     `json:"expected"`
	Lost      int32     `json:"lost"`
	// LossPct is the interval's lost / expected in percent, never below 0
	// (duplicates do not make a negative loss).
	LossPct float64 `json:"loss_pct"`
	// JitterMs is the stream's RFC 3550 jitter (jitter_ms) as it stood at
	// the interval's last packet: the one jitter definition every surface
	// uses; absent when the clock rate is unknown.
	JitterMs    *float64 `json:"jitter_ms,omitempty"`
	MOS         *float64 `json:"mos,omitempty"`
	MOSGrounded bool     `json:"mos_grounded"`
	RFactor     *float64 `json:"r_factor,omitempty"`
	// Verdict: acceptable; degraded (loss or jitter over the run's
	// thresholds, Config.LossThresholdPct and JitterThresholdMs, by default
	// 5 % and 50 ms; or a grounded R under 70); not_scorable (no timing:
	// unknown clock, video, fax, or no packets).
	Verdict string `json:"verdict"`
}

// Silence describes comfort noise (RFC 3389) in a stream.
type Silence struct {
	CNFrames uint64  `json:"cn_frames"`
	Periods  uint64  `json:"periods"`
	TotalMs  float64 `json:"total_ms"`
}

// Events counts RFC 4733 telephone-events. Digit values are never kept.
type Events struct {
	Count uint64 `json:"count"`
	// Digits is one masked "x" per event.
	Digits  string  `json:"digits"`
	TotalMs float64 `json:"total_ms"`
}

// QoS is the DSCP marking seen on the stream.
type QoS struct {
	MarkingObserved bool   `json:"marking_observed"`
	DSCP            uint8  `json:"dscp"`
	Name            string `json:"name"`
	Expedited       bool   `json:"expedited"`
	// RemarkedTo appears only when the marking changed mid-stream.
	RemarkedTo *uint8 `json:"remarked_to,omitempty"`
}

// Jitter is how the stream's jitter was measured.
type Jitter struct {
	Grounded    bool     `json:"grounded"`
	ClockBasis  string   `json:"clock_basis"` // rtpmap | rfc3551 | assumed
	ClockRateHz uint32   `json:"clock_rate_hz,omitempty"`
	MeasuredMs  *float64 `json:"measured_ms,omitempty"`
}

// EndpointReported is what the endpoints claimed over RTCP about the
// stream. It is kept apart from our measurement and never feeds the MOS.
type EndpointReported struct {
	SenderReports    uint64 `json:"sender_reports"`
	ReceptionReports uint64 `json:"reception_reports"`
	// From the last sender report.
	SenderPacketCount *uint32 `json:"sender_packet_count,omitempty"`
	SenderOctetCount  *uint32 `json:"sender_octet_count,omitempty"`
	// From the last reception report about the stream.
	FractionLostPct *float64 `json:"fraction_lost_pct,omitempty"`
	CumulativeLost  *int32   `json:"cumulative_lost,omitempty"`
	JitterMs        *float64 `json:"jitter_ms,omitempty"`
	// RoundTripMs is capture point → receiver → capture point from the
	// LSR/DLSR echo (a lower bound of the path when captured mid-path).
	RoundTripMs *float64 `json:"round_trip_ms,omitempty"`
	// From the last RFC 3611 VoIP metrics block about the stream.
	XR    *XRMetrics `json:"xr_voip_metrics,omitempty"`
	CNAME string     `json:"cname,omitempty"`
	Bye   bool       `json:"bye,omitempty"`
}

// XRMetrics is the RFC 3611 §4.7 claim, in natural units; absent values
// (127 or 0 where the RFC says unavailable) are omitted.
type XRMetrics struct {
	LossPct          float64  `json:"loss_pct"`
	DiscardPct       float64  `json:"discard_pct"`
	RoundTripMs      *uint16  `json:"round_trip_ms,omitempty"`
	EndSystemDelayMs *uint16  `json:"end_system_delay_ms,omitempty"`
	RFactor          *uint8   `json:"r_factor,omitempty"`
	MOSLQ            *float64 `json:"mos_lq,omitempty"`
	MOSCQ            *float64 `json:"mos_cq,omitempty"`
}

// PtimeSteps is the evidence behind ptime_ms: of Counted timestamp steps
// of the main payload type, Modal advanced by the ptime's step. Evicted
// counts steps the bounded histogram (8 distinct steps per stream) let go;
// absent when none was.
type PtimeSteps struct {
	Modal   uint64 `json:"modal"`
	Counted uint64 `json:"counted"`
	Evicted uint64 `json:"evicted,omitempty"`
}

// StreamInfo is one stream as every output renders it (rtp_stats,
// --json-run, reports).
type StreamInfo struct {
	SSRC         string    `json:"ssrc"` // 0x + 8 lowercase hex digits
	Src          string    `json:"src"`  // ip:port
	Dst          string    `json:"dst"`
	Kind         string    `json:"kind"` // audio, video, fax, comfort_noise, telephone_event, unknown
	Codec        string    `json:"codec,omitempty"`
	PayloadType  int       `json:"payload_type"`
	PayloadTypes []PTCount `json:"payload_types"`
	ClockRateHz  uint32    `json:"clock_rate_hz,omitempty"`
	Frame        string    `json:"frame,omitempty"` // evidence pointer of the first packet
	// AssociatedDialog is the Call-ID whose SDP announced an endpoint of
	// the stream; Orphaned is true exactly when it is empty.
	AssociatedDialog string `json:"associated_dialog,omitempty"`
	// SharedWith are the other dialogs whose SDP named both ends of the
	// stream (the two legs of a B2BUA that gave its endpoints direct
	// media, announced within 2 s of each other): the stream belongs to
	// each of them as well and is listed under them. Absent when the
	// stream belongs to one dialog.
	SharedWith      []string `json:"shared_with,omitempty"`
	DialogAssertion string   `json:"dialog_assertion,omitempty"`
	Orphaned        bool     `json:"orphaned"`
	SchemaVersion   int      `json:"schema_version"`

	Packets uint64 `json:"packets"`
	Octets  uint64 `json:"octets"`
	// Expected and Lost follow RFC 3550 A.1: expected from the extended
	// highest and first sequence numbers, lost = expected − received
	// (negative with duplicates).
	Expected int64 `json:"expected"`
	Lost     int64 `json:"lost"`
	// LossPct is lost / expected in percent, never below 0: when duplicates
	// outnumber the losses (lost negative) it reads 0, as RFC 3550's
	// fraction lost does (§6.4.1: a negative fraction is reported as 0).
	LossPct       float64 `json:"loss_pct"`
	Duplicates    uint64  `json:"duplicates"`
	OutOfOrder    uint64  `json:"out_of_order"`
	SequenceJumps uint64  `json:"sequence_jumps"`
	// LostSequences holds the most recent lost sequence numbers (up to
	// 1000); LostSequencesTruncated says older ones were dropped.
	LostSequences          []uint16 `json:"lost_sequences,omitempty"`
	LostSequencesTruncated bool     `json:"lost_sequences_truncated,omitempty"`
	// BurstGap is the loss pattern in RFC 3611 §4.7.2 terms (bursts and
	// gaps with Gmin 16; core/media/burst.go); absent for fax.
	BurstGap *BurstGap `json:"burst_gap,omitempty"`

	// Jitter per RFC 3550 §6.4.1 in ms at the codec clock; absent when the
	// clock rate is unknown. JitterMs is the running value at the last
	// packet: the MOS, the high-jitter threshold (50 ms) and the rtp.jitter
	// filter all read it. JitterMeanMs and JitterMaxMs describe its course
	// (mean and largest over the packets) and judge nothing.
	JitterMs     *float64 `json:"jitter_ms,omitempty"`
	JitterMeanMs *float64 `json:"jitter_mean_ms,omitempty"`
	JitterMaxMs  *float64 `json:"jitter_max_ms,omitempty"`
	// PtimeMs is the packetization measured from RTP timestamps: the most
	// common timestamp step between consecutive in-order packets of the
	// main audio payload type (comfort noise, telephone-events, steps into
	// a marked talkspurt and across a sequence gap left out), at its clock
	// rate; absent when unknown. PtimeSteps is the count behind it.
	PtimeMs    *float64    `json:"ptime_ms,omitempty"`
	PtimeSteps *PtimeSteps `json:"ptime_steps,omitempty"`
	// Inter-arrival deltas in ms between regular packets.
	DeltaMinMs  *float64 `json:"delta_min_ms,omitempty"`
	DeltaMeanMs *float64 `json:"delta_mean_ms,omitempty"`
	DeltaMaxMs  *float64 `json:"delta_max_ms,omitempty"`

	MOS          *float64 `json:"mos,omitempty"`
	RFactor      *float64 `json:"r_factor,omitempty"`
	MOSGrounded  bool     `json:"mos_grounded"`
	MOSGrounding string   `json:"mos_grounding,omitempty"`
	MOSNote      string   `json:"mos_note,omitempty"`
	// MOSApplicable is false when no score exists (video, a payload that
	// is not a known voice codec, an unknown clock): MOS is then absent and
	// MOSNote says why. Never a media problem.
	MOSApplicable bool `json:"mos_applicable"`
	// MOSSource names where the codec's Ie and Bpl come from: the ITU-T
	// G.113 Appendix I row (for G.723.1 with the bit rate the payload
	// showed), or the operator's [media.codec_ie] entry with its values;
	// absent for the placeholder.
	MOSSource string `json:"mos_source,omitempty"`
	// AMR is what an AMR or AMR-WB stream's payloads showed (RFC 4867:
	// packing, frames by mode); WidebandMOS is AMR-WB's ITU-T G.107.1
	// score (MOS_CQEW), on its own scale (core/media/amr.go).
	AMR           *AMRInfo     `json:"amr,omitempty"`
	WidebandMOS   *WidebandMOS `json:"wideband_mos,omitempty"`
	Delay         *mos.Delay   `json:"delay,omitempty"`
	RoundTripNote string       `json:"round_trip_note,omitempty"`

	QoS         *QoS      `json:"qos,omitempty"`
	InputOrigin string    `json:"input_origin,omitempty"`
	FirstSeen   time.Time `json:"first_seen"`
	LastSeen    time.Time `json:"last_seen"`
	DurationMs  float64   `json:"duration_ms"`

	Jitter           *Jitter           `json:"jitter,omitempty"`
	Silence          *Silence          `json:"silence,omitempty"`
	Events           *Events           `json:"events,omitempty"`
	EndpointReported *EndpointReported `json:"endpoint_reported,omitempty"`

	QualityIntervals        []Interval `json:"quality_intervals"`
	QualityIntervalsDropped uint64     `json:"quality_intervals_dropped,omitempty"`
}

func f64(v float64) *float64 { return &v }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// view renders a stream. Called under the read lock.
func (st *Store) view(s *stream) StreamInfo {
	v := StreamInfo{
		SSRC:             fmt.Sprintf("0x%08x", s.key.SSRC),
		Src:              s.key.Src.String(),
		Dst:              s.key.Dst.String(),
		SchemaVersion:    SchemaVersion,
		Packets:          s.packets,
		Octets:           s.octets,
		FirstSeen:        time.Unix(0, s.firstNs).UTC(),
		LastSeen:         time.Unix(0, s.lastNs).UTC(),
		DurationMs:       round3(float64(s.lastNs-s.firstNs) / 1e6),
		AssociatedDialog: s.callID,
		Orphaned:         s.callID == "",
		QualityIntervals: []Interval{},
		PayloadTypes:     []PTCount{},
	}
	if !s.frame.IsZero() {
		v.Frame = s.frame.String()
	}
	if s.origin != 0 {
		v.InputOrigin = s.origin.String()
	}
	if s.callID != "" {
		v.DialogAssertion = DialogAssertion
	}
	if len(s.shared) > 0 {
		v.SharedWith = append([]string(nil), s.shared...)
	}
	if s.hasDSCP {
		q := &QoS{MarkingObserved: true, DSCP: s.dscp, Name: dscpName(s.dscp), Expedited: s.dscp == 46}
		if s.remarked {
			r := s.remarkedTo
			q.RemarkedTo = &r
		}
		v.QoS = q
	}
	if s.key.Fax {
		v.SSRC = ""
		v.Kind = rtp.KindFax.String()
		v.Codec = "t38"
		v.PayloadType = -1
		v.MOSNote = "T.38 fax: the E-model scores voice only"
		return v
	}
	main := s.mainPT()
	codec, basis := s.codecFor(main)
	v.PayloadType = int(main)
	v.Codec = codec.Name
	v.Kind = codec.Kind.String()
	v.ClockRateHz = codec.ClockRate
	for i := uint8(0); i < s.nPTs; i++ {
		c, _ := s.codecFor(s.pts[i].pt)
		v.PayloadTypes = append(v.PayloadTypes, PTCount{PayloadType: int(s.pts[i].pt), Codec: c.Name, Packets: uint64(s.pts[i].count)})
	}
	v.Expected = s.expected()
	v.Lost = v.Expected - int64(s.packets)
	v.LossPct = math.Max(0, lossPct(v.Lost, v.Expected)) // RFC 3550 clamps fraction lost at 0
	v.Duplicates, v.OutOfOrder, v.SequenceJumps = s.dups, s.ooo, s.jumps
	if s.lost != nil {
		n := len(s.lost.seqs)
		v.LostSequences = make([]uint16, 0, n)
		v.LostSequences = append(v.LostSequences, s.lost.seqs[s.lost.next:]...)
		v.LostSequences = append(v.LostSequences, s.lost.seqs[:s.lost.next]...)
		v.LostSequencesTruncated = s.lost.truncated
	}
	if s.jitterSeen {
		v.JitterMs = f64(round3(s.jitter))
		v.JitterMaxMs = f64(round3(s.jitterMax))
		if s.jitterN > 0 {
			v.JitterMeanMs = f64(round3(s.jitterSum / float64(s.jitterN)))
		} else {
			v.JitterMeanMs = f64(round3(s.jitter))
		}
	}
	if step, n, ok := s.steps.mode(main); ok && codec.Kind == rtp.KindAudio && codec.ClockRate > 0 {
		v.PtimeMs = f64(round3(float64(step) * 1000 / float64(codec.ClockRate)))
		v.PtimeSteps = &PtimeSteps{Modal: uint64(n), Counted: s.steps.counted(main), Evicted: s.steps.evicted}
	}
	ptime := 0.0
	if v.PtimeMs != nil {
		ptime = *v.PtimeMs
	}
	v.BurstGap = s.burstGap(ptime)
	if s.deltaN > 0 {
		v.DeltaMinMs = f64(round3(s.deltaMin))
		v.DeltaMaxMs = f64(round3(s.deltaMax))
		v.DeltaMeanMs = f64(round3(s.deltaSum / float64(s.deltaN)))
	}
	j := &Jitter{Grounded: s.jitterSeen, ClockBasis: "assumed"}
	if s.jitterSeen {
		j.ClockBasis, j.ClockRateHz, j.MeasuredMs = s.clockBasis, s.clock, v.JitterMs
	} else if basis != "" {
		j.ClockBasis, j.ClockRateHz = basis, codec.ClockRate
	}
	v.Jitter = j
	if s.cnFrames > 0 {
		tot := s.cnTotalNs
		if s.inCN && s.lastNs > s.cnStartNs {
			tot += s.lastNs - s.cnStartNs
		}
		v.Silence = &Silence{CNFrames: s.cnFrames, Periods: s.cnPeriods, TotalMs: round3(float64(tot) / 1e6)}
	}
	if s.events > 0 {
		v.Events = &Events{Count: s.events, TotalMs: round3(float64(s.eventNs) / 1e6)}
		n := s.events
		if n > 256 {
			n = 256
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = 'x'
		}
		v.Events.Digits = string(b)
	}
	v.EndpointReported = s.reported()

	// Path delay and MOS.
	var xrRTT, srRTT float64
	if s.rtcp != nil {
		if s.rtcp.hasXR && s.rtcp.xr.RoundTripDelay > 0 {
			xrRTT = float64(s.rtcp.xr.RoundTripDelay)
		}
		if s.rtcp.hasRTT {
			srRTT = s.rtcp.rttMs
		}
	}
	d := mos.ResolveDelay(st.cfg.OneWayDelayMs, st.cfg.HasOneWayDelay, xrRTT, srRTT)
	v.Delay = &d
	if d.Assumed {
		v.RoundTripNote = "no RTCP round trip observed: one-way delay assumed 100 ms"
	}
	scorable := codec.Kind == rtp.KindAudio && s.jitterSeen
	imp, rateNote := s.impairment(codec.Name, st.cfg.CodecIe)
	if scorable {
		sc := mos.Estimate(imp, v.LossPct, s.jitter, d.OneWayMs)
		v.MOS = f64(round3(sc.MOS))
		v.RFactor = f64(round3(sc.R))
		v.MOSApplicable = true
		v.MOSGrounded = sc.Grounded()
		v.MOSGrounding = string(sc.Grounding)
		switch imp.Grounding {
		case mos.Published:
			v.MOSSource = imp.Source + rateNote
		case mos.OperatorDeclared:
			v.MOSSource = imp.Source
		}
		switch sc.Grounding {
		case mos.Unpublished:
			v.MOSNote = mos.UngroundedNote
		case mos.ProvisionalLoss:
			v.MOSNote = mos.ProvisionalLossNote
		}
	} else {
		switch {
		case codec.Kind == rtp.KindVideo:
			v.MOSNote = "video stream: the E-model scores voice only"
		case codec.Kind != rtp.KindAudio:
			v.MOSNote = "payload is not a known voice codec: no MOS"
		default:
			v.MOSNote = "clock rate unknown: jitter and MOS not measured"
		}
	}

	st.amrView(s, &v, codec, scorable, d.OneWayMs)

	// Intervals: closed ones from the ring, then the open one.
	add := func(iv interval) {
		v.QualityIntervals = append(v.QualityIntervals, st.scoreInterval(iv, imp, scorable, d.OneWayMs))
	}
	for i := 0; i < len(s.ivs); i++ {
		add(s.ivs[(s.ivHead+i)%len(s.ivs)])
	}
	if s.ivPackets > 0 {
		open := interval{startNs: s.ivStartNs, packets: s.ivPackets, expected: int32(s.maxExt - s.ivStartExt), jitter: -1}
		if s.ivJN > 0 {
			open.jitter = float32(s.jitter)
		}
		add(open)
	}
	v.QualityIntervalsDropped = s.ivDropped
	return v
}

// impairment is the codec's E-model impairment (mos.ImpairmentFor) and,
// for G.723.1 with a published value, the one of the bit rate the packets
// showed (more 5.3 kbit/s frames than 6.3 kbit/s ones: 5.3), with a note
// on how the rate was known; 6.3 kbit/s is assumed when no packet showed
// either.
func (s *stream) impairment(codec string, declared map[string]mos.Declared) (mos.Impairment, string) {
	imp := mos.ImpairmentFor(codec, declared)
	if codec != "G723" || imp.Grounding != mos.Published {
		return imp, ""
	}
	hi, lo := s.g723[0], s.g723[1]
	switch {
	case hi == 0 && lo == 0:
		return mos.G7231(false), " (bit rate not shown by the payload: 6.3 kbit/s assumed)"
	case lo > hi:
		return mos.G7231(true), fmt.Sprintf(" (20-octet frames in %d of %d packets)", lo, hi+lo)
	}
	return mos.G7231(false), fmt.Sprintf(" (24-octet frames in %d of %d packets)", hi, hi+lo)
}

func (st *Store) scoreInterval(iv interval, imp mos.Impairment, scorable bool, delayMs float64) Interval {
	out := Interval{
		Timestamp: time.Unix(0, iv.startNs).UTC(),
		Packets:   iv.packets,
		Expected:  iv.expected,
		Lost:      iv.expected - int32(iv.packets),
		Verdict:   VerdictNotScorable,
	}
	out.LossPct = math.Max(0, lossPct(int64(out.Lost), int64(out.Expected)))
	if iv.jitter >= 0 {
		out.JitterMs = f64(round3(float64(iv.jitter)))
	}
	if !scorable || iv.packets == 0 {
		return out
	}
	jit := 0.0
	if out.JitterMs != nil {
		jit = *out.JitterMs
	}
	sc := mos.Estimate(imp, out.LossPct, jit, delayMs)
	out.MOS = f64(round3(sc.MOS))
	out.RFactor = f64(round3(sc.R))
	out.MOSGrounded = sc.Grounded()
	out.Verdict = VerdictAcceptable
	lossLimit, jitterLimit := HighLossPct, HighJitterMs
	if p := st.cfg.LossThresholdPct; p != nil {
		lossLimit = *p
	}
	if p := st.cfg.JitterThresholdMs; p != nil {
		jitterLimit = *p
	}
	if out.LossPct > lossLimit || jit > jitterLimit || (sc.Grounded() && sc.R < AcceptableRMin) {
		out.Verdict = VerdictDegraded
	}
	return out
}

func lossPct(lost, expected int64) float64 {
	if expected <= 0 {
		return 0
	}
	return math.Round(float64(lost)*100/float64(expected)*1000) / 1000
}

func (s *stream) reported() *EndpointReported {
	sd := s.rtcp
	if sd == nil {
		return nil
	}
	r := &EndpointReported{SenderReports: sd.srCount, ReceptionReports: sd.rrCount, CNAME: sd.cname, Bye: sd.hasBye}
	if sd.srCount > 0 {
		pc, oc := sd.lastSR.PacketCount, sd.lastSR.OctetCount
		r.SenderPacketCount, r.SenderOctetCount = &pc, &oc
	}
	if sd.rrCount > 0 {
		fl := round3(float64(sd.lastRR.FractionLost) * 100 / 256)
		cl := sd.lastRR.CumulativeLost
		r.FractionLostPct, r.CumulativeLost = &fl, &cl
		if s.clock > 0 {
			r.JitterMs = f64(round3(float64(sd.lastRR.Jitter) * 1000 / float64(s.clock)))
		}
	}
	if sd.hasRTT {
		r.RoundTripMs = f64(round3(sd.rttMs))
	}
	if sd.hasXR {
		x := sd.xr
		m := &XRMetrics{LossPct: round3(float64(x.LossRate) * 100 / 256), DiscardPct: round3(float64(x.DiscardRate) * 100 / 256)}
		if x.RoundTripDelay > 0 {
			rt := x.RoundTripDelay
			m.RoundTripMs = &rt
		}
		if x.EndSystemDelay > 0 {
			es := x.EndSystemDelay
			m.EndSystemDelayMs = &es
		}
		if x.RFactor != 127 {
			rf := x.RFactor
			m.RFactor = &rf
		}
		if x.MOSLQ != 127 && x.MOSLQ != 0 {
			m.MOSLQ = f64(float64(x.MOSLQ) / 10)
		}
		if x.MOSCQ != 127 && x.MOSCQ != 0 {
			m.MOSCQ = f64(float64(x.MOSCQ) / 10)
		}
		r.XR = m
	}
	return r
}

var dscpNames = map[uint8]string{
	0: "CS0", 8: "CS1", 10: "AF11", 12: "AF12", 14: "AF13", 16: "CS2", 18: "AF21", 20: "AF22", 22: "AF23",
	24: "CS3", 26: "AF31", 28: "AF32", 30: "AF33", 32: "CS4", 34: "AF41", 36: "AF42", 38: "AF43",
	40: "CS5", 44: "VOICE-ADMIT", 46: "EF", 48: "CS6", 56: "CS7",
}

func dscpName(d uint8) string {
	if n, ok := dscpNames[d]; ok {
		return n
	}
	return fmt.Sprintf("DSCP%d", d)
}

// StreamsFor returns the streams bound to a dialog, oldest first.
func (st *Store) StreamsFor(callID string) []StreamInfo {
	st.mu.RLock()
	l := st.byCall[callID]
	out := make([]StreamInfo, 0, len(l))
	ss := append([]*stream(nil), l...)
	sort.Slice(ss, func(i, j int) bool { return less(ss[i], ss[j]) })
	for _, s := range ss {
		out = append(out, st.view(s))
	}
	st.mu.RUnlock()
	return out
}

// All returns every stream, sorted by first_seen (ties by source,
// destination and SSRC).
func (st *Store) All() []StreamInfo {
	st.mu.RLock()
	ss := make([]*stream, 0, st.streams.len())
	for _, s := range st.order[st.orderHd:] {
		if s != nil && st.lookup(s.key) == s {
			ss = append(ss, s)
		}
	}
	sort.Slice(ss, func(i, j int) bool { return less(ss[i], ss[j]) })
	out := make([]StreamInfo, 0, len(ss))
	for _, s := range ss {
		out = append(out, st.view(s))
	}
	st.mu.RUnlock()
	return out
}

// Each calls fn with the streams of All, in the same order, one at a time,
// without building the whole list: views are made a chunk at a time under
// the read lock, and fn runs with the lock released. It stops at fn's first
// error and returns it. A stream evicted during the walk is skipped.
func (st *Store) Each(fn func(*StreamInfo) error) error {
	st.mu.RLock()
	ss := make([]*stream, 0, st.streams.len())
	for _, s := range st.order[st.orderHd:] {
		if s != nil && st.lookup(s.key) == s {
			ss = append(ss, s)
		}
	}
	st.mu.RUnlock()
	sort.Slice(ss, func(i, j int) bool { return less(ss[i], ss[j]) })
	const chunk = 256
	views := make([]StreamInfo, 0, min(chunk, len(ss)))
	for i := 0; i < len(ss); i += chunk {
		views = views[:0]
		st.mu.RLock()
		for _, s := range ss[i:min(i+chunk, len(ss))] {
			if st.lookup(s.key) == s {
				views = append(views, st.view(s))
			}
		}
		st.mu.RUnlock()
		for j := range views {
			if err := fn(&views[j]); err != nil {
				return err
			}
			views[j] = StreamInfo{} // let the view's values go
		}
	}
	return nil
}

func less(a, b *stream) bool {
	if a.firstNs != b.firstNs {
		return a.firstNs < b.firstNs
	}
	return keyCompare(a.key, b.key) < 0
}

// Stats returns the store's counters.
func (st *Store) Stats() Stats {
	st.mu.RLock()
	s := st.stats
	s.Streams = st.streams.len()
	s.OrphanedStreams = st.orphans
	s.FaxStreams = st.faxes
	s.Candidates = st.cands.len()
	s.Endpoints = st.eps.len()
	st.mu.RUnlock()
	return s
}
