// Package analysis diagnoses each dialog's media and signaling and ranks
// capture-wide findings, worst first.
//
// It reads the dialog facts through a small struct the caller fills
// (DialogFacts), so it does not depend on the dialog store's internals, and
// the media through MediaSource (a *media.Store satisfies it). Everything it
// returns is a value: callers serialize it directly.
package analysis

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/stun"
)

// Thresholds (engine.md §10, §11).
const (
	DefaultSlowSetup         = 11 * time.Second
	LateMediaThreshold       = 500 * time.Millisecond
	DurationAsymmetryPct     = 5.0
	DurationAsymmetryMinimum = 2 * time.Second
	PtimeAsymmetryMs         = 5.0
	// OneWayQuietPackets and OneWayMinPackets define a silent direction:
	// none at all, or at most OneWayQuietPackets packets (a keepalive, a
	// comfort-noise frame, a NAT-opening burst: 5 packets are 100 ms of
	// 20 ms audio, no speech) while the other direction carried at least
	// OneWayMinPackets (1 s of 20 ms audio). With fewer packets either way
	// nothing is concluded from a stray packet.
	OneWayQuietPackets = 5
	OneWayMinPackets   = 50
)

// DialogFacts is what diagnosis needs to know about one dialog. Zero values
// mean "not known": HasX flags tell absent from zero.
type DialogFacts struct {
	CallID string
	// Method opened the dialog (INVITE, REGISTER, ...).
	Method string
	// State is the dialog store's state name (InCall, Completed, Failed...).
	State string
	// Answered is true when a 2xx answered the INVITE; AnsweredAt is when.
	Answered   bool
	AnsweredAt time.Time
	// FinalCode and FinalReason are the final response of the dialog's
	// primary transaction; HasFinal is false while none arrived.
	FinalCode   int
	FinalReason string
	HasFinal    bool
	CreatedAt   time.Time
	// PDD is the routed INVITE → first 18x; HasPDD false when not
	// measured. InviteAt is that INVITE: after a 401/407, the credentialed
	// retry (the challenge ended the first INVITE's delay, RFC 6076 §4.3;
	// the caller's wait is in no delay, docs/call-timing.md).
	PDD      time.Duration
	HasPDD   bool
	InviteAt time.Time
	// InfoDTMF counts SIP INFO requests carrying DTMF (application/dtmf-relay,
	// application/dtmf); digit values are never passed in.
	InfoDTMF int
	// LastAt is the time of the dialog's latest message.
	LastAt time.Time
	// Legs are the dialogs inside the Call-ID, primary first; the
	// transactions name them by index.
	Legs []LegFacts
	// Signaling are the dialog's transactions read from its retained
	// messages. Signaling.Read is false when the dialog was read without
	// its messages: ack_missing, abandoned and registration_failure are
	// then not judged.
	Signaling dialog.SignalingFacts
	// Unanswered are the requests retransmitted without any response, as
	// the store counted them (every message, retention cap or not).
	Unanswered []dialog.Unanswered
	// Frames are the evidence pointers of the retained messages, by
	// message index (zero when unknown): a clause's frames.
	Frames []packet.FrameRef
	// ICMP are the ICMP/ICMPv6 errors quoting the dialog's messages (kept
	// up to dialog.MaxICMPPerDialog); ICMPCount counts them all.
	ICMP      []dialog.ICMPError
	ICMPCount int
}

// MediaSource is the read side of the stream store diagnosis needs.
type MediaSource interface {
	StreamsFor(callID string) []media.StreamInfo
	EndpointsFor(callID string) []media.Endpoint
	All() []media.StreamInfo
	Stats() media.Stats
}

var _ MediaSource = (*media.Store)(nil)

// NATSource is what a MediaSource offers when it carries the capture's
// STUN/TURN/ICE evidence (a *media.Store an engine filled does).
type NATSource interface {
	NATEvidence() *stun.Tracker
}

var _ NATSource = (*media.Store)(nil)

func natOf(src MediaSource) *stun.Tracker {
	if n, ok := src.(NATSource); ok {
		return n.NATEvidence()
	}
	return nil
}

// Options tune the diagnosis.
type Options struct {
	// SlowSetup is the post-dial delay above which setup is slow (11 s):
	// the run's PDD threshold.
	SlowSetup time.Duration
	// CaptureEnd is the time the capture ends (its latest SIP message read
	// so far; see CaptureEnd). Timer H (ack_missing) and Timer C
	// (abandoned no_final_response) are measured against it, or against
	// the dialog's own latest RTP packet when later: a timer still running
	// at the end of the capture is not judged. Zero: Diagnose uses the
	// dialog's own latest message and RTP packet; CaptureReport computes
	// CaptureEnd's value from the dialogs it judges.
	CaptureEnd time.Time
	// HighLossPct is the loss_pct above which a stream is high_loss: the
	// run's loss threshold (--loss-threshold). Nil: media.HighLossPct (5).
	HighLossPct *float64
	// HighJitterMs is the jitter_ms above which a stream is high_jitter:
	// the run's jitter threshold (--jitter-threshold). Nil:
	// media.HighJitterMs (50).
	HighJitterMs *float64
}

func (o Options) withDefaults() Options {
	if o.SlowSetup <= 0 {
		o.SlowSetup = DefaultSlowSetup
	}
	return o
}

// LossLimit is the loss_pct threshold the options judge with.
func (o Options) LossLimit() float64 {
	if o.HighLossPct != nil {
		return *o.HighLossPct
	}
	return media.HighLossPct
}

// JitterLimit is the jitter_ms threshold the options judge with.
func (o Options) JitterLimit() float64 {
	if o.HighJitterMs != nil {
		return *o.HighJitterMs
	}
	return media.HighJitterMs
}

// StreamRef names a stream inside a finding.
type StreamRef struct {
	SSRC string `json:"ssrc"`
	Src  string `json:"src"`
	Dst  string `json:"dst"`
}

func ref(s *media.StreamInfo) StreamRef { return StreamRef{SSRC: s.SSRC, Src: s.Src, Dst: s.Dst} }

// NATEvidence is one stream sent from somewhere its SDP did not announce.
type NATEvidence struct {
	Stream    StreamRef `json:"stream"`
	Actual    string    `json:"actual_source"`
	Announced []string  `json:"announced"`
}

// Asymmetry is a difference between the two directions of a call.
// Forward is the direction of the call's earliest stream.
type Asymmetry struct {
	Forward string `json:"forward"`
	Reverse string `json:"reverse"`
}

// DurationAsymmetry is two directions of different lengths.
type DurationAsymmetry struct {
	ForwardMs float64 `json:"forward_ms"`
	ReverseMs float64 `json:"reverse_ms"`
}

// QualityIssue is a stream over the loss or jitter threshold: Value is its
// loss_pct, or its jitter_ms (the RFC 3550 value at its last packet).
type QualityIssue struct {
	Stream StreamRef `json:"stream"`
	Value  float64   `json:"value"`
	Limit  float64   `json:"limit"`
	Unit   string    `json:"unit"`
}

// MediaDiagnosis is the media half of a dialog's diagnosis. The four
// booleans and Hints are always present; when there is no media to judge,
// Applicable is false with a Reason rather than an empty stream list.
type MediaDiagnosis struct {
	Applicable          bool     `json:"applicable"`
	Reason              string   `json:"reason,omitempty"`
	OneWayAudio         bool     `json:"one_way_audio"`
	NATMismatch         bool     `json:"nat_mismatch"`
	NoMedia             bool     `json:"no_media"`
	PrivateMediaAddress bool     `json:"private_media_address"`
	Hints               []string `json:"hints"`
	// MediaNotCaptured: the capture holds no RTP at all (a signaling-only
	// capture point), so this answered call's media is not judged
	// (Applicable false): the capture report says it once, never as one
	// no_media per call.
	MediaNotCaptured bool `json:"media_not_captured,omitempty"`
	// Observations are weak signals that are not problems: a private SDP
	// address or a NAT-rewritten source while media did not fail. They never
	// set a verdict.
	Observations []string `json:"observations,omitempty"`

	SDPMedia    []string `json:"sdp_media"`    // announced endpoints
	ActualMedia []string `json:"actual_media"` // streams seen, src→dst
	StreamCount int      `json:"stream_count"`

	// OneWayDirection says which way media flowed when one-way.
	OneWayDirection string `json:"one_way_direction,omitempty"`
	// OneWayQuietPackets is how many packets the silent direction carried
	// when one-way audio is concluded or withheld: 0, or at most 5 while
	// the other direction carried at least 50 (a keepalive or a comfort
	// noise frame is not speech).
	OneWayQuietPackets   *uint64            `json:"one_way_quiet_packets,omitempty"`
	OneWayWithheld       string             `json:"one_way_withheld,omitempty"`
	NATEvidence          []NATEvidence      `json:"nat_evidence,omitempty"`
	PrivateAddresses     []string           `json:"private_addresses,omitempty"`
	CodecAsymmetry       *Asymmetry         `json:"codec_asymmetry,omitempty"`
	PtimeAsymmetry       *Asymmetry         `json:"ptime_asymmetry,omitempty"`
	PayloadAsymmetry     *Asymmetry         `json:"payload_asymmetry,omitempty"`
	DurationAsymmetry    *DurationAsymmetry `json:"duration_asymmetry,omitempty"`
	LateMediaMs          *float64           `json:"late_media_ms,omitempty"`
	HighLoss             []QualityIssue     `json:"high_loss,omitempty"`
	HighJitter           []QualityIssue     `json:"high_jitter,omitempty"`
	Fax                  bool               `json:"fax,omitempty"`
	UngroundedMOSStreams int                `json:"ungrounded_mos_streams,omitempty"`
	// STUN is the STUN/TURN/ICE evidence touching the dialog's media
	// addresses (NAT mappings, TURN allocations with their lapse, ICE
	// pairs, unanswered Bindings), absent when the capture holds none
	// (engine.md §10).
	STUN *stun.DialogEvidence `json:"stun,omitempty"`
}

// FinalFailure is a dialog that ended on a 4xx/5xx/6xx: the INVITE's final
// response when the Call-ID has one, else the first leg (REGISTER,
// SUBSCRIBE, OPTIONS, ...) whose request ended on one.
type FinalFailure struct {
	Code int `json:"code"`
	// Reason is the reason phrase, as sent.
	Reason string `json:"reason,omitempty"`
	Class  string `json:"class" enum:"challenge|canceled|declined|failure"`
	// Method is the request that failed.
	Method string `json:"method,omitempty"`
	// ReasonHeader and Warning are the Reason and Warning header values of
	// the failure response, as sent (at most 200 characters); absent when
	// it had none.
	ReasonHeader string `json:"reason_header,omitempty"`
	Warning      string `json:"warning,omitempty"`
	// Evidence is the message index of the failure response ([] when it
	// was not retained).
	Evidence []int `json:"evidence"`
}

// SlowSetup is a post-dial delay over the threshold (the same judgement as
// post_dial_delay, kept for readers of the earlier shape).
type SlowSetup struct {
	PDDMs       float64 `json:"pdd_ms"`
	ThresholdMs float64 `json:"threshold_ms"`
}

// SignalingDiagnosis is present only when something fired (or there is
// something to hint). Every detection is always checked and null when
// clean; evidence are message indexes (the index of get_dialog's
// messages).
type SignalingDiagnosis struct {
	FinalFailure *FinalFailure `json:"final_failure"`
	SlowSetup    *SlowSetup    `json:"slow_setup"`
	// AuthLoop: at least three 401/407 and no 2xx.
	AuthLoop *AuthLoop `json:"auth_loop"`
	// Retransmissions are requests retransmitted without any response.
	Retransmissions []UnansweredRequest `json:"retransmissions"`
	// AckMissing: a 2xx to an INVITE and no ACK within Timer H (32 s).
	AckMissing *AckMissing `json:"ack_missing"`
	// Abandoned: the caller cancelled, or no final response within Timer C
	// (180 s).
	Abandoned *Abandoned `json:"abandoned"`
	// PostDialDelay: INVITE to the first 18x over the run's threshold.
	PostDialDelay *PostDialDelay `json:"post_dial_delay"`
	// RegistrationFailure: a REGISTER rejected, challenged in a loop, or
	// granted a shorter expiry than asked.
	RegistrationFailure *RegistrationFailure `json:"registration_failure"`
	// ICMPUnreachable are the ICMP/ICMPv6 errors quoting the dialog's
	// messages, one per kind of error, far end and reporter; absent when
	// none quoted it (a capture filtered to SIP's ports holds no ICMP:
	// absence proves nothing).
	ICMPUnreachable []ICMPUnreachable `json:"icmp_unreachable,omitempty"`
	// MessagesNotRead counts messages past the per-dialog retention cap:
	// the detections judged the retained ones.
	MessagesNotRead int      `json:"messages_not_read,omitempty"`
	Hints           []string `json:"hints"`
}

// DialogDiagnosis is one dialog's verdict.
type DialogDiagnosis struct {
	CallID string `json:"call_id"`
	// Verdict names where the problem is: signaling, media, both or none.
	// It is derived from Evidence alone (VerdictOf).
	Verdict string `json:"verdict"`
	// Evidence are the clauses that fired ([] when none): each names its
	// rule, the values it measured, its threshold and the messages and
	// frames that prove it.
	Evidence  []Clause            `json:"evidence"`
	Signaling *SignalingDiagnosis `json:"signaling_diagnosis,omitempty"`
	Media     MediaDiagnosis      `json:"media"`
	// NotJudged lists the signaling detections the capture could not
	// decide (a timer still running when it ended, a dialog read without
	// its messages); absent when every detection was decided.
	NotJudged []NotJudged `json:"not_judged,omitempty"`
}

// Problem reports whether the media diagnosis found anything.
func (m *MediaDiagnosis) Problem() bool {
	return m.OneWayAudio || m.NoMedia || m.NATMismatch || m.PrivateMediaAddress ||
		m.CodecAsymmetry != nil || m.PtimeAsymmetry != nil || m.PayloadAsymmetry != nil ||
		m.DurationAsymmetry != nil || m.LateMediaMs != nil || len(m.HighLoss) > 0 || len(m.HighJitter) > 0
}

// Diagnose judges one dialog.
func Diagnose(d DialogFacts, src MediaSource, opts Options) DialogDiagnosis {
	opts = opts.withDefaults()
	out := DialogDiagnosis{CallID: d.CallID}
	streams := src.StreamsFor(d.CallID)
	captureRTP := captureRTPPackets(src, streams)
	out.Media = diagnoseMedia(d, streams, src.EndpointsFor(d.CallID), len(streams) > 0 || CaptureHasMedia(src), opts, natOf(src))
	seen := make([]time.Time, 0, len(streams))
	for i := range streams {
		seen = append(seen, streams[i].LastSeen)
	}
	out.Signaling, out.NotJudged = diagnoseSignalingFull(&d, seen, opts)
	var e evidenceOf
	signalingClauses(&d, out.Signaling, opts, &e)
	mediaClauses(&out.Media, streams, opts, captureRTP, &e)
	out.Evidence = e.clauses
	if out.Evidence == nil {
		out.Evidence = []Clause{}
	}
	out.NotJudged = append(out.NotJudged, e.refused...)
	out.Verdict = VerdictOf(out.Evidence)
	return out
}

// captureRTPPackets is how many RTP packets the capture holds: the stream
// store's counter, or at least the dialog's own streams' packets when the
// source keeps no counter.
func captureRTPPackets(src MediaSource, streams []media.StreamInfo) uint64 {
	n := src.Stats().RTPPackets
	var own uint64
	for i := range streams {
		own += streams[i].Packets
	}
	return max(n, own)
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// returnedToAll reports whether every rewritten source of evs also received
// a stream (the return path of symmetric RTP reached it), compared by address
// and port, or by address alone when the NAT moved the port (and the two ends
// do not share one address).
func returnedToAll(evs []NATEvidence, streams []media.StreamInfo) bool {
	for _, ev := range evs {
		src, err := netip.ParseAddrPort(ev.Actual)
		if err != nil {
			return false
		}
		back := false
		for i := range streams {
			dst, err := netip.ParseAddrPort(streams[i].Dst)
			from, _ := netip.ParseAddrPort(streams[i].Src)
			// by address alone only when the two ends do not share it
			if err == nil && (dst == src || (dst.Addr() == src.Addr() && from.Addr() != src.Addr())) {
				back = true
				break
			}
		}
		if !back {
			return false
		}
	}
	return true
}

// side labels an endpoint: the offerer's or the answerer's.
type sides struct {
	offer, answer map[netip.AddrPort]bool
	all           map[netip.AddrPort]bool
}

// CaptureHasMedia reports whether the capture holds any media at all: a
// stream (orphaned, evicted or bound), an RTP packet or a UDPTL packet.
// Without any, a call's missing RTP says where the capture point sits, not
// what the call did.
func CaptureHasMedia(src MediaSource) bool {
	st := src.Stats()
	if st.Streams > 0 || st.StreamsEvicted > 0 || st.RTPPackets > 0 || st.UDPTLPackets > 0 {
		return true
	}
	return len(src.All()) > 0
}

// diagnoseMedia judges the dialog's media; mediaCaptured is false when the
// capture holds no media at all (CaptureHasMedia).
func diagnoseMedia(d DialogFacts, streams []media.StreamInfo, eps []media.Endpoint, mediaCaptured bool, opts Options, nat *stun.Tracker) MediaDiagnosis {
	lossLimit, jitterLimit := opts.LossLimit(), opts.JitterLimit()
	m := MediaDiagnosis{Hints: []string{}, SDPMedia: []string{}, ActualMedia: []string{}, StreamCount: len(streams)}
	m.STUN = natEvidence(nat, d, streams, eps, opts)
	sd := sides{offer: map[netip.AddrPort]bool{}, answer: map[netip.AddrPort]bool{}, all: map[netip.AddrPort]bool{}}
	oneWayIntended := false
	for _, e := range eps {
		m.SDPMedia = append(m.SDPMedia, e.Address)
		sd.all[e.AddrPort] = true
		if e.Offer {
			sd.offer[e.AddrPort] = true
		} else {
			sd.answer[e.AddrPort] = true
		}
		if e.Direction == "sendonly" || e.Direction == "recvonly" || e.Direction == "inactive" {
			oneWayIntended = true
		}
	}
	for i := range streams {
		s := &streams[i]
		m.ActualMedia = append(m.ActualMedia, s.Src+"→"+s.Dst)
		if s.Kind == "fax" {
			m.Fax = true
		}
	}
	if len(streams) == 0 {
		switch {
		case len(eps) == 0:
			m.Reason = "no SDP was seen for this dialog and no RTP reached the capture point"
			return m
		case !d.Answered:
			m.Reason = "the call was never answered and no RTP reached the capture point"
			if d.HasFinal {
				m.Reason = fmt.Sprintf("the call ended with %d before media and no RTP reached the capture point", d.FinalCode)
			}
			return m
		}
		if !mediaCaptured {
			m.MediaNotCaptured = true
			m.Reason = "the capture holds no RTP at all: media was not captured at this point (a signaling-only capture point), so this call's media is not judged"
			return m
		}
		m.Applicable = true
		m.NoMedia = true
		m.Hints = append(m.Hints, "SDP was negotiated and the call answered, but no RTP reached the capture point: check firewalls and the media path, or whether the capture point sees media at all")
		privateCheck(&m, eps, streams, failure{noMedia: true}, sd, m.STUN)
		return m
	}
	m.Applicable = true
	if m.Fax {
		m.Hints = append(m.Hints, "T.38 fax: not graded as voice")
	}

	// Directions are physical: the earliest stream's (source, destination)
	// is forward and the opposite pair is reverse. Addresses compare by IP
	// (a NAT may move ports), by IP and port when both ends share an IP.
	var cn, pkts uint64
	for i := range streams {
		s := &streams[i]
		pkts += s.Packets
		if s.Silence != nil {
			cn += s.Silence.CNFrames
		}
		if s.MOS != nil && !s.MOSGrounded {
			m.UngroundedMOSStreams++
		}
	}
	fwd, rev := directions(streams)

	// One-way audio: one direction silent (see OneWayQuietPackets),
	// judged on the streams that can carry audio: a video or fax stream
	// alone says nothing about audio.
	loud, quiet := notVideo(fwd), notVideo(rev)
	if packetsOf(quiet) > packetsOf(loud) {
		loud, quiet = quiet, loud
	}
	lp, qp := packetsOf(loud), packetsOf(quiet)
	silent := lp > 0 && (qp == 0 || (qp <= OneWayQuietPackets && lp >= OneWayMinPackets))
	if len(loud) == 0 {
		silent = false
	}
	if d.Answered && silent && !m.Fax {
		share := 0.0
		if pkts > 0 {
			share = float64(cn) / float64(pkts)
		}
		dir := describeDirection(loud[0], sd)
		m.OneWayQuietPackets = &qp
		switch {
		case share >= media.CNShareWithhold:
			m.OneWayWithheld = fmt.Sprintf("comfort noise is %.0f%% of the packets: silence suppression can explain a quiet direction", share*100)
		case oneWayIntended:
			m.OneWayWithheld = "an SDP direction attribute (sendonly, recvonly or inactive) makes one direction expected"
		default:
			m.OneWayAudio = true
			m.OneWayDirection = dir
			h := "media flowed " + dir + " only"
			if qp > 0 {
				h += fmt.Sprintf(" (the other direction carried %d packet(s) against %d: no speech)", qp, lp)
			}
			m.Hints = append(m.Hints, h+": check NAT/firewall on the silent side, and that the silent side's SDP address is reachable")
		}
	}

	// NAT mismatch: a sender's packets come from an address:port no SDP of
	// the dialog announced, while both sides announced endpoints.
	if len(sd.offer) > 0 && len(sd.answer) > 0 {
		for i := range streams {
			s := &streams[i]
			src, _ := netip.ParseAddrPort(s.Src)
			dst, _ := netip.ParseAddrPort(s.Dst)
			if !sd.all[dst] || sd.all[src] {
				continue
			}
			announced := sd.offer
			if sd.offer[dst] {
				announced = sd.answer
			}
			ev := NATEvidence{Stream: ref(s), Actual: s.Src}
			for a := range announced {
				ev.Announced = append(ev.Announced, a.String())
			}
			sort.Strings(ev.Announced)
			m.NATEvidence = append(m.NATEvidence, ev)
		}
		if len(m.NATEvidence) > 0 {
			// A weak signal: a problem only when media towards the
			// rewritten side failed.
			// Failed: audio one-way, or no stream (of any kind) came back
			// to a rewritten source (h263-over-rtp.pcap: one video stream
			// from the rewritten side, nothing towards it).
			if m.OneWayAudio || !returnedToAll(m.NATEvidence, streams) {
				m.NATMismatch = true
				m.Hints = append(m.Hints, "media arrives from an address or port the SDP did not announce: a NAT rewrites it; symmetric RTP (comedia) or an SBC fixes the return path")
			} else {
				m.Observations = append(m.Observations, "media arrives from an address or port the SDP did not announce (a NAT rewrote it), and it flowed both ways: not a problem")
			}
		}
	}
	natMismatchSTUN(&m)
	relayContext(&m, streams)
	privateCheck(&m, eps, streams, failure{noMedia: false, oneWay: m.OneWayAudio, loud: loudOf(loud)}, sd, m.STUN)

	// Asymmetries between directions (a silent direction's stray packets
	// have no codec, packetization or duration worth comparing).
	if len(fwd) > 0 && len(rev) > 0 && !silent {
		fc, rc := codecs(fwd), codecs(rev)
		if fc != "" && rc != "" && fc != rc {
			m.CodecAsymmetry = &Asymmetry{Forward: fc, Reverse: rc}
			m.Hints = append(m.Hints, "the two directions use different codecs")
		}
		fp, rp := pts(fwd), pts(rev)
		if fc == rc && fp != rp {
			m.PayloadAsymmetry = &Asymmetry{Forward: fp, Reverse: rp}
			m.Hints = append(m.Hints, "the two directions send the same codec under different RTP payload types")
		}
		if pf, pr, ok := ptimes(fwd, rev); ok && math.Abs(pf-pr) > PtimeAsymmetryMs {
			m.PtimeAsymmetry = &Asymmetry{Forward: fmt.Sprintf("%.0f ms", pf), Reverse: fmt.Sprintf("%.0f ms", pr)}
			m.Hints = append(m.Hints, fmt.Sprintf("the two directions packetize differently (%.0f ms and %.0f ms)", pf, pr))
		}
		df, dr := span(fwd), span(rev)
		diff := math.Abs(df - dr)
		if diff >= ms(DurationAsymmetryMinimum) && diff >= math.Max(df, dr)*DurationAsymmetryPct/100 {
			m.DurationAsymmetry = &DurationAsymmetry{ForwardMs: df, ReverseMs: dr}
			m.Hints = append(m.Hints, "one direction's media lasted noticeably longer than the other's")
		}
	}

	// Late media.
	if d.Answered && !d.AnsweredAt.IsZero() {
		first := streams[0].FirstSeen
		for i := range streams {
			if streams[i].FirstSeen.Before(first) {
				first = streams[i].FirstSeen
			}
		}
		if late := first.Sub(d.AnsweredAt); late > LateMediaThreshold {
			v := ms(late)
			m.LateMediaMs = &v
			m.Hints = append(m.Hints, fmt.Sprintf("first RTP arrived %.0f ms after the answer", v))
		}
	}

	// Loss and jitter.
	for i := range streams {
		s := &streams[i]
		if s.Kind != "audio" {
			continue
		}
		if s.LossPct > lossLimit {
			m.HighLoss = append(m.HighLoss, QualityIssue{Stream: ref(s), Value: s.LossPct, Limit: lossLimit, Unit: "percent"})
		}
		if s.JitterMs != nil && *s.JitterMs > jitterLimit {
			m.HighJitter = append(m.HighJitter, QualityIssue{Stream: ref(s), Value: *s.JitterMs, Limit: jitterLimit, Unit: "ms"})
		}
	}
	if len(m.HighLoss) > 0 {
		m.Hints = append(m.Hints, fmt.Sprintf("packet loss above %g%% on %d stream(s)", lossLimit, len(m.HighLoss)))
	}
	if len(m.HighJitter) > 0 {
		m.Hints = append(m.Hints, fmt.Sprintf("jitter (RFC 3550, jitter_ms) above %g ms on %d stream(s)", jitterLimit, len(m.HighJitter)))
	}
	if m.UngroundedMOSStreams > 0 {
		m.Hints = append(m.Hints, fmt.Sprintf("%d stream(s) carry a MOS that is not grounded (a codec without a published G.113 impairment, or loss on one G.113 gives no Bpl for): see mos_note; not a media problem", m.UngroundedMOSStreams))
	}
	return m
}

// failure is what the media diagnosis measured as failed: no RTP at all,
// or one-way audio with loud the first stream of the direction that flowed.
type failure struct {
	noMedia, oneWay bool
	loud            *media.StreamInfo
}

func loudOf(ss []*media.StreamInfo) *media.StreamInfo {
	if len(ss) == 0 {
		return nil
	}
	return ss[0]
}

// towards reports whether media towards the offerer's side (offer true) or
// the answerer's failed: no RTP at all, or one-way audio whose silent
// direction is the one towards that side (when the sides cannot be told
// apart, a one-way call counts as failed both ways).
func (f failure) towards(offer bool, sd sides) bool {
	switch {
	case f.noMedia:
		return true
	case !f.oneWay:
		return false
	}
	dir := ""
	if f.loud != nil {
		dir = describeDirection(f.loud, sd)
	}
	switch dir {
	case "offerer→answerer": // the answerer heard, the offerer did not
		return offer
	case "answerer→offerer":
		return !offer
	}
	return true
}

// privateCheck judges announced private addresses when the dialog's
// signaling or media also involves a public address. A private c= is a
// weak signal: it is a problem (PrivateMediaAddress)
// only when media towards that side failed, measured as no RTP or one-way
// audio, and no ICE srflx/relay candidate (RFC 8445 §5.1.1) and no relay
// anchoring the media (the same side's SDP in the dialog announcing a
// public address that the RTP used, an SBC's rewrite) explains how media
// reaches it. Otherwise the addresses are listed with an observation.
func privateCheck(m *MediaDiagnosis, eps []media.Endpoint, streams []media.StreamInfo, fail failure, sd sides, ev *stun.DialogEvidence) {
	public := false
	var priv []string
	privSide := map[bool]bool{} // offer → a private address on that side
	ice := false
	for _, e := range eps {
		a := e.AddrPort.Addr()
		if isPrivate(a) {
			priv = append(priv, e.Address)
			privSide[e.Offer] = true
			ice = ice || e.ICETraversal
		} else if a.IsValid() && !a.IsLoopback() {
			public = true
		}
		if sg, err := netip.ParseAddrPort(e.Signaler); err == nil && !isPrivate(sg.Addr()) && !sg.Addr().IsLoopback() {
			public = true
		}
	}
	used := map[netip.AddrPort]bool{}
	reached := map[netip.AddrPort]bool{} // where streams were sent
	for i := range streams {
		if ap, err := netip.ParseAddrPort(streams[i].Dst); err == nil {
			reached[ap] = true
		}
		for _, x := range []string{streams[i].Src, streams[i].Dst} {
			if ap, err := netip.ParseAddrPort(x); err == nil {
				used[ap] = true
				if !isPrivate(ap.Addr()) && !ap.Addr().IsLoopback() {
					public = true
				}
			}
		}
	}
	if !public || len(priv) == 0 {
		return
	}
	sort.Strings(priv)
	m.PrivateAddresses = priv
	// A relay anchors a side's media when that side's SDP in this dialog
	// also announced a public address and the RTP used it.
	relay := ""
	for _, e := range eps {
		a := e.AddrPort.Addr()
		if privSide[e.Offer] && !isPrivate(a) && !a.IsLoopback() && used[e.AddrPort] {
			relay = e.Address
			break
		}
	}
	failed := (privSide[true] && fail.towards(true, sd)) || (privSide[false] && fail.towards(false, sd))
	stunWhy, stunAgainst := stunPrivate(ev, priv, reached)
	switch {
	case stunWhy != "":
		m.Observations = append(m.Observations, "an SDP announces a private address, but "+stunWhy+": not a problem")
	case ice:
		m.Observations = append(m.Observations, "an SDP announces a private address, with ICE srflx/relay candidates: the c= address is only the default candidate, not a problem")
	case relay != "":
		m.Observations = append(m.Observations, "an SDP announces a private address, but a relay anchors the media at "+relay+": not a problem")
	case !failed:
		m.Observations = append(m.Observations, "an SDP announces a private address to a public peer, yet media towards it did not fail (a NAT or symmetric RTP carried it): not a problem")
	default:
		m.PrivateMediaAddress = true
		m.Hints = append(m.Hints, "an SDP announces a private address to a public peer and media towards it failed: the far end cannot reach it without NAT traversal (STUN/ICE), symmetric RTP or an SBC")
		m.Hints = append(m.Hints, stunAgainst...)
	}
	if ev != nil && ev.Caveat != "" && (stunWhy != "" || m.PrivateMediaAddress && len(stunAgainst) > 0) {
		m.Hints = append(m.Hints, ev.Caveat)
	}
}

func isPrivate(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsPrivate() || a.IsLinkLocalUnicast()
}

func codecs(ss []*media.StreamInfo) string {
	set := map[string]bool{}
	for _, s := range ss {
		if s.Codec != "" && s.Kind == "audio" {
			set[s.Codec] = true
		}
	}
	return joinSet(set)
}

func pts(ss []*media.StreamInfo) string {
	set := map[string]bool{}
	for _, s := range ss {
		if s.Kind == "audio" {
			set[fmt.Sprint(s.PayloadType)] = true
		}
	}
	return joinSet(set)
}

func joinSet(set map[string]bool) string {
	l := make([]string, 0, len(set))
	for k := range set {
		l = append(l, k)
	}
	sort.Strings(l)
	return strings.Join(l, ",")
}

// ptimes compares the two directions' packetization: each direction's is
// the modal ptime of its audio streams (each stream's ptime_ms is already
// its most common timestamp step; across the direction's streams the
// ptime backed by the most steps wins, ties to the smaller).
func ptimes(fwd, rev []*media.StreamInfo) (float64, float64, bool) {
	pt := func(ss []*media.StreamInfo) (float64, bool) {
		votes := map[float64]uint64{}
		for _, s := range ss {
			if s.Kind == "audio" && s.PtimeMs != nil {
				n := uint64(1)
				if s.PtimeSteps != nil && s.PtimeSteps.Modal > 0 {
					n = s.PtimeSteps.Modal
				}
				votes[*s.PtimeMs] += n
			}
		}
		best, bestN := 0.0, uint64(0)
		for p, n := range votes {
			if n > bestN || (n == bestN && p < best) {
				best, bestN = p, n
			}
		}
		return best, bestN > 0
	}
	f, ok1 := pt(fwd)
	r, ok2 := pt(rev)
	return f, r, ok1 && ok2
}

// directions splits streams into the earliest stream's direction and the
// opposite one; streams between other hosts join neither.
func directions(streams []media.StreamInfo) (fwd, rev []*media.StreamInfo) {
	if len(streams) == 0 {
		return nil, nil
	}
	first := &streams[0]
	for i := range streams {
		if streams[i].FirstSeen.Before(first.FirstSeen) {
			first = &streams[i]
		}
	}
	a, _ := netip.ParseAddrPort(first.Src)
	b, _ := netip.ParseAddrPort(first.Dst)
	samePort := a.Addr() == b.Addr()
	match := func(x, y netip.AddrPort) bool {
		if samePort {
			return x == y
		}
		return x.Addr() == y.Addr()
	}
	for i := range streams {
		s := &streams[i]
		src, _ := netip.ParseAddrPort(s.Src)
		dst, _ := netip.ParseAddrPort(s.Dst)
		switch {
		case match(src, a) && match(dst, b):
			fwd = append(fwd, s)
		case match(src, b) && match(dst, a):
			rev = append(rev, s)
		}
	}
	return fwd, rev
}

// describeDirection names a stream's direction by the SDP sides when it
// can: the side whose endpoint receives it, else the side that sent it.
func describeDirection(s *media.StreamInfo, sd sides) string {
	src, _ := netip.ParseAddrPort(s.Src)
	dst, _ := netip.ParseAddrPort(s.Dst)
	switch {
	case sd.answer[dst] || (!sd.all[dst] && sd.offer[src]):
		return "offerer→answerer"
	case sd.offer[dst] || (!sd.all[dst] && sd.answer[src]):
		return "answerer→offerer"
	}
	return s.Src + "→" + s.Dst
}

// notVideo keeps the streams that can carry audio (not video, not fax).
func notVideo(ss []*media.StreamInfo) []*media.StreamInfo {
	out := make([]*media.StreamInfo, 0, len(ss))
	for _, s := range ss {
		if s.Kind != "video" && s.Kind != "fax" {
			out = append(out, s)
		}
	}
	return out
}

// packetsOf sums the packets of streams.
func packetsOf(ss []*media.StreamInfo) uint64 {
	var n uint64
	for _, s := range ss {
		n += s.Packets
	}
	return n
}

func span(ss []*media.StreamInfo) float64 {
	var first, last time.Time
	for _, s := range ss {
		if first.IsZero() || s.FirstSeen.Before(first) {
			first = s.FirstSeen
		}
		if s.LastSeen.After(last) {
			last = s.LastSeen
		}
	}
	return ms(last.Sub(first))
}
