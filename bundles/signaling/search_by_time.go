package signaling

import (
	"context"
	"strings"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

// searchByTimeSchemaVersion is search_by_time's response schema version.
const searchByTimeSchemaVersion = 1

type searchByTimeIn struct {
	Start  string   `json:"start" desc:"window start, RFC 3339, inclusive"`
	End    string   `json:"end,omitempty" default:"no end" desc:"window end, RFC 3339, exclusive, after start (default: no end)"`
	Filter string   `json:"filter,omitempty" desc:"absent: all dialogs in the window"`
	Limit  int      `json:"limit,omitempty" default:"50" desc:"rows per page (max --mcp-max-rows)"`
	Cursor string   `json:"cursor,omitempty" desc:"next_cursor of the previous page"`
	Fields []string `json:"fields,omitempty" desc:"row fields to keep (call_id always kept)"`
}

// TimeRow is one dialog created in the window.
type TimeRow struct {
	// CallID is the dialog's Call-ID, verbatim.
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// CreatedAt is the time of the dialog's first message.
	CreatedAt time.Time `json:"created_at" desc:"time of the first message"`
	// State is the dialog state.
	State string `json:"state" desc:"dialog state"`
	// FinalStatusCode is the final response to the call's INVITE; absent
	// without one.
	FinalStatusCode int `json:"final_status_code,omitempty" desc:"final response code of the call's INVITE"`
	// Ended is false for an answered call still in progress (InCall, no
	// BYE) when the capture ended; absent otherwise (list_dialogs' row).
	Ended *bool `json:"ended,omitempty" desc:"false: call still in progress (InCall) at capture end"`
	// DurationToCaptureEndMs is such a call's 2xx to the capture's latest
	// packet, SIP or RTP, ms (list_dialogs' row).
	DurationToCaptureEndMs *int64 `json:"duration_to_capture_end_ms,omitempty" desc:"with ended false: 2xx to the capture's last packet (SIP or RTP), ms"`
}

// SearchByTime is search_by_time's answer: a page of the dialogs created in
// [start, end) matching the filter, in created_at order.
type SearchByTime struct {
	// Dialogs are the page's rows.
	Dialogs []TimeRow `json:"dialogs" nonnull:"true" desc:"dialogs created in the window, created_at order"`
	sdk.Page
}

func searchByTimeTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "search_by_time",
		Title: "Dialogs in a time window",
		Description: "list_dialogs within a creation-time window [start, end), oldest first, with total_matched and a cursor. " +
			reference.FilterHelp,
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Dialogs created since a time, one per page", Args: map[string]any{"start": "2000-01-01T00:00:00Z", "limit": 1}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "start or end not an RFC 3339 time"},
			{Code: sdk.CodeInvalidParams, When: "end not after start"},
			{Code: sdk.CodeInvalidParams, When: "a negative limit"},
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (the message gives the position and a caret line)"},
			{Code: sdk.CodeInvalidParams, When: "a cursor that is not this listing's: malformed, altered, or from another capture, tool or filter"},
			{Code: sdk.CodeInvalidParams, When: "an unknown name in fields (the message lists the valid ones)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in searchByTimeIn) (SearchByTime, error) {
		return searchByTime(ctx, d, c, in)
	})
}

func searchByTime(ctx context.Context, d *deps, c *sdk.Call, in searchByTimeIn) (SearchByTime, error) {
	start, err := time.Parse(time.RFC3339Nano, in.Start)
	if err != nil {
		return SearchByTime{}, sdk.InvalidParams("start %q is not an RFC 3339 time (e.g. 2025-03-03T09:00:00Z)", clipTimeArg(in.Start))
	}
	var end time.Time
	if in.End != "" {
		if end, err = time.Parse(time.RFC3339Nano, in.End); err != nil {
			return SearchByTime{}, sdk.InvalidParams("end %q is not an RFC 3339 time (e.g. 2025-03-03T10:00:00Z)", clipTimeArg(in.End))
		}
		if !end.After(start) {
			return SearchByTime{}, sdk.InvalidParams("end %s must be after start %s (end is exclusive)", clipTimeArg(in.End), clipTimeArg(in.Start))
		}
	}
	if in.Limit < 0 {
		return SearchByTime{}, sdk.InvalidParams("limit %d: want a positive number, or omit it for %d", in.Limit, sdk.DefaultLimit)
	}
	src := answer.SourceState(d.capture.Status())
	pos, err := c.BindCursor(in.Cursor, src.Identity.Instance, "start", in.Start, "end", in.End, "filter", in.Filter)
	if err != nil {
		return SearchByTime{}, err
	}
	var after *query.Cursor
	if pos != "" {
		cur, err := query.ParseDialogCursor(pos)
		if err != nil {
			return SearchByTime{}, sdk.InvalidParams("%v", err)
		}
		after = &cur
	}
	if err := c.Project("dialogs", in.Fields, sdk.FieldNames[TimeRow]()); err != nil {
		return SearchByTime{}, err
	}
	q := storeQuerier(d)
	f, err := answer.CompileFilter(q, in.Filter)
	if err != nil {
		return SearchByTime{}, err
	}
	limit := c.Limit(in.Limit)
	p, err := q.Window(ctx, query.WindowOptions{Start: start, End: end, Filter: f, After: after, Limit: limit})
	if err != nil {
		return SearchByTime{}, err
	}
	rows := make([]TimeRow, len(p.Rows))
	for i := range p.Rows {
		r := &p.Rows[i]
		rows[i] = TimeRow{CallID: r.CallID, CreatedAt: r.CreatedAt, State: r.State, FinalStatusCode: r.FinalStatusCode,
			Ended: r.Ended, DurationToCaptureEndMs: r.DurationToCaptureEndMs}
	}
	build := func(k int) SearchByTime {
		out := SearchByTime{Dialogs: append([]TimeRow{}, rows[:k]...)}
		last := pos
		if k > 0 {
			r := &p.Rows[k-1]
			last = query.DialogCursor(r.CreatedAt, r.CallID)
		}
		last = c.Cursor(last)
		more := p.More || k < len(rows)
		next := ""
		if more && k > 0 {
			next = last
		}
		out.Page = sdk.NewPage(k, p.TotalMatched, more, next, src, searchByTimeSchemaVersion)
		out.Page.ResumeAt(src, last)
		return out
	}
	k, err := c.FitPage(len(rows), 0, "row", func(k int) any { return build(k) })
	if err != nil {
		return SearchByTime{}, err
	}
	return build(k), nil
}

// clipArg shortens an echoed argument in an error message.
func clipTimeArg(s string) string {
	if len(s) > 64 {
		return strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}
