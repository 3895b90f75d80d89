package signaling

import (
	"context"

	"github.com/sipnab/sipnab/core/callreport"
	"github.com/sipnab/sipnab/sdk"
)

type getDialogReportIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	Format string `json:"format,omitempty" enum:"json|markdown|text" desc:"json (default), markdown or text"`
}

// DialogReport is get_dialog_report's json answer: the structured per-call
// report (the generator --call-report uses) with the read's flags. From and
// To are the sender's text, unfenced; the provenance note says so.
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
	src := sourceState(capture.Status())
	call, ok := callreport.Build(capture, in.CallID, callReportOptions(d))
	if !ok {
		return DialogReport{}, sdk.InvalidParams("unknown call_id %q: no dialog with this Call-ID (list_dialogs lists them)", in.CallID)
	}
	// The report mixes sipnab's analysis with sender-written text: it
	// carries the provenance note, never markers.
	c.MarkFenced()
	if in.Format == "markdown" || in.Format == "text" {
		c.ReplyText(call.Report(f))
		return DialogReport{}, nil
	}
	return DialogReport{Report: call.JSON(), SourceFlags: src.Flags(), CaptureIdentity: src.Identity}, nil
}
