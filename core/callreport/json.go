package callreport

import (
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/sdptimeline"
	"github.com/sipnab/sipnab/core/sip"
)

// ReportSchemaVersion is the version of the Report shape.
const ReportSchemaVersion = 1

// Report is the structured per-call report (get_dialog_report json). From
// and To values, reason phrases, cause text and codec names are the
// sender's text as sent: a caller that hands the report to an agent fences
// them and adds the provenance note (get_dialog_report does, and gives the
// other sender-written values, method tokens and branches, the fence's
// hygiene without markers).
type Report struct {
	// SchemaVersion of this shape.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
	// CallID is the call's Call-ID, verbatim.
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// State is the dialog state.
	State string `json:"state" desc:"dialog state"`
	// Method opened the dialog.
	Method string `json:"method" desc:"method that opened the dialog"`
	// FinalStatusCode and FinalStatusReason are the final response to the
	// call's INVITE; absent when there was none.
	FinalStatusCode   int    `json:"final_status_code,omitempty" desc:"final response code of the call's INVITE"`
	FinalStatusReason string `json:"final_status_reason,omitempty" desc:"its reason phrase (fenced)"`
	// From and To are the URIs of the first message's From and To;
	// FromDisplay and ToDisplay their display names. Sender-written,
	// fenced by get_dialog_report.
	From        string `json:"from,omitempty" desc:"From URI (fenced)"`
	FromDisplay string `json:"from_display,omitempty" desc:"From display name (fenced)"`
	To          string `json:"to,omitempty" desc:"To URI (fenced)"`
	ToDisplay   string `json:"to_display,omitempty" desc:"To display name (fenced)"`
	// MsgCount counts every message of the Call-ID, retransmissions
	// included, capture duplicates not (timing.duplicates).
	MsgCount int `json:"msg_count" desc:"SIP messages of the Call-ID, retransmissions included, duplicates not"`
	// DurationSec is the span from the first to the last message.
	DurationSec float64 `json:"duration_sec" desc:"seconds from the first to the last message"`
	// Ended and DurationToCaptureEndMs: a call still in progress (InCall,
	// no BYE) when the capture ended, and its 2xx to the capture's latest
	// packet, SIP or RTP, in ms (list_dialogs' row); absent otherwise.
	Ended                  *bool  `json:"ended,omitempty" desc:"false: call still in progress (InCall) at capture end"`
	DurationToCaptureEndMs *int64 `json:"duration_to_capture_end_ms,omitempty" desc:"with ended false: 2xx to the capture's last packet (SIP or RTP), ms"`
	// Frame points at the frame the dialog opened in; absent when unknown.
	Frame string `json:"frame,omitempty" desc:"evidence pointer of the opening frame"`
	// Diagnosis is the call's verdict (signaling and media).
	Diagnosis analysis.DialogDiagnosis `json:"diagnosis" desc:"the call's verdict: signaling and media"`
	// SDPTimeline is the offer/answer history ([] when no SDP), as
	// get_sdp_timeline lists it. Codec names are the sender's text.
	SDPTimeline []sdptimeline.Exchange `json:"sdp_timeline" desc:"SDP offers and answers in capture order"`
	// Termination is why the call ended, as signaled; absent when no
	// message named a cause.
	Termination *dialog.Cause `json:"termination,omitempty" desc:"why the call ended, as signaled"`
	// Timing is the transaction timing; absent values were not measured.
	Timing ReportTiming `json:"timing" desc:"transaction timing"`
	// Streams are the call's RTP streams, without MOS ([] when none).
	Streams []ReportStream `json:"streams" desc:"RTP streams of the call, without MOS"`
}

// ReportTiming is a report's timing block.
type ReportTiming struct {
	// Retransmits counts retransmitted messages (re-sent by their sender,
	// RFC 3261 §17; capture duplicates excluded).
	Retransmits int `json:"retransmits" desc:"retransmitted messages"`
	// Duplicates counts capture duplicates (the same message seen twice at
	// the capture point; core/dialog/dup.go); absent when none.
	Duplicates int `json:"duplicates,omitempty" desc:"capture duplicates (not retransmissions)"`
	// SetupMs is the routed INVITE (after a 401/407, the credentialed
	// retry) to its 2xx; AuthWaitMs the caller's wait from the challenge
	// to that retry, in no delay (docs/call-timing.md).
	SetupMs    *int64 `json:"setup_ms,omitempty" desc:"INVITE to 2xx, ms"`
	AuthWaitMs *int64 `json:"auth_wait_ms,omitempty" desc:"401/407 to the credentialed retry, ms; not in setup"`
	// TeardownMs is the BYE to its 2xx.
	TeardownMs *int64 `json:"teardown_ms,omitempty" desc:"BYE to its 2xx, ms"`
	// TryingDelayMs is the INVITE to the first 100 Trying.
	TryingDelayMs *int64 `json:"trying_delay_ms,omitempty" desc:"INVITE to 100 Trying, ms"`
}

// ReportStream is one RTP stream of a report: what was measured on the
// wire, without a MOS estimate (rtp_stats carries the score and its
// grounding).
type ReportStream struct {
	SSRC        string  `json:"ssrc" desc:"SSRC, 0x and 8 hex digits"`
	Src         string  `json:"src" desc:"source address"`
	Dst         string  `json:"dst" desc:"destination address"`
	Kind        string  `json:"kind" desc:"audio, video, fax, comfort_noise, telephone_event, unknown"`
	Codec       string  `json:"codec,omitempty" desc:"codec name (from the SDP or the RFC 3551 table)"`
	PayloadType int     `json:"payload_type" desc:"RTP payload type"`
	Packets     uint64  `json:"packets" desc:"packets received"`
	Expected    int64   `json:"expected" desc:"packets expected from the sequence numbers"`
	Lost        int64   `json:"lost" desc:"expected minus received (negative with duplicates)"`
	LossPct     float64 `json:"loss_pct" desc:"lost as a percentage of expected"`
	// JitterMs is the RFC 3550 interarrival jitter at the end of the
	// stream; absent when the clock rate is unknown.
	JitterMs    *float64  `json:"jitter_ms,omitempty" desc:"RFC 3550 interarrival jitter, ms"`
	JitterMaxMs *float64  `json:"jitter_max_ms,omitempty" desc:"largest jitter value, ms"`
	PtimeMs     *float64  `json:"ptime_ms,omitempty" desc:"packetization measured from RTP timestamps, ms"`
	FirstSeen   time.Time `json:"first_seen" desc:"first packet"`
	LastSeen    time.Time `json:"last_seen" desc:"last packet"`
	DurationMs  float64   `json:"duration_ms" desc:"first to last packet, ms"`
	// DialogAssertion says how the stream was tied to the call.
	DialogAssertion string `json:"dialog_assertion,omitempty" desc:"how the stream was tied to the call"`
	// Frame points at the stream's first packet.
	Frame string `json:"frame,omitempty" desc:"evidence pointer of the first packet"`
}

// JSON returns the structured report.
func (c *Call) JSON() Report {
	d := &c.Detail
	r := Report{
		SchemaVersion:          ReportSchemaVersion,
		CallID:                 d.CallID,
		State:                  d.State,
		Method:                 d.Method,
		FinalStatusCode:        d.FinalStatusCode,
		FinalStatusReason:      d.FinalReason,
		MsgCount:               d.MsgCount,
		DurationSec:            d.DurationSec,
		Ended:                  d.Ended,
		DurationToCaptureEndMs: d.DurationToCaptureEndMs,
		Frame:                  d.Frame,
		Diagnosis:              c.Diagnosis,
		SDPTimeline:            c.SDP,
		Termination:            d.Termination,
		Timing: ReportTiming{
			Retransmits:   d.Timing.Retransmits,
			Duplicates:    d.Timing.Duplicates,
			SetupMs:       d.TimingDetail.SetupMs,
			AuthWaitMs:    d.TimingDetail.AuthWaitMs,
			TeardownMs:    d.TimingDetail.TeardownMs,
			TryingDelayMs: d.TimingDetail.TryingMs,
		},
		Streams: make([]ReportStream, 0, len(c.Streams)),
	}
	if from, to, ok := c.parties(); ok {
		r.From, r.FromDisplay, r.To, r.ToDisplay = from.URI, from.Display, to.URI, to.Display
	}
	for i := range c.Streams {
		r.Streams = append(r.Streams, reportStream(&c.Streams[i]))
	}
	return r
}

// parties returns the From and To of the call's first message that has
// them.
func (c *Call) parties() (from, to sip.NameAddr, ok bool) {
	for i := range c.Detail.Messages {
		m := c.Detail.Messages[i].Msg
		if m != nil && (m.From.URI != "" || m.To.URI != "") {
			return m.From, m.To, true
		}
	}
	return sip.NameAddr{}, sip.NameAddr{}, false
}

func reportStream(s *media.StreamInfo) ReportStream {
	return ReportStream{
		SSRC: s.SSRC, Src: s.Src, Dst: s.Dst, Kind: s.Kind, Codec: s.Codec, PayloadType: s.PayloadType,
		Packets: s.Packets, Expected: s.Expected, Lost: s.Lost, LossPct: s.LossPct,
		JitterMs: s.JitterMs, JitterMaxMs: s.JitterMaxMs, PtimeMs: s.PtimeMs,
		FirstSeen: s.FirstSeen, LastSeen: s.LastSeen, DurationMs: s.DurationMs,
		DialogAssertion: s.DialogAssertion, Frame: s.Frame,
	}
}
