package signaling

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/sdk"
)

// tailDialogsSchemaVersion is tail_dialogs' response schema version.
const tailDialogsSchemaVersion = 1

type tailDialogsIn struct {
	Cursor string   `json:"cursor,omitempty" default:"the oldest change" desc:"next_cursor of the previous call; absent: from the oldest change"`
	Limit  int      `json:"limit,omitempty" default:"50" desc:"rows per page (max --mcp-max-rows)"`
	Fields []string `json:"fields,omitempty" desc:"row fields to keep (call_id always kept)"`
}

// TailDialogs is tail_dialogs' answer: the dialogs whose latest message
// came after the cursor, in updated_at order (Call-ID breaking ties). It
// has no returned or total_matched: how many there are is not a question
// a tail can answer while the store changes.
type TailDialogs struct {
	// Dialogs are the changed dialogs (the list_dialogs row), oldest change
	// first; from_user and to_user are fenced.
	Dialogs []dialog.Summary `json:"dialogs" nonnull:"true" desc:"dialogs changed after the cursor, updated_at order"`
	// NextCursor is where to resume: the position of the last row returned
	// (or the cursor given, when nothing changed). It is set on the last
	// page too, because a tail is polled again later; null only when the
	// store held nothing and no cursor was given.
	NextCursor *string `json:"next_cursor" desc:"pass back to get the dialogs changed after this page; set even when nothing more is waiting"`
	// Truncated: more changed dialogs are waiting now. false only once the
	// source is read whole.
	Truncated *bool `json:"truncated,omitempty" desc:"more changed dialogs are waiting now; false only once the source is read whole"`
	sdk.SourceFlags
	// CaptureIdentity names the capture; a new instance voids old cursors.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

func tailDialogsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "tail_dialogs",
		Title: "Dialogs changed since a cursor",
		Description: "Dialogs whose latest message came after the cursor, in updated_at order. Poll with next_cursor " +
			"(always set) to follow a live capture.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "The most recent dialog", Args: map[string]any{"limit": 1}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "a negative limit"},
			{Code: sdk.CodeInvalidParams, When: "a cursor that is malformed, altered, or from another capture or tool"},
			{Code: sdk.CodeInvalidParams, When: "an unknown name in fields (the message lists the valid ones)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in tailDialogsIn) (TailDialogs, error) {
		return tailDialogs(ctx, d, c, in)
	})
}

func tailDialogs(ctx context.Context, d *deps, c *sdk.Call, in tailDialogsIn) (TailDialogs, error) {
	if in.Limit < 0 {
		return TailDialogs{}, sdk.InvalidParams("limit %d: want a positive number, or omit it for %d", in.Limit, sdk.DefaultLimit)
	}
	src := answer.SourceState(d.capture.Status())
	pos, err := c.BindCursor(in.Cursor, src.Identity.Instance)
	if err != nil {
		return TailDialogs{}, err
	}
	var after *query.Cursor
	if pos != "" {
		cur, err := query.ParseDialogCursor(pos)
		if err != nil {
			return TailDialogs{}, sdk.InvalidParams("%v", err)
		}
		after = &cur
	}
	if err := c.Project("dialogs", in.Fields, sdk.FieldNames[dialog.Summary]()); err != nil {
		return TailDialogs{}, err
	}
	p, err := storeQuerier(d).List(ctx, query.ListOptions{Order: dialog.ByUpdated, After: after, Limit: c.Limit(in.Limit)})
	if err != nil {
		return TailDialogs{}, err
	}
	rows := fenceSummaries(c, p.Rows)
	build := func(k int) TailDialogs {
		out := TailDialogs{
			Dialogs:         append([]dialog.Summary{}, rows[:k]...),
			SourceFlags:     src.Flags(),
			CaptureIdentity: src.Identity,
			SchemaVersion:   tailDialogsSchemaVersion,
		}
		switch {
		case k > 0:
			last := &p.Rows[k-1]
			next := c.Cursor(query.DialogCursor(last.UpdatedAt, last.CallID))
			out.NextCursor = &next
		case pos != "":
			next := c.Cursor(pos)
			out.NextCursor = &next
		}
		// The page envelope's rule for truncated: true when more rows
		// wait (past the limit or past the byte budget), false stated
		// only over a source read whole.
		env := sdk.NewPage(k, -1, p.More || k < len(rows), "", src, tailDialogsSchemaVersion)
		out.Truncated = env.Truncated
		return out
	}
	k, err := c.FitPage(len(rows), 0, "row", func(k int) any { return build(k) })
	if err != nil {
		return TailDialogs{}, err
	}
	return build(k), nil
}

// fenceSummaries returns the rows with their sender-written users fenced
// (from_user, to_user) and the method token, shown unfenced, given the
// fence's hygiene (answer.Unfenced), as every dialog row tool does.
func fenceSummaries(c *sdk.Call, rows []dialog.Summary) []dialog.Summary {
	out := make([]dialog.Summary, len(rows))
	for i, r := range rows {
		r.Method = answer.Unfenced(r.Method)
		if r.FromUser != "" {
			r.FromUser = c.Fence(r.FromUser)
		}
		if r.ToUser != "" {
			r.ToUser = c.Fence(r.ToUser)
		}
		out[i] = r
	}
	return out
}
