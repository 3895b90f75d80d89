package core

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/report"
	"github.com/sipnab/sipnab/sdk"
)

// Shared by list_dialogs, find_problems, aggregate_dialogs, search_messages
// and get_dialog: one dialog query layer per provisioned bundle, the page of
// dialog rows, fencing of a row's sender-written values, and the trimming of
// rows to a response size.

// listSchemaVersion is the schema version of the list_dialogs and
// find_problems page.
const listSchemaVersion = 1

// querier returns the capture's dialog query layer, shared with every other
// tool and bundle reading the same store (query.For), so the sorted rows a
// call builds serve the next call while the store does not move.
func querier(d *deps) *query.Querier {
	var src analysis.MediaSource
	if m := d.capture.Media(); m != nil {
		src = m
	}
	return query.For(d.capture.Dialogs(), src, runThresholds(d))
}

// runThresholds are the thresholds the filter aliases expand with: the
// run's (--pdd-threshold, --short-call-threshold, --loss-threshold,
// --jitter-threshold, --retransmit-threshold or [analysis]), which the host
// validated at startup and provides as a filter.Thresholds service.
func runThresholds(d *deps) filter.Thresholds { return d.th }

// analysisOptions are the diagnosis options of the run: its PDD, loss and
// jitter thresholds (slow setup, high_loss, high_jitter), as --report and
// --call-report judge.
func analysisOptions(d *deps) analysis.Options {
	return report.Options{Thresholds: d.th}.Analysis()
}

// dialogCursor parses a list cursor.
func dialogCursor(s string) (*query.Cursor, error) {
	if s == "" {
		return nil, nil
	}
	c, err := query.ParseDialogCursor(s)
	if err != nil {
		return nil, sdk.Refuse(sdk.KindInvalidCursor, "cursor", "%v", err)
	}
	return &c, nil
}

// fencedRow returns a copy of a dialog row with its sender-written values
// fenced (answer.FencedRow).
func fencedRow(c *sdk.Call, r dialog.Summary) dialog.Summary { return answer.FencedRow(c, r) }

// cleanByMethod copies a by_method tally with each method given the
// fence's hygiene (answer.Unfenced); never nil.
func cleanByMethod(in []query.MethodCount) []query.MethodCount {
	out := make([]query.MethodCount, len(in))
	for i, m := range in {
		out[i] = query.MethodCount{Method: answer.Unfenced(m.Method), Count: m.Count}
	}
	return out
}

// DialogPage is the answer of list_dialogs and find_problems.
type DialogPage struct {
	// Dialogs are the page's rows in created_at order (Call-ID breaks ties).
	Dialogs []dialog.Summary `json:"dialogs" nonnull:"true" desc:"dialog rows in created_at order; from_user and to_user fenced"`
	// ByMethod counts every matching dialog by the method that opened it;
	// past query.MaxByMethod methods the rest count as (other).
	ByMethod []query.MethodCount `json:"by_method" nonnull:"true" desc:"every matching dialog counted by opening method, largest first; past 50 methods the rest count as (other)"`
	sdk.Page
}

// dialogPageArgs are the arguments list_dialogs and find_problems share.
type dialogPageArgs struct {
	filter *filter.Filter
	limit  int
	cursor string
	// bind names the arguments that select the rows, name/value pairs: a
	// cursor is bound to them (sdk.Call.BindCursor).
	bind             []string
	fields           []string
	maxResponseBytes int
}

// dialogPage runs a list query and shapes the page: fenced rows, the
// fields projection, rows trimmed to the response ceiling (saying so with
// truncated and next_cursor), the envelope with the source flags read
// before the store.
func dialogPage(ctx context.Context, d *deps, c *sdk.Call, a dialogPageArgs) (DialogPage, error) {
	rows, pg, err := rowsPage(ctx, d, c, a, sdk.FieldNames[dialog.Summary](),
		func(_ *query.Querier, r dialog.Summary) dialog.Summary { return r },
		func(rows []dialog.Summary, bm []query.MethodCount, pg sdk.Page) any {
			return DialogPage{Dialogs: rows, ByMethod: cleanByMethod(bm), Page: pg}
		})
	if err != nil {
		return DialogPage{}, err
	}
	return DialogPage{Dialogs: rows, ByMethod: cleanByMethod(pg.byMethod), Page: pg.page}, nil
}

// pageParts are the envelope parts of a fitted page.
type pageParts struct {
	byMethod []query.MethodCount
	page     sdk.Page
}

// rowsPage runs a list query, makes each fenced row with mk, and fits the
// rows to the response ceiling; shape builds the answer (rows empty) to
// size its envelope. It returns the rows that fit.
func rowsPage[R any](ctx context.Context, d *deps, c *sdk.Call, a dialogPageArgs, names []string,
	mk func(q *query.Querier, r dialog.Summary) R, shape func(rows []R, bm []query.MethodCount, pg sdk.Page) any) ([]R, pageParts, error) {
	if err := c.Project("dialogs", a.fields, names); err != nil {
		return nil, pageParts{}, err
	}
	// Status first, store after: flags that say the source was read whole
	// then describe rows read after the load ended.
	src := answer.SourceState(d.capture.Status())
	pos, err := c.BindCursor(a.cursor, src.Identity.Instance, a.bind...)
	if err != nil {
		return nil, pageParts{}, err
	}
	after, err := dialogCursor(pos)
	if err != nil {
		return nil, pageParts{}, err
	}
	if _, err := c.ResponseBudget(a.maxResponseBytes); err != nil {
		return nil, pageParts{}, err
	}
	q := querier(d)
	p, err := q.List(ctx, query.ListOptions{Filter: a.filter, Order: dialog.ByCreated, After: after, Limit: c.Limit(a.limit)})
	if err != nil {
		return nil, pageParts{}, sdk.Internal("listing dialogs: %v", err)
	}
	plain := make([]dialog.Summary, len(p.Rows))
	rows := make([]R, len(p.Rows))
	for i := range p.Rows {
		plain[i] = fencedRow(c, p.Rows[i])
		rows[i] = mk(q, plain[i])
	}
	parts := func(k int) pageParts {
		more := p.More || k < len(rows)
		last := pos
		if k > 0 {
			last = query.CursorOf(&plain[k-1], dialog.ByCreated)
		}
		last = c.Cursor(last)
		next := ""
		if more && k > 0 {
			next = last
		}
		pg := sdk.NewPage(k, p.TotalMatched, more, next, src, listSchemaVersion)
		pg.ResumeAt(src, last)
		return pageParts{byMethod: p.ByMethod, page: pg}
	}
	k, err := c.FitPage(len(rows), a.maxResponseBytes, "row", func(k int) any {
		pp := parts(k)
		return shape(rows[:k], pp.byMethod, pp.page)
	})
	if err != nil {
		return nil, pageParts{}, err
	}
	return append([]R{}, rows[:k]...), parts(k), nil
}
