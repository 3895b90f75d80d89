package captures

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/sdk"
)

// findingsSchemaVersion is save_findings' response schema version.
const findingsSchemaVersion = 1

// Bounds of one finding (engine.md §17: summary 500 characters, detail
// 4096), counted in characters (Unicode code points).
const (
	maxSummaryChars = 500
	maxDetailChars  = 4096
	// maxCallIDBytes bounds the call_id recorded (a Call-ID is not checked
	// against the store, so nothing else bounds it).
	maxCallIDBytes = 1024
)

// deliveredTo says where a finding goes: the server's log on stderr, the
// operator's console, never an MCP answer.
const deliveredTo = "server log (stderr): one line, logger sipnab.bundle.captures, message \"agent finding\", the finding as a JSON object in finding="

type saveFindingsIn struct {
	Summary string `json:"summary" desc:"the conclusion, at most 500 characters (longer is cut and says so)"`
	CallID  string `json:"call_id,omitempty" desc:"Call-ID the finding is about (not checked against the capture)"`
	Detail  string `json:"detail,omitempty" desc:"supporting detail, at most 4096 characters (longer is cut and says so)"`
}

// SavedFinding is save_findings' answer.
type SavedFinding struct {
	Seq                   int    `json:"seq" desc:"number of this finding in this server's run, from 1"`
	WrittenAt             string `json:"written_at" desc:"when it was written (RFC 3339, server clock)"`
	SummaryCharsSubmitted int    `json:"summary_chars_submitted" desc:"characters of summary submitted"`
	DetailCharsSubmitted  int    `json:"detail_chars_submitted" desc:"characters of detail submitted"`
	Truncated             bool   `json:"truncated" desc:"summary or detail was cut to its bound"`
	RecordedTotal         int    `json:"recorded_total" desc:"findings recorded in this run"`
	Remaining             int    `json:"remaining" desc:"findings the budget (--mcp-max-findings) still takes"`
	// ReadableOverMCP is always false: nothing on the surface reads a
	// finding back (a dead end by design).
	ReadableOverMCP bool                `json:"readable_over_mcp" desc:"always false: no tool or resource reads findings back"`
	DeliveredTo     string              `json:"delivered_to" desc:"where the finding went"`
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the finding was made on"`
	SchemaVersion   int                 `json:"schema_version" desc:"response schema version"`
}

// findingRecord is the JSON object logged.
type findingRecord struct {
	Seq       int                 `json:"seq"`
	WrittenAt string              `json:"written_at"`
	Summary   string              `json:"summary"`
	CallID    string              `json:"call_id,omitempty"`
	Detail    string              `json:"detail,omitempty"`
	Truncated bool                `json:"truncated"`
	Capture   sdk.CaptureIdentity `json:"capture_identity"`
	Note      string              `json:"note"`
}

func saveFindingsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "save_findings",
		Title: "Record a finding for the operator",
		Description: "Append your conclusion (summary ≤500 chars, optional call_id and detail ≤4096) to the operator's log on the server's stderr. " +
			"A dead end: nothing reads it back over MCP. Needs --mcp-allow-save-findings; refuses past --mcp-max-findings, never discards.",
		Annotations: sdk.Annotations{Effect: sdk.Writes, Idempotency: sdk.NotIdempotent, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples: []sdk.Example{{Title: "Record one conclusion", Args: map[string]any{
			"summary": "Both calls set up and carried two-way G.711 audio; nothing to escalate.", "call_id": "1-1966@10.0.2.20"}}},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --mcp-allow-save-findings (not_enabled)"},
			{Code: sdk.CodeInvalidParams, When: "an empty summary"},
			{Code: sdk.CodeInvalidParams, When: "--mcp-max-findings findings already recorded: refused, nothing discarded"},
			{Code: sdk.CodeInvalidParams, When: "the server's log level hides warnings, so the finding would reach nobody"},
		},
	}, func(ctx context.Context, c *sdk.Call, in saveFindingsIn) (SavedFinding, error) {
		return saveFindings(ctx, d, in, time.Now())
	})
}

func saveFindings(ctx context.Context, d *deps, in saveFindingsIn, now time.Time) (SavedFinding, error) {
	if !d.allowFindings {
		return SavedFinding{}, sdk.NotEnabled("", "save_findings is disabled: this server was started without --"+OptSaveFindings)
	}
	if strings.TrimSpace(in.Summary) == "" {
		return SavedFinding{}, sdk.Refuse(sdk.KindInvalidArgument, "summary", "summary is empty: state the conclusion")
	}
	if !d.log.Enabled(ctx, slog.LevelWarn) {
		return SavedFinding{}, sdk.Refuse(sdk.KindNotEnabled, "", "the server's log level hides warnings: a finding written there would reach nobody, so none is recorded")
	}
	summary, cutS := cutChars(in.Summary, maxSummaryChars)
	detail, cutD := cutChars(in.Detail, maxDetailChars)
	callID := in.CallID
	cutC := false
	if len(callID) > maxCallIDBytes {
		callID, cutC = answer.Clip(callID[:maxCallIDBytes]), true
	}
	id := answer.Identity(d.capture.Identity())
	d.findingsMu.Lock()
	defer d.findingsMu.Unlock()
	if d.findings >= d.maxFindings {
		return SavedFinding{}, sdk.Refuse(sdk.KindInvalidArgument, "", "the findings budget is spent: %d of %d recorded (--mcp-max-findings); this one is refused, nothing was discarded", d.findings, d.maxFindings)
	}
	seq := d.findings + 1
	at := now.UTC().Format(time.RFC3339Nano)
	rec := findingRecord{Seq: seq, WrittenAt: at, Summary: summary, CallID: callID, Detail: detail, Truncated: cutS || cutD || cutC,
		Capture: id, Note: "written by an MCP agent through save_findings: the agent's claim, not sipnab's analysis"}
	line, err := asciiJSON(rec)
	if err != nil {
		return SavedFinding{}, sdk.Internal("save_findings: %v", err)
	}
	d.log.Warn("agent finding", "finding", line)
	d.findings = seq
	return SavedFinding{
		Seq: seq, WrittenAt: at, SummaryCharsSubmitted: utf8.RuneCountInString(in.Summary), DetailCharsSubmitted: utf8.RuneCountInString(in.Detail),
		Truncated: rec.Truncated, RecordedTotal: seq, Remaining: d.maxFindings - seq, ReadableOverMCP: false, DeliveredTo: deliveredTo,
		CaptureIdentity: id, SchemaVersion: findingsSchemaVersion,
	}, nil
}

// cutChars cuts s to max characters; true when it cut.
func cutChars(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i], true
		}
		n++
	}
	return s, false
}

// asciiJSON encodes v as one line of ASCII JSON: every character outside
// printable ASCII (controls, terminal escapes, bidi and other format
// characters, any non-ASCII letter) is a \u escape, so a finding can
// neither break the log line nor restyle or reorder the operator's
// terminal.
func asciiJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, r := range string(b) {
		switch {
		case r >= 0x20 && r < 0x7f:
			sb.WriteRune(r)
		case r > 0xffff:
			r1, r2 := surrogates(r)
			fmt.Fprintf(&sb, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
	}
	return sb.String(), nil
}

// surrogates splits a rune above U+FFFF into its UTF-16 pair (JSON's
// escape of such a character, RFC 8259 §7).
func surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
