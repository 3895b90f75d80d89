package security

import (
	"context"
	"net/netip"
	"slices"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/detect"
	"github.com/sipnab/sipnab/sdk"
)

// securityFindingsSchemaVersion is security_findings' response schema
// version.
const securityFindingsSchemaVersion = 1

type securityFindingsIn struct {
	Kinds []string `json:"kinds,omitempty" desc:"detectors: scanner, fraud, digest, reg_flood; absent: all"`
	Since string   `json:"since,omitempty" desc:"RFC 3339 time: findings strictly after it"`
	Limit int      `json:"limit,omitempty" default:"50" desc:"rows; 0 means 50, clamped to --mcp-max-rows"`
}

// SecurityFindings is security_findings' answer.
type SecurityFindings struct {
	// Findings are newest first (timestamp, then rule and address).
	Findings     []FindingRow `json:"findings" nonnull:"true" desc:"newest first"`
	Returned     int          `json:"returned" desc:"rows returned"`
	TotalMatched int          `json:"total_matched" desc:"held findings matching"`
	// Truncated: more findings matched than returned (no cursor: narrow
	// with since or kinds); false only once the source was read whole.
	Truncated *bool `json:"truncated,omitempty" desc:"more matched than returned (no cursor: narrow with since); false only once the source is read whole"`
	// ArmedKinds lists the detectors armed; DetectionArmed is false when
	// none was, and an empty list then means nothing was watching.
	ArmedKinds     []string `json:"armed_kinds" nonnull:"true" desc:"detectors armed"`
	DetectionArmed bool     `json:"detection_armed" desc:"a detector was armed and running"`
	Note           string   `json:"note,omitempty" desc:"why the list may be empty or partial"`
	// ObservationGaps are the rules' blind spots beside the findings.
	ObservationGaps []ObservationGap `json:"observation_gaps" nonnull:"true" desc:"per rule: requests never answered, which the rule could not judge"`
	sdk.SourceFlags
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	SchemaVersion   int                 `json:"schema_version" desc:"response schema version"`
}

func securityFindingsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "security_findings",
		Title: "Security findings",
		Description: "What the armed detectors (--detect-scanner, --reg-flood, --digest-leak, --fraud-detect) recorded, newest first, " +
			"with each rule's blind spots. detection_armed false: nothing was watching.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Every finding held"},
			{Title: "Scanners and registration floods since a time", Args: map[string]any{"kinds": []string{"scanner", "reg_flood"}, "since": "2006-01-02T15:04:05Z"}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "a kind outside scanner, fraud, digest, reg_flood (the message lists them; reg-flood gets a suggestion of reg_flood)"},
			{Code: sdk.CodeInvalidParams, When: "since that is not an RFC 3339 time"},
		},
	}, func(ctx context.Context, c *sdk.Call, in securityFindingsIn) (SecurityFindings, error) {
		return securityFindings(d, c, in)
	})
}

func securityFindings(d *deps, c *sdk.Call, in securityFindingsIn) (SecurityFindings, error) {
	kinds, err := detectorKinds(in.Kinds)
	if err != nil {
		return SecurityFindings{}, err
	}
	var since time.Time
	if in.Since != "" {
		if since, err = time.Parse(time.RFC3339Nano, in.Since); err != nil {
			return SecurityFindings{}, sdk.Refuse(sdk.KindInvalidArgument, "since", "since %q is not an RFC 3339 time (2006-01-02T15:04:05Z)", clipArg(in.Since))
		}
	}
	limit := c.Limit(in.Limit)
	// Status first, findings after: flags that say the source was read
	// whole describe findings read after the load ended.
	src := answer.SourceState(d.capture.Status())
	det := d.capture.Detector()
	matched := selectFindings(det.Findings(), kinds, since, netip.Addr{})
	armed := det.Armed()
	out := SecurityFindings{
		Findings: []FindingRow{}, TotalMatched: len(matched), ArmedKinds: append([]string{}, armed...),
		DetectionArmed: len(armed) > 0 && det.Disabled() == "", Note: armedNote(det, kinds),
		ObservationGaps: []ObservationGap{}, SourceFlags: src.Flags(), CaptureIdentity: src.Identity,
		SchemaVersion: securityFindingsSchemaVersion,
	}
	for _, g := range det.Gaps() {
		if len(kinds) > 0 && !slices.Contains(kinds, detect.KindOf(g.Rule)) {
			continue
		}
		out.ObservationGaps = append(out.ObservationGaps, ObservationGap{RuleName: g.Rule, Reason: g.Reason, Seen: g.Seen, Unestablished: g.Unestablished, Detail: g.Detail})
	}
	for i := 0; i < len(matched) && i < limit; i++ {
		out.Findings = append(out.Findings, findingRow(c, matched[i]))
	}
	rows := out.Findings
	build := func(k int) any {
		o := out
		o.Findings = rows[:k]
		o.Returned = k
		o.Truncated = sdk.NewPage(k, -1, len(matched) > k, "", src, 0).Truncated
		return o
	}
	k, err := c.FitPage(len(rows), 0, "finding", build)
	if err != nil {
		return SecurityFindings{}, err
	}
	return build(k).(SecurityFindings), nil
}
