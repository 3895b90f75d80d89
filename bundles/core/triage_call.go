package core

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/sdk"
)

// triageSchemaVersion is triage_call's response schema version.
const triageSchemaVersion = 1

type triageIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
}

// Triage is triage_call's answer: where one call's problem is.
type Triage struct {
	// CallID is the dialog judged, verbatim.
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// Verdict says where the problem is: signaling, media, both or none.
	// It is derived from Evidence alone.
	Verdict string `json:"verdict" enum:"signaling|media|both|none" desc:"where the problem is"`
	// Evidence are the clauses that fired ([] when none): the rule, the
	// measured values, the threshold, the messages and frames.
	Evidence []analysis.Clause `json:"evidence" nonnull:"true" desc:"clauses that fired"`
	// EvidenceOmitted counts the last clauses left out to fit the byte
	// ceiling; verdict is still derived from every clause.
	EvidenceOmitted int `json:"evidence_omitted,omitempty" desc:"clauses cut by the byte cap; verdict counts them"`
	// PointersOmitted counts the message indexes and frame pointers left
	// out of the clauses to fit the byte ceiling (a clause over every
	// stream of a long call names one frame per stream).
	PointersOmitted int `json:"pointers_omitted,omitempty" desc:"message indexes and frames cut by the byte cap"`
	// State is the dialog's state.
	State string `json:"state" desc:"dialog state"`
	// FinalStatusCode is the final response to the call's INVITE; absent
	// when there was none.
	FinalStatusCode int `json:"final_status_code,omitempty" desc:"final response code of the call's INVITE"`
	// Signaling is the signaling half of the verdict.
	Signaling TriageSignaling `json:"signaling" desc:"signaling half of the verdict"`
	// Media is the media half of the verdict.
	Media TriageMedia `json:"media" desc:"media half of the verdict"`
	// Termination is why the call ended, as the signaling said it (the last
	// message naming a cause; Reason on BYE or CANCEL counts; within one
	// message a Q.850 cause beats a SIP one). Absent when no message named a
	// cause. cause_text is sender-written and fenced.
	Termination *dialog.Cause `json:"termination,omitempty" desc:"why the call ended as signaled; absent when no cause was named"`
	sdk.SourceFlags
	// CaptureIdentity names the capture the answer came from.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

// TriageSignaling is the signaling half of a triage verdict. Each
// detection is absent when it did not fire; evidence are message indexes
// (get_dialog's).
type TriageSignaling struct {
	// Problem: any signaling detection fired.
	Problem bool `json:"problem" desc:"any signaling detection fired"`
	// FinalFailure is the 4xx/5xx/6xx the call ended on; absent otherwise.
	FinalFailure *analysis.FinalFailure `json:"final_failure,omitempty" desc:"the failure response the dialog ended on"`
	// SlowSetup is a post-dial delay over the threshold; absent otherwise.
	SlowSetup *analysis.SlowSetup `json:"slow_setup,omitempty" desc:"post-dial delay over the threshold"`
	// AuthLoop: three or more 401/407 and no 2xx.
	AuthLoop *analysis.AuthLoop `json:"auth_loop,omitempty" desc:"challenged three times or more with no success"`
	// Retransmissions are requests retransmitted with no response.
	Retransmissions []analysis.UnansweredRequest `json:"retransmissions,omitempty" desc:"requests retransmitted with no response"`
	// AckMissing: a 2xx to an INVITE not acknowledged within Timer H.
	AckMissing *analysis.AckMissing `json:"ack_missing,omitempty" desc:"2xx to INVITE with no ACK within Timer H (32 s)"`
	// Abandoned: cancelled, or no final response within Timer C.
	Abandoned *analysis.Abandoned `json:"abandoned,omitempty" desc:"cancelled, or no final response within Timer C (180 s)"`
	// PostDialDelay: INVITE to the first 18x over the threshold.
	PostDialDelay *analysis.PostDialDelay `json:"post_dial_delay,omitempty" desc:"INVITE to first 18x over the threshold"`
	// RegistrationFailure: REGISTER rejected, in an auth loop, or granted
	// a shorter expiry than asked.
	RegistrationFailure *analysis.RegistrationFailure `json:"registration_failure,omitempty" desc:"REGISTER rejected, auth loop, or shortened expiry"`
	// NotJudged lists detections the capture could not decide (a timer
	// still running when it ended).
	NotJudged []analysis.NotJudged `json:"not_judged,omitempty" desc:"detections the capture could not decide"`
	// Hints say what to look at next ([] when nothing to say).
	Hints []string `json:"hints" desc:"what to look at next"`
	// Observations are weak signals that are not problems (a private SDP
	// address or a NAT-rewritten source while media flowed).
	Observations []string `json:"observations,omitempty" desc:"observed, not problems"`
}

// TriageMedia is the media half of a triage verdict.
type TriageMedia struct {
	// Problem: any media finding (one-way audio, no media, NAT mismatch,
	// private address, asymmetry, late media, high loss or jitter).
	Problem bool `json:"problem" desc:"any media finding"`
	// Applicable is false when there is no media to judge; Reason says why.
	Applicable bool   `json:"applicable" desc:"there was media to judge"`
	Reason     string `json:"reason,omitempty" desc:"why media was not judged"`
	// OneWayAudio: the call was answered and media flowed one way only.
	OneWayAudio bool `json:"one_way_audio" desc:"media flowed in one direction only"`
	// NATMismatch: media came from an address the SDP did not announce.
	NATMismatch bool `json:"nat_mismatch" desc:"media from an address the SDP did not announce"`
	// NoMedia: SDP negotiated, call answered, no RTP.
	NoMedia bool `json:"no_media" desc:"SDP negotiated and answered but no RTP"`
	// StreamCount counts the RTP streams tied to the call.
	StreamCount int `json:"stream_count" desc:"RTP streams tied to the call"`
	// Hints say what to look at next ([] when nothing to say).
	Hints []string `json:"hints" desc:"what to look at next"`
	// Observations are weak signals that are not problems (a private SDP
	// address or a NAT-rewritten source while media flowed).
	Observations []string `json:"observations,omitempty" desc:"observed, not problems"`
}

var _ = addTool(triageCallTool)

func triageCallTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "triage_call",
		Title: "Triage one call",
		Description: "First look at one call: which side failed (signaling, media, both or none), the diagnosis rules that fired, " +
			"hints, the termination cause. Whole story: get_dialog_report; the messages: get_dialog.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "One call's verdict with its evidence", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
		},
	}, func(ctx context.Context, c *sdk.Call, in triageIn) (Triage, error) {
		out, err := triageCall(d.capture, analysisOptions(d), c, in.CallID)
		if err != nil {
			return Triage{}, err
		}
		return fitTriage(c, out)
	})
}

// mediaOf returns the capture's stream store, or an empty one when the
// engine was built with a custom media sink.
func mediaOf(c *engine.Capture) *media.Store {
	if m := c.Media(); m != nil {
		return m
	}
	return media.NewStore(media.Config{})
}

func triageCall(capture *engine.Capture, opts analysis.Options, c *sdk.Call, callID string) (Triage, error) {
	if callID == "" {
		return Triage{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs or find_problems")
	}
	// Status first, stores after: flags that say the source was read whole
	// describe stores read after the load ended.
	src := answer.SourceState(capture.Status())
	det, ok := capture.Dialogs().Get(callID)
	if !ok {
		return Triage{}, answer.UnknownCall("call_id", callID)
	}
	// Timers are judged against the end of the whole capture, as
	// get_capture_report judges them.
	ms := mediaOf(capture)
	// The run's thresholds (--pdd-threshold) decide as they do for
	// find_problems and get_capture_report.
	opts.CaptureEnd = analysis.CaptureEnd(capture.Dialogs(), ms)
	dd := analysis.Diagnose(analysis.FactsFrom(det), ms, opts)
	out := Triage{
		CallID:          det.CallID,
		Verdict:         dd.Verdict,
		Evidence:        fenceClauses(c, dd.Evidence),
		State:           det.State,
		FinalStatusCode: det.FinalStatusCode,
		Signaling:       TriageSignaling{Hints: []string{}},
		SourceFlags:     src.Flags(),
		CaptureIdentity: src.Identity,
		SchemaVersion:   triageSchemaVersion,
	}
	out.Signaling.NotJudged = dd.NotJudged
	if s := dd.Signaling; s != nil {
		out.Signaling.FinalFailure = s.FinalFailure
		out.Signaling.SlowSetup = s.SlowSetup
		out.Signaling.AuthLoop = s.AuthLoop
		out.Signaling.Retransmissions = s.Retransmissions
		out.Signaling.AckMissing = s.AckMissing
		out.Signaling.Abandoned = s.Abandoned
		out.Signaling.PostDialDelay = s.PostDialDelay
		out.Signaling.RegistrationFailure = s.RegistrationFailure
		out.Signaling.Problem = analysis.ProblemIn(dd.Evidence, analysis.FamilySignaling)
		if s.Hints != nil {
			out.Signaling.Hints = s.Hints
		}
		if ff := out.Signaling.FinalFailure; ff != nil {
			// The reason phrase, Reason and Warning are the sender's text.
			f := *ff
			for _, p := range []*string{&f.Reason, &f.ReasonHeader, &f.Warning} {
				if *p != "" {
					*p = c.Fence(*p)
				}
			}
			out.Signaling.FinalFailure = &f
		}
		if len(s.Retransmissions) > 0 {
			// so is a Via branch
			rs := append([]analysis.UnansweredRequest(nil), s.Retransmissions...)
			for i := range rs {
				if rs[i].Branch != "" {
					rs[i].Branch = c.Fence(rs[i].Branch)
				}
			}
			out.Signaling.Retransmissions = rs
		}
	}
	m := &dd.Media
	out.Media = TriageMedia{
		Problem:     analysis.ProblemIn(dd.Evidence, analysis.FamilyMedia),
		Applicable:  m.Applicable,
		Reason:      m.Reason,
		OneWayAudio: m.OneWayAudio,
		NATMismatch: m.NATMismatch,
		NoMedia:     m.NoMedia,
		StreamCount: m.StreamCount,
		Hints:       m.Hints,

		Observations: m.Observations,
	}
	if out.Media.Hints == nil {
		out.Media.Hints = []string{}
	}
	if t := det.Termination; t != nil {
		term := *t
		if term.Text != "" {
			term.Text = c.Fence(capRunes(term.Text, maxCauseTextChars))
		}
		out.Termination = &term
	}
	return out, nil
}

// fitTriage fits a triage to the byte ceiling: every clause with as many
// message indexes and frame pointers each as fit (the rest counted in
// pointers_omitted); when even none is too much, the leading clauses that
// fit (the rest counted in evidence_omitted). The verdict stays the one
// every clause gave.
func fitTriage(c *sdk.Call, whole Triage) (Triage, error) {
	trim := func(perClause, k int) Triage {
		o := whole
		o.Evidence = make([]analysis.Clause, k)
		for i, cl := range whole.Evidence[:k] {
			if len(cl.Messages) > perClause {
				o.PointersOmitted += len(cl.Messages) - perClause
				cl.Messages = cl.Messages[:perClause:perClause]
			}
			if len(cl.Frames) > perClause {
				o.PointersOmitted += len(cl.Frames) - perClause
				cl.Frames = cl.Frames[:perClause:perClause]
			}
			o.Evidence[i] = cl
		}
		o.EvidenceOmitted = len(whole.Evidence) - k
		return o
	}
	n, most := len(whole.Evidence), 0
	for _, cl := range whole.Evidence {
		most = max(most, len(cl.Messages), len(cl.Frames))
	}
	budget, _ := c.ResponseBudget(0)
	p, err := sdk.FitCount(most, func(p int) (bool, error) {
		size, err := c.WireBytes(trim(p, n))
		return size <= budget, err
	})
	if err != nil {
		return Triage{}, sdk.Internal("sizing triage_call: %v", err)
	}
	if size, _ := c.WireBytes(trim(p, n)); size <= budget {
		return trim(p, n), nil
	}
	k, err := c.FitPage(n, 0, "clause", func(k int) any { return trim(0, k) })
	if err != nil {
		return Triage{}, err
	}
	return trim(0, k), nil
}

// fenceClauses copies clauses with the sender-written facts fenced: the
// codec names of a codec asymmetry (SDP rtpmap text). Every other value is
// a number, sipnab's own word or an address.
func fenceClauses(c *sdk.Call, cs []analysis.Clause) []analysis.Clause {
	out := make([]analysis.Clause, len(cs))
	for i, cl := range cs {
		if cl.Rule == "codec_asymmetry" {
			for _, k := range []string{"forward", "reverse"} {
				if v := cl.Observed[k]; v != "" {
					cl = cl.WithObserved(k, c.Fence(v))
				}
			}
		}
		out[i] = cl
	}
	return out
}

// maxCauseTextChars caps a termination cause text (MAX_CAUSE_TEXT_CHARS):
// past every value a gateway produces, short enough that a crafted header
// cannot spend a context window.
const maxCauseTextChars = 200

// capRunes cuts s to at most n characters.
func capRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
