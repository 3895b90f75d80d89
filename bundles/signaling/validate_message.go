package signaling

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/sdk"
)

type validateMessageIn struct {
	CallID          string `json:"call_id" desc:"Call-ID, verbatim"`
	Index           int    `json:"index" min:"0" desc:"index of the message within the Call-ID (as get_dialog numbers them)"`
	SuppressionFile string `json:"suppression_file,omitempty" default:".sipnablint beside the capture" desc:"suppression list in the file root (needs --mcp-file-root); default: .sipnablint beside the capture"`
}

// ValidateAnswer is validate_message's answer: lint_dialog's shape for one
// message, plus the message's index. The dialog and media rules are listed
// under rules_not_evaluated.
type ValidateAnswer struct {
	LintAnswer
	// MessageIndex is the message linted.
	MessageIndex int `json:"message_index" desc:"index of the message linted"`
}

func validateMessageTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "validate_message",
		Title: "Lint one SIP message",
		Description: "lint_dialog for one message of a call: only rules that read a message alone run; the dialog and media " +
			"rules are listed in rules_not_evaluated. Whole call: lint_dialog.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "RFC findings on one message", Args: map[string]any{"call_id": sampleCallID, "index": 0}},
		},
		Refusals: []sdk.Refusal{
			answer.UnknownCallRefusal,
			{Code: sdk.CodeInvalidParams, When: "an index out of range or past the retention cap"},
			{Code: sdk.CodeInvalidParams, When: "suppression_file without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "a suppression_file that is not one file name, does not exist, resolves outside the file root, or does not parse"},
		},
	}, func(ctx context.Context, c *sdk.Call, in validateMessageIn) (ValidateAnswer, error) {
		supp, err := d.suppression(in.SuppressionFile)
		if err != nil {
			return ValidateAnswer{}, err
		}
		st := d.capture.Status()
		det, streams, err := d.dialog(in.CallID)
		if err != nil {
			return ValidateAnswer{}, err
		}
		if in.Index < 0 || in.Index >= det.MsgCount {
			return ValidateAnswer{}, sdk.InvalidParams("index %d is out of range: the dialog has %d messages (0 to %d)",
				in.Index, det.MsgCount, det.MsgCount-1)
		}
		pos := -1
		for i := range det.Messages {
			if det.Messages[i].Index == in.Index {
				pos = i
				break
			}
		}
		if pos < 0 {
			return ValidateAnswer{}, sdk.InvalidParams("index %d was not retained: the dialog has %d messages and only %d are kept",
				in.Index, det.MsgCount, len(det.Messages))
		}
		sel, _ := lint.Select(nil)
		res := lint.LintMessage(det.Messages[pos], lint.Options{Selection: sel, Suppression: supp})
		out := ValidateAnswer{LintAnswer: lintAnswer(c, in.CallID, sel, lint.Info, supp, res, st), MessageIndex: in.Index}
		out.MessageCount = 1
		out.RTPStreamsObserved = len(streams)
		return out, nil
	})
}
