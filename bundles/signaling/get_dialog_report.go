package signaling

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/callreport"
	"github.com/sipnab/sipnab/core/sdptimeline"
	"github.com/sipnab/sipnab/sdk"
)

type getDialogReportIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	Format string `json:"format,omitempty" default:"json" enum:"json|markdown|text" desc:"json (default), markdown or text"`
}

// DialogReport is get_dialog_report's json answer: the structured per-call
// report (the generator --call-report uses) with the read's flags. The
// sender-written values are fenced (From, To, reason phrases, Reason and
// Warning texts, cause text, codec names) or, for method tokens and
// branches, keep the fence's hygiene without markers (cleanReport).
type DialogReport struct {
	callreport.Report
	// SDPExchangesOmitted and StreamsOmitted count the later SDP
	// exchanges and streams left out to fit the byte ceiling.
	SDPExchangesOmitted int `json:"sdp_exchanges_omitted,omitempty" desc:"SDP exchanges cut by the byte cap"`
	StreamsOmitted      int `json:"streams_omitted,omitempty" desc:"streams cut by the byte cap; rtp_stats has all"`
	sdk.SourceFlags
	// CaptureIdentity names the capture the call is in.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
}

func getDialogReportTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "get_dialog_report",
		Title: "Report on one call",
		Description: "One call's full report: result, parties, timing, diagnosis, SDP timeline, termination, streams; " +
			"markdown/text add transaction chains. Quick verdict: triage_call; message flow: render_ladder.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "One call's report", Args: map[string]any{"call_id": sampleCallID}},
		},
		// markdown/text are documents: no outputSchema.
		Renders: true,
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
		},
	}, func(ctx context.Context, c *sdk.Call, in getDialogReportIn) (DialogReport, error) {
		return getDialogReport(d, c, in)
	})
}

func getDialogReport(d *deps, c *sdk.Call, in getDialogReportIn) (DialogReport, error) {
	capture := d.capture
	if in.CallID == "" {
		return DialogReport{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs or find_problems")
	}
	var f callreport.Format
	switch in.Format {
	case "", "json":
	case "markdown":
		f = callreport.Markdown
	case "text":
		f = callreport.Text
	default:
		return DialogReport{}, sdk.InvalidParams("unknown format %q: want json, markdown or text", in.Format)
	}
	src := answer.SourceState(capture.Status())
	call, ok := callreport.Build(capture, in.CallID, callReportOptions(d))
	if !ok {
		return DialogReport{}, answer.UnknownCall("call_id", in.CallID)
	}
	// The report mixes sipnab's analysis with sender-written text: each
	// value the sender wrote whole is fenced inline, the sentences sipnab
	// writes around sender text (hints, evidence clauses) are sanitized,
	// and the answer carries the provenance note.
	c.MarkFenced()
	if in.Format == "markdown" || in.Format == "text" {
		c.WhenCut("get_dialog pages every message, rtp_stats lists the streams, lint_dialog the findings")
		call.Quote = c.Fence
		c.ReplyText(call.Report(f))
		return DialogReport{}, nil
	}
	whole := cleanReport(c, call.JSON())
	// The SDP timeline and the streams grow with the call: past the byte
	// ceiling the first k of each stay and the rest are counted.
	build := func(k int) DialogReport {
		r := whole
		r.SDPTimeline = whole.SDPTimeline[:min(k, len(whole.SDPTimeline))]
		r.Streams = whole.Streams[:min(k, len(whole.Streams))]
		return DialogReport{Report: r, SDPExchangesOmitted: len(whole.SDPTimeline) - len(r.SDPTimeline),
			StreamsOmitted: len(whole.Streams) - len(r.Streams), SourceFlags: src.Flags(), CaptureIdentity: src.Identity}
	}
	n := max(len(whole.SDPTimeline), len(whole.Streams))
	k, err := c.FitPage(n, 0, "SDP exchange and stream", func(k int) any { return build(k) })
	if err != nil {
		return DialogReport{}, err
	}
	return build(k), nil
}

// cleanReport fences every sender-written value of the JSON report that
// the sender wrote whole: the From/To URIs and display names, the reason
// phrases, the failure's Reason and Warning texts, the cause text, and the
// codec names (SDP, streams, a codec asymmetry), as get_message and
// rtp_stats fence them. Method tokens, transaction labels, Via branches and
// SDP media types and protocols keep the fence's hygiene without markers
// (answer.Unfenced), as on every other surface. Identifiers (Call-ID, frame
// pointers, addresses) stay verbatim, and sipnab's own text (hints, states,
// kinds) is left alone: its sender text is sanitized where the analysis
// writes it, and the answer carries the provenance note. Every list and
// pointer that changes is copied: the model's values are not written.
func cleanReport(c *sdk.Call, r callreport.Report) callreport.Report {
	u, fence := answer.Unfenced, c.Fence
	r.Method, r.FinalStatusReason = u(r.Method), fenceSome(c, r.FinalStatusReason)
	r.From, r.FromDisplay, r.To, r.ToDisplay = fenceSome(c, r.From), fenceSome(c, r.FromDisplay), fenceSome(c, r.To), fenceSome(c, r.ToDisplay)
	if s := r.Diagnosis.Signaling; s != nil {
		sd := *s
		if ff := sd.FinalFailure; ff != nil {
			f := *ff
			f.Reason, f.ReasonHeader, f.Warning, f.Method = fenceSome(c, f.Reason), fenceSome(c, f.ReasonHeader), fenceSome(c, f.Warning), u(f.Method)
			sd.FinalFailure = &f
		}
		if al := sd.AuthLoop; al != nil {
			a := *al
			a.Method = u(a.Method)
			sd.AuthLoop = &a
		}
		if sd.Retransmissions != nil {
			rs := make([]analysis.UnansweredRequest, len(sd.Retransmissions))
			for i, x := range sd.Retransmissions {
				x.Method, x.Branch = u(x.Method), u(x.Branch)
				rs[i] = x
			}
			sd.Retransmissions = rs
		}
		r.Diagnosis.Signaling = &sd
	}
	if len(r.Diagnosis.Evidence) > 0 {
		cs := make([]analysis.Clause, len(r.Diagnosis.Evidence))
		for i, cl := range r.Diagnosis.Evidence {
			if cl.Rule == "codec_asymmetry" {
				for _, k := range []string{"forward", "reverse"} {
					if v := cl.Observed[k]; v != "" {
						cl = cl.WithObserved(k, fence(v))
					}
				}
			}
			cs[i] = cl
		}
		r.Diagnosis.Evidence = cs
	}
	if a := r.Diagnosis.Media.CodecAsymmetry; a != nil {
		r.Diagnosis.Media.CodecAsymmetry = &analysis.Asymmetry{Forward: fence(a.Forward), Reverse: fence(a.Reverse)}
	}
	if t := r.Termination; t != nil {
		tc := *t
		tc.Text = fenceSome(c, tc.Text)
		r.Termination = &tc
	}
	if r.SDPTimeline != nil {
		xs := make([]sdptimeline.Exchange, len(r.SDPTimeline))
		for i, x := range r.SDPTimeline {
			x.Method, x.Transaction, x.Codecs = u(x.Method), u(x.Transaction), answer.FenceAll(c, x.Codecs)
			if x.Streams != nil {
				ss := make([]sdptimeline.Stream, len(x.Streams))
				for j, st := range x.Streams {
					st.Type, st.Proto, st.Codecs = u(st.Type), u(st.Proto), answer.FenceAll(c, st.Codecs)
					ss[j] = st
				}
				x.Streams = ss
			}
			xs[i] = x
		}
		r.SDPTimeline = xs
	}
	if r.Streams != nil {
		ss := make([]callreport.ReportStream, len(r.Streams))
		for i, st := range r.Streams {
			st.Codec = fenceSome(c, st.Codec)
			ss[i] = st
		}
		r.Streams = ss
	}
	return r
}

// fenceSome fences a sender-written value; "" (absent) stays "".
func fenceSome(c *sdk.Call, v string) string {
	if v == "" {
		return ""
	}
	return c.Fence(v)
}
