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
// report (the generator --call-report uses) with the read's flags. From,
// To and the other sender-written values are unfenced (the provenance note
// says so) but keep the fence's hygiene: no fence code point, control or
// bidi character, at most 256 bytes (cleanReport).
type DialogReport struct {
	callreport.Report
	sdk.SourceFlags
	// CaptureIdentity names the capture the call is in.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
}

func getDialogReportTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "get_dialog_report",
		Title: "Report on one call",
		Description: "One call's report: result, parties, timing, diagnosis, SDP timeline, termination, streams. " +
			"markdown/text add transaction chains.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
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
		return DialogReport{}, sdk.InvalidParams("call_id is required: give a Call-ID from list_dialogs or find_problems")
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
	// The report mixes sipnab's analysis with sender-written text: it
	// carries the provenance note, never markers.
	c.MarkFenced()
	if in.Format == "markdown" || in.Format == "text" {
		c.ReplyText(call.Report(f))
		return DialogReport{}, nil
	}
	return DialogReport{Report: cleanReport(call.JSON()), SourceFlags: src.Flags(), CaptureIdentity: src.Identity}, nil
}

// cleanReport gives every sender-written value of the JSON report the
// fence's hygiene without its markers (answer.Unfenced): the report stays
// unfenced (it carries the provenance note, mcp-surface §2.5), but no value
// can forge a marker, reorder a transcript with a bidi control or spend the
// context window. Sender-written: the From/To URIs and display names, the
// reason phrases, the failure's Reason and Warning texts, the cause text,
// method tokens, Via branches, SDP codec names, media types and transport
// protocols, and the codec names of the streams and of a codec asymmetry.
// Identifiers (Call-ID, frame pointers, addresses) stay verbatim, and
// sipnab's own text (hints, states, kinds) is left alone. Every list and
// pointer that changes is copied: the model's values are not written.
func cleanReport(r callreport.Report) callreport.Report {
	u := answer.Unfenced
	r.Method, r.FinalStatusReason = u(r.Method), u(r.FinalStatusReason)
	r.From, r.FromDisplay, r.To, r.ToDisplay = u(r.From), u(r.FromDisplay), u(r.To), u(r.ToDisplay)
	if s := r.Diagnosis.Signaling; s != nil {
		sd := *s
		if ff := sd.FinalFailure; ff != nil {
			f := *ff
			f.Reason, f.ReasonHeader, f.Warning, f.Method = u(f.Reason), u(f.ReasonHeader), u(f.Warning), u(f.Method)
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
						cl = cl.WithObserved(k, u(v))
					}
				}
			}
			cs[i] = cl
		}
		r.Diagnosis.Evidence = cs
	}
	if a := r.Diagnosis.Media.CodecAsymmetry; a != nil {
		r.Diagnosis.Media.CodecAsymmetry = &analysis.Asymmetry{Forward: u(a.Forward), Reverse: u(a.Reverse)}
	}
	if t := r.Termination; t != nil {
		tc := *t
		tc.Text = u(tc.Text)
		r.Termination = &tc
	}
	if r.SDPTimeline != nil {
		xs := make([]sdptimeline.Exchange, len(r.SDPTimeline))
		for i, x := range r.SDPTimeline {
			x.Method, x.Transaction, x.Codecs = u(x.Method), u(x.Transaction), answer.UnfencedAll(x.Codecs)
			if x.Streams != nil {
				ss := make([]sdptimeline.Stream, len(x.Streams))
				for j, st := range x.Streams {
					st.Type, st.Proto, st.Codecs = u(st.Type), u(st.Proto), answer.UnfencedAll(st.Codecs)
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
			st.Codec = u(st.Codec)
			ss[i] = st
		}
		r.Streams = ss
	}
	return r
}
