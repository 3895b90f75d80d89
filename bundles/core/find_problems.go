package core

import (
	"context"
	"errors"
	"github.com/sipnab/sipnab/bundles/internal/answer"
	"strings"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

type findProblemsIn struct {
	Kinds            []string `json:"kinds,omitempty" default:"[\"problems\"]" desc:"OR-ed, of problems, slow-setup, short-calls, one-way, nat-issues, codec-asym, ptime-asym, payload-asym, duration-asym, late-media; absent or []: [problems]"`
	Filter           string   `json:"filter,omitempty" desc:"AND-ed with kinds"`
	Limit            int      `json:"limit,omitempty" default:"50" desc:"rows per page (max --mcp-max-rows)"`
	Cursor           string   `json:"cursor,omitempty" desc:"next_cursor of the previous page"`
	Fields           []string `json:"fields,omitempty" desc:"row fields to keep; call_id always kept"`
	MaxResponseBytes int      `json:"max_response_bytes,omitempty" default:"--mcp-max-response-bytes" min:"1" desc:"answer byte cap; rows past it wait for next_cursor"`
}

var _ = addTool(findProblemsTool)

func findProblemsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "find_problems",
		Title: "Find problem dialogs",
		Description: "list_dialogs of the problem aliases in kinds, each row naming the clause it matched and the value; " +
			"by_method shows how many are OPTIONS or REGISTER, not calls. " + reference.FilterHelp,
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Dialogs with a problem, worst first", Args: nil},
			{Title: "Only one-way audio and slow setup", Args: map[string]any{"kinds": []string{"one-way", "slow-setup"}}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an unknown alias in kinds (the message lists the aliases and suggests the nearest)"},
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (the message gives the position and a caret line)"},
			{Code: sdk.CodeInvalidParams, When: "a cursor that is not this listing's: malformed, altered, or from another capture, tool or filter"},
			{Code: sdk.CodeInvalidParams, When: "an unknown name in fields (the message lists the valid ones)"},
			{Code: sdk.CodeInvalidParams, When: "a negative max_response_bytes"},
		},
	}, func(ctx context.Context, c *sdk.Call, in findProblemsIn) (ProblemPage, error) {
		q := querier(d)
		kinds, err := q.CompileKinds(in.Kinds)
		if err != nil {
			if errors.Is(err, filter.ErrUnknownKind) {
				return ProblemPage{}, sdk.InvalidParams("%v", err)
			}
			return ProblemPage{}, sdk.Internal("compiling kinds: %v", err)
		}
		f, err := answer.CompileFilter(q, in.Filter)
		if err != nil {
			return ProblemPage{}, err
		}
		clauses, err := filter.AliasClauses(in.Kinds, q.Thresholds())
		if err != nil {
			return ProblemPage{}, sdk.Internal("splitting kinds: %v", err)
		}
		rows, pg, err := rowsPage(ctx, d, c, dialogPageArgs{filter: filter.And(kinds, f), limit: in.Limit, cursor: in.Cursor,
			bind:   []string{"kinds", boundKinds(in.Kinds), "filter", in.Filter},
			fields: in.Fields, maxResponseBytes: in.MaxResponseBytes}, sdk.FieldNames[ProblemRow](),
			func(q *query.Querier, r dialog.Summary) ProblemRow {
				m := q.Explain(&r, clauses)
				if m == nil {
					m = []query.Matched{}
				}
				return ProblemRow{Summary: r, Matched: m}
			},
			func(rows []ProblemRow, bm []query.MethodCount, pg sdk.Page) any {
				return ProblemPage{Dialogs: rows, ByMethod: bm, Page: pg}
			})
		if err != nil {
			return ProblemPage{}, err
		}
		return ProblemPage{Dialogs: rows, ByMethod: cleanByMethod(pg.byMethod), Page: pg.page}, nil
	})
}

// ProblemRow is a find_problems row: the list_dialogs row and the alias
// clauses it matched, each with the row's measured values.
type ProblemRow struct {
	dialog.Summary
	// Matched are the alias clauses the row matched (at least one: a row
	// is on the page because it matched), each with its measured values.
	Matched []query.Matched `json:"matched" nonnull:"true" desc:"alias clauses matched, with measured values"`
}

// ProblemPage is find_problems' answer.
type ProblemPage struct {
	// Dialogs are the page's rows in created_at order (Call-ID breaks ties).
	Dialogs []ProblemRow `json:"dialogs" nonnull:"true" desc:"dialog rows in created_at order; from_user and to_user fenced"`
	// ByMethod counts every matching dialog by the method that opened it.
	ByMethod []query.MethodCount `json:"by_method" nonnull:"true" desc:"every matching dialog counted by opening method, largest first; past 50 methods the rest count as (other)"`
	sdk.Page
}

// boundKinds is kinds as a cursor binds it: absent or [] is the default
// ["problems"], so either spelling continues the other's listing.
func boundKinds(kinds []string) string {
	if len(kinds) == 0 {
		return "problems"
	}
	return strings.Join(kinds, ",")
}
