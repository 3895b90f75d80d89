package core

import (
	"context"
	"errors"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/sdk"
)

type findProblemsIn struct {
	Kinds            []string `json:"kinds,omitempty" desc:"aliases, OR-ed; absent or []: [problems]"`
	Filter           string   `json:"filter,omitempty" desc:"filter expression AND-ed with kinds"`
	Limit            int      `json:"limit,omitempty" desc:"rows per page (default 50, max --mcp-max-rows)"`
	Cursor           string   `json:"cursor,omitempty" desc:"next_cursor of the previous page"`
	Fields           []string `json:"fields,omitempty" desc:"row fields to keep; call_id always kept"`
	MaxResponseBytes int      `json:"max_response_bytes,omitempty" desc:"answer byte cap; rows past it wait for next_cursor"`
}

var _ = addTool(findProblemsTool)

func findProblemsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "find_problems",
		Title: "Find problem dialogs",
		Description: "list_dialogs page of dialogs matching problem aliases (problems, slow-setup, short-calls, one-way, " +
			"nat-issues, codec-asym, ptime-asym, payload-asym, duration-asym, late-media); by_method exposes keepalives.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
	}, func(ctx context.Context, c *sdk.Call, in findProblemsIn) (DialogPage, error) {
		q := querier(d)
		kinds, err := q.CompileKinds(in.Kinds)
		if err != nil {
			if errors.Is(err, filter.ErrUnknownKind) {
				return DialogPage{}, sdk.InvalidParams("%v", err)
			}
			return DialogPage{}, sdk.Internal("compiling kinds: %v", err)
		}
		f, err := compileFilter(q, in.Filter)
		if err != nil {
			return DialogPage{}, err
		}
		return dialogPage(ctx, d, c, dialogPageArgs{filter: filter.And(kinds, f), limit: in.Limit, cursor: in.Cursor,
			fields: in.Fields, maxResponseBytes: in.MaxResponseBytes})
	})
}
