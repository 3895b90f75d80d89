package signaling

import (
	"context"
	"strings"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/sdk"
)

// lintSchemaVersion is the schema version of lint_dialog's and
// validate_message's answers.
const lintSchemaVersion = 1

type lintDialogIn struct {
	CallID          string   `json:"call_id" desc:"Call-ID, verbatim"`
	Rulesets        []string `json:"rulesets,omitempty" default:"[\"all\"]" desc:"union of: all (default), must, rfc, interop, observation (alias observed), syntax, rfc3261, rfc3262, rfc3264, rfc3551, rfc4028, rfc4566, rfc5761, rfc7989"`
	SeverityMin     string   `json:"severity_min,omitempty" default:"info" enum:"info|notice|warning|error" desc:"lowest severity reported (default info)"`
	SuppressionFile string   `json:"suppression_file,omitempty" default:".sipnablint beside the capture" desc:"suppression list in the file root (needs --mcp-file-root); default: .sipnablint beside the capture, up to the project root"`
}

// LintAnswer is lint_dialog's answer (and validate_message's, with
// message_index). suppressions and findings_withheld are always present,
// zeros included: a missing field and a zero must not read the same.
type LintAnswer struct {
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
	// CallID is the dialog linted, verbatim.
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// Rulesets are the selectors applied (canonical names).
	Rulesets []string `json:"rulesets" nonnull:"true" desc:"selectors applied"`
	// SeverityMin is the lowest severity reported.
	SeverityMin string `json:"severity_min" desc:"lowest severity reported"`
	// MessageCount counts the messages linted.
	MessageCount int `json:"message_count" desc:"messages linted"`
	// MessagesNotRetained counts the dialog's messages past the per-dialog
	// retention cap: never linted. Absent when none.
	MessagesNotRetained int `json:"messages_not_retained,omitempty" desc:"messages past the retention cap, not linted"`
	// RTPStreamsObserved counts the RTP streams attributed to the dialog.
	RTPStreamsObserved int `json:"rtp_streams_observed" desc:"RTP streams attributed to the dialog"`
	// FindingCount counts the findings reported.
	FindingCount int `json:"finding_count" desc:"findings reported"`
	// SeverityCounts counts the reported findings per severity.
	SeverityCounts lint.Counts `json:"severity_counts" desc:"reported findings per severity"`
	// Findings are ordered by message index, then catalogue order.
	Findings []FindingOut `json:"findings" nonnull:"true" desc:"findings, by message index then catalogue order"`
	// FindingsOmitted counts the last findings left out to fit the byte
	// ceiling (finding_count counts them).
	FindingsOmitted int `json:"findings_omitted,omitempty" desc:"findings cut by the byte cap; raise severity_min"`
	// RulesNotEvaluated lists the selected rules that could not run, by reason.
	RulesNotEvaluated []lint.NotEvaluated `json:"rules_not_evaluated" nonnull:"true" desc:"selected rules that did not run, by reason"`
	// FindingsWithheld counts findings raised but not reported.
	FindingsWithheld lint.Withheld `json:"findings_withheld" desc:"suppressed and below_severity exact; capped a lower bound"`
	// Suppressions names the suppression list applied.
	Suppressions Suppressions `json:"suppressions" desc:"suppression list applied"`
	// RuleCatalog identifies the catalogue the findings come from.
	RuleCatalog RuleCatalog `json:"rule_catalog" desc:"catalogue the rules come from"`
	sdk.SourceFlags
}

// FindingOut is one finding as the tools render it.
type FindingOut struct {
	RuleID   string `json:"rule_id" desc:"rule id"`
	Severity string `json:"severity" enum:"error|warning|notice|info" desc:"severity"`
	Basis    string `json:"basis" enum:"must|should|interop|observation" desc:"kind of claim"`
	// RFC and Section cite the requirement: quote them from here.
	RFC     int    `json:"rfc" desc:"RFC number"`
	Section string `json:"section" desc:"RFC section"`
	// MessageIndex is the message the finding was drawn from (for a media
	// finding, the message whose SDP the RTP contradicts).
	MessageIndex int `json:"message_index" desc:"index of the message within the Call-ID"`
	// Observed is what the capture holds, fenced: sender-written text.
	Observed    string `json:"observed" desc:"what the capture holds (fenced)"`
	Expected    string `json:"expected" desc:"what the section calls for"`
	Explanation string `json:"explanation" desc:"why the difference matters"`
	// FrameRef is the evidence pointer of the message; absent when unknown.
	FrameRef string `json:"frame_ref,omitempty" desc:"evidence pointer of the message"`
}

// Suppressions describes the suppression list applied.
type Suppressions struct {
	// File names the list: the path discovered beside the capture, or the
	// suppression_file named; null when none applied.
	File *string `json:"file" desc:"suppression file; null when none"`
	// Patterns are its exact ids and PREFIX* patterns.
	Patterns []string `json:"patterns" desc:"rule ids and PREFIX* patterns"`
	// FindingsSuppressed counts the findings it withheld (exact).
	FindingsSuppressed int `json:"findings_suppressed" desc:"findings withheld by the list"`
}

// RuleCatalog identifies the rule catalogue.
type RuleCatalog struct {
	Version   int    `json:"version" desc:"catalogue version"`
	RuleCount int    `json:"rule_count" desc:"rules in the catalogue"`
	Digest    string `json:"digest" desc:"fingerprint of ids, severities, bases and checks"`
}

func ruleCatalog() RuleCatalog {
	return RuleCatalog{Version: lint.CatalogVersion, RuleCount: lint.RuleCount, Digest: lint.Digest()}
}

func lintDialogTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "lint_dialog",
		Title: "Lint a dialog against the RFCs",
		Description: "RFC conformance findings for one call: SIP message rules, SDP offer/answer rules, and observation rules " +
			"(the SDP against the RTP seen). Quote rfc and section from the findings. rules_not_evaluated lists rules that " +
			"could not run (no RTP, one message): not a pass. One message: validate_message.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "RFC findings on one call", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			answer.UnknownCallRefusal,
			{Code: sdk.CodeInvalidParams, When: "an unknown ruleset"},
			{Code: sdk.CodeInvalidParams, When: "suppression_file without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "a suppression_file that is not one file name, does not exist, resolves outside the file root, or does not parse"},
		},
	}, func(ctx context.Context, c *sdk.Call, in lintDialogIn) (LintAnswer, error) {
		sel, sev, err := lintOptions(in.Rulesets, in.SeverityMin)
		if err != nil {
			return LintAnswer{}, err
		}
		supp, err := d.suppression(in.SuppressionFile)
		if err != nil {
			return LintAnswer{}, err
		}
		st := d.capture.Status()
		det, streams, err := d.dialog(in.CallID)
		if err != nil {
			return LintAnswer{}, err
		}
		res := lint.Lint(lint.Input{Messages: det.Messages, Streams: streams, QualityInterval: d.qualityInterval()},
			lint.Options{Selection: sel, SeverityMin: sev, Suppression: supp})
		out := lintAnswer(c, in.CallID, sel, sev, supp, res, st)
		out.MessageCount = len(det.Messages)
		out.MessagesNotRetained = det.MsgCount - len(det.Messages)
		if out.MessagesNotRetained < 0 {
			out.MessagesNotRetained = 0
		}
		out.RTPStreamsObserved = len(streams)
		// Findings past the byte ceiling are left out (the last ones);
		// finding_count and severity_counts still count them all.
		build := func(k int) LintAnswer {
			o := out
			o.Findings = out.Findings[:k]
			o.FindingsOmitted = len(out.Findings) - k
			return o
		}
		k, err := c.FitPage(len(out.Findings), 0, "finding", func(k int) any { return build(k) })
		if err != nil {
			return LintAnswer{}, err
		}
		return build(k), nil
	})
}

// lintOptions validates the ruleset selectors and the severity floor.
func lintOptions(rulesets []string, severityMin string) (*lint.Selection, lint.Severity, error) {
	sel, err := lint.Select(rulesets)
	if err != nil {
		return nil, 0, sdk.InvalidParams("rulesets: %v", err)
	}
	sev := lint.Info
	if severityMin != "" {
		s, ok := lint.ParseSeverity(severityMin)
		if !ok {
			return nil, 0, sdk.InvalidParams("severity_min: %q is not one of %s", answer.Clip(severityMin), strings.Join(lint.SeverityNames(), ", "))
		}
		sev = s
	}
	return sel, sev, nil
}

// dialog fetches one dialog and the RTP attributed to it; an unknown
// Call-ID is invalid params.
func (d *deps) dialog(callID string) (dialog.Detail, []media.StreamInfo, error) {
	det, ok := d.capture.Dialogs().Get(callID)
	if !ok {
		return dialog.Detail{}, nil, answer.UnknownCall("call_id", callID)
	}
	var streams []media.StreamInfo
	if m := d.capture.Media(); m != nil {
		streams = m.StreamsFor(callID)
	}
	return det, streams, nil
}

func (d *deps) qualityInterval() time.Duration {
	if m := d.capture.Media(); m != nil {
		return m.Config().QualityInterval
	}
	return 0
}

// suppression resolves the suppression list (answer.Suppression: the
// named file inside the file root, or the .sipnablint discovered beside the
// first capture file, up to its project root; nil when none applies).
func (d *deps) suppression(name string) (*lint.Suppression, error) {
	return answer.Suppression(d.root, d.capture, name)
}

// lintAnswer renders an evaluation; observed text is fenced.
func lintAnswer(c *sdk.Call, callID string, sel *lint.Selection, sev lint.Severity, supp *lint.Suppression, res lint.Result, st engine.Status) LintAnswer {
	out := LintAnswer{
		SchemaVersion:     lintSchemaVersion,
		CallID:            callID,
		Rulesets:          append([]string{}, sel.Names...),
		SeverityMin:       sev.String(),
		FindingCount:      len(res.Findings),
		SeverityCounts:    res.Counts,
		Findings:          make([]FindingOut, 0, len(res.Findings)),
		RulesNotEvaluated: res.NotEvaluated,
		FindingsWithheld:  res.Withheld,
		Suppressions:      Suppressions{Patterns: []string{}, FindingsSuppressed: res.Withheld.Suppressed},
		RuleCatalog:       ruleCatalog(),
		SourceFlags:       answer.SourceState(st).Flags(),
	}
	if out.RulesNotEvaluated == nil {
		out.RulesNotEvaluated = []lint.NotEvaluated{}
	}
	if supp != nil {
		f := supp.File
		out.Suppressions.File = &f
		out.Suppressions.Patterns = append(out.Suppressions.Patterns, supp.Patterns...)
	}
	for _, f := range res.Findings {
		out.Findings = append(out.Findings, FindingOut{
			RuleID: f.RuleID, Severity: f.Severity.String(), Basis: string(f.Basis), RFC: f.RFC, Section: f.Section,
			MessageIndex: f.MessageIndex, Observed: c.Fence(f.Observed), Expected: f.Expected,
			Explanation: f.Explanation, FrameRef: f.FrameRef,
		})
	}
	return out
}
