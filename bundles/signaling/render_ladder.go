package signaling

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/callreport"
	"github.com/sipnab/sipnab/sdk"
)

type renderLadderIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	Format string `json:"format,omitempty" default:"markdown" enum:"markdown|text" desc:"markdown (default) or text"`
}

// Ladder is render_ladder's answer shape for schemas only: the answer is a
// rendered document (no structuredContent).
type Ladder struct{}

func renderLadderTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "render_ladder",
		Title: "Draw a call's ladder",
		Description: "One call's report, then its ladder diagram: participants by address, arrows, relative times, SDP, RTP, " +
			"correlated legs; sender text fenced. Exact headers: get_dialog.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "A call's ladder diagram", Args: map[string]any{"call_id": sampleCallID}},
		},
		// Always a document: no outputSchema.
		Renders: true,
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
		},
	}, func(ctx context.Context, c *sdk.Call, in renderLadderIn) (Ladder, error) {
		return Ladder{}, renderLadder(d, c, in)
	})
}

func renderLadder(d *deps, c *sdk.Call, in renderLadderIn) error {
	if in.CallID == "" {
		return sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs or find_problems")
	}
	f := callreport.Markdown
	switch in.Format {
	case "", "markdown":
	case "text":
		f = callreport.Text
	default:
		return sdk.InvalidParams("unknown format %q: a ladder is a drawing, want markdown or text (get_dialog_report has json)", in.Format)
	}
	call, ok := callreport.Build(d.capture, in.CallID, callReportOptions(d))
	if !ok {
		return answer.UnknownCall("call_id", in.CallID)
	}
	// The report above the drawing fences each value the sender wrote
	// whole, as get_dialog_report does; the drawing's labels (a reason
	// phrase cut to its column) cannot carry markers and are sanitized
	// only. The answer carries the provenance note. Without the markers
	// the document is --call-report's, byte for byte.
	c.MarkFenced()
	c.WhenCut("get_dialog pages every message (max_messages, cursor)")
	call.Quote = c.Fence
	c.ReplyText(call.CallReport(f))
	return nil
}
