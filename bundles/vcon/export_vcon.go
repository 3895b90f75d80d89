package vcon

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/core/vcon"
	"github.com/sipnab/sipnab/sdk"
)

// exportSchemaVersion is export_vcon's response schema version.
const exportSchemaVersion = 1

type exportVConIn struct {
	CallID string `json:"call_id,omitempty" desc:"one dialog's Call-ID, verbatim; not with filter"`
	Filter string `json:"filter,omitempty" desc:"filter expression or alias choosing the dialogs; not with call_id; neither: every dialog"`
	Limit  int    `json:"limit,omitempty" default:"50" desc:"containers per page (1..--mcp-max-rows)"`
	Cursor string `json:"cursor,omitempty" desc:"next_cursor of the previous page"`
	Media  string `json:"media,omitempty" enum:"omit" desc:"omit: leave the call audio out; absent: an answered call's retained audio (--retain-audio) is inlined as a WAV up to --vcon-max-inline-media"`
}

// ExportedContainer is one dialog's container with its digest and caveat.
type ExportedContainer struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// Digest is the SHA-256 of the container's canonical bytes
	// (vcon.Built.Canonical): compact JSON, every object's members sorted
	// by name, Go encoding/json's escaping. That is exactly how this
	// answer's text writes the container member, so a consumer can hash
	// what it received.
	Digest string `json:"digest" desc:"sha256 (hex) of the container's canonical bytes: compact JSON, object members sorted by name, encoding/json escaping (<, >, & as \\u escapes), as this answer's text writes it"`
	// Completeness is the caveat the container carries in its analysis
	// object and its sipnab-capture-completeness attachment, repeated.
	Completeness vcon.Completeness `json:"completeness" desc:"the caveat written into the container's analysis and attachment, repeated: a container without audio looks like a conversation that had none"`
	// Container is the vCon (draft-ietf-vcon-vcon-core-04, syntax 0.4.0);
	// validate_vcon checks it against the vendored schema.
	Container sdk.Object `json:"container" desc:"the vCon observer container (syntax 0.4.0, unsigned); its SIP trace is capture bytes, base64url"`
}

// ExportVCon is export_vcon's answer.
type ExportVCon struct {
	Containers []ExportedContainer `json:"containers" nonnull:"true" desc:"one container per dialog, oldest first; empty: no dialog matched"`
	sdk.Page
}

func exportVConTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "export_vcon",
		Title: "Export dialogs as vCon containers",
		Description: "Dialogs as draft-ietf-vcon-vcon-core observer containers (syntax 0.4.0, UUIDv8, unsigned), inline: " +
			"parties from From/To, the SIP messages as a sip-message-trace attachment, an answered call's retained audio (--retain-audio) " +
			"as a WAV up to --vcon-max-inline-media, and one completeness caveat " +
			"(in the container and the answer). call_id for one dialog or filter for a set, not both; a filter matching nothing is an empty set. " +
			"Check a container: validate_vcon. " + reference.FilterHelp,
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "One call's container, its audio left out", Args: map[string]any{"call_id": sampleCallID, "media": "omit"}},
			{Title: "Every call answered 400 or above, five at a time", Args: map[string]any{"filter": "final_status_code >= 400", "limit": 5}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "call_id and filter together (a dialog and a rule for choosing dialogs name two answers)"},
			answer.UnknownCallRefusal,
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (the message gives the position and a caret line)"},
			{Code: sdk.CodeInvalidParams, When: "a cursor that is not this listing's: malformed, altered, or from another capture, tool, call_id or filter"},
			{Code: sdk.CodeInvalidParams, When: "one container larger than --mcp-max-response-bytes"},
		},
	}, func(ctx context.Context, c *sdk.Call, in exportVConIn) (ExportVCon, error) {
		return exportVCon(ctx, d, c, in)
	})
}

func exportVCon(ctx context.Context, d *deps, c *sdk.Call, in exportVConIn) (ExportVCon, error) {
	if in.CallID != "" && in.Filter != "" {
		return ExportVCon{}, sdk.InvalidParams("give call_id or filter, not both: a dialog and a rule for choosing dialogs name two answers")
	}
	// Status first, store after: flags that say the source was read whole
	// then describe dialogs read after the load ended.
	st := d.capture.Status()
	src := answer.SourceState(st)
	pos, err := c.BindCursor(in.Cursor, src.Identity.Instance, "call_id", in.CallID, "filter", in.Filter)
	if err != nil {
		return ExportVCon{}, err
	}
	// The container's SIP trace is sender-written bytes, base64url
	// (core/vcon TraceMessage): never in the clear, never fenced (a marker
	// inside it would alter the record and its digest). Parties' URIs
	// are identifiers (verbatim, like a Call-ID). The provenance note says
	// the container came off the wire.
	c.MarkFenced()
	budget, err := c.ResponseBudget(0)
	if err != nil {
		return ExportVCon{}, err
	}
	if in.CallID != "" {
		det, ok := d.capture.Dialogs().Get(in.CallID)
		if !ok {
			return ExportVCon{}, answer.UnknownCall("call_id", in.CallID)
		}
		row, err := d.container(det, st, in.Media, budget)
		if err != nil {
			return ExportVCon{}, err
		}
		rows := []ExportedContainer{row}
		k, err := c.FitPage(1, 0, "container", func(k int) any {
			return ExportVCon{Containers: rows[:k], Page: sdk.NewPage(k, 1, false, "", src, exportSchemaVersion)}
		})
		if err != nil {
			return ExportVCon{}, err
		}
		return ExportVCon{Containers: rows[:k], Page: sdk.NewPage(k, 1, false, "", src, exportSchemaVersion)}, nil
	}
	q := d.querier()
	f, err := answer.CompileFilter(q, in.Filter)
	if err != nil {
		return ExportVCon{}, err
	}
	var after *query.Cursor
	if pos != "" {
		cur, err := query.ParseDialogCursor(pos)
		if err != nil {
			return ExportVCon{}, sdk.Refuse(sdk.KindInvalidCursor, "cursor", "%v", err)
		}
		after = &cur
	}
	p, err := q.List(ctx, query.ListOptions{Filter: f, Order: dialog.ByCreated, After: after, Limit: c.Limit(in.Limit)})
	if err != nil {
		return ExportVCon{}, sdk.Internal("listing dialogs: %v", err)
	}
	rows := make([]ExportedContainer, 0, len(p.Rows))
	keys := make([]string, 0, len(p.Rows))
	for i := range p.Rows {
		if err := ctx.Err(); err != nil {
			return ExportVCon{}, err
		}
		det, ok := d.capture.Dialogs().Get(p.Rows[i].CallID)
		if !ok {
			// Evicted between the listing and now: the page says so by
			// holding one container fewer than it listed, and the
			// container account's dialogs_evicted counts it.
			continue
		}
		row, err := d.container(det, st, in.Media, budget)
		if err != nil {
			return ExportVCon{}, err
		}
		rows = append(rows, row)
		keys = append(keys, query.CursorOf(&p.Rows[i], dialog.ByCreated))
	}
	page := func(k int) sdk.Page {
		more := p.More || k < len(rows)
		last := pos
		if k > 0 {
			last = keys[k-1]
		}
		last = c.Cursor(last)
		next := ""
		if more && k > 0 {
			next = last
		}
		pg := sdk.NewPage(k, p.TotalMatched, more, next, src, exportSchemaVersion)
		pg.ResumeAt(src, last)
		return pg
	}
	k, err := c.FitPage(len(rows), 0, "container", func(k int) any {
		return ExportVCon{Containers: rows[:k], Page: page(k)}
	})
	if err != nil {
		return ExportVCon{}, err
	}
	return ExportVCon{Containers: rows[:k], Page: page(k)}, nil
}

// container builds one dialog's container.
// responseBudget, when set, is the answer's byte ceiling: a WAV that
// would not fit it with its container is refused (media
// refused-over-budget), not inlined into an answer that cannot be sent.
func (d *deps) container(det dialog.Detail, st engine.Status, media string, responseBudget int) (ExportedContainer, error) {
	in := vcon.Input{Detail: det, Status: st, MediaOmitted: media == "omit",
		MaxInlineMedia: d.opts.MaxInlineMedia, ResponseBudget: int64(responseBudget)}
	if m := d.capture.Media(); m != nil {
		in.MediaStore = true
		in.RetainAudio = m.Config().RetainAudio
		in.StreamsOfCall = len(m.StreamsFor(det.CallID))
		if in.RetainAudio && !in.MediaOmitted {
			in.Audio = m.AudioFor(det.CallID)
		}
	}
	b, err := vcon.Build(in)
	if err != nil {
		return ExportedContainer{}, sdk.Internal("building the container of %s: %v", det.CallID, err)
	}
	obj, err := vcon.Decoded(b.Canonical)
	if err != nil {
		return ExportedContainer{}, sdk.Internal("reading back the container of %s: %v", det.CallID, err)
	}
	return ExportedContainer{CallID: det.CallID, Digest: b.Digest, Completeness: b.Completeness, Container: obj}, nil
}
