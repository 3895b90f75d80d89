package core

import (
	"context"
	"errors"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/sdk"
)

type findProblemsIn struct {
	Kinds            []string `json:"kinds,omitempty" default:"[\"problems\"]" desc:"aliases, OR-ed; absent or []: [problems]"`
	Filter           string   `json:"filter,omitempty" desc:"filter expression AND-ed with kinds"`
	Limit            int      `json:"limit,omitempty" default:"50" desc:"rows per page (default 50, max --mcp-max-rows)"`
	Cursor           string   `json:"cursor,omitempty" desc:"next_cursor of the previous page"`
	Fields           []string `json:"fields,omitempty" desc:"row fields to keep; call_id always kept"`
	MaxResponseBytes int      `json:"max_response_bytes,omitempty" default:"--mcp-max-response-bytes" desc:"answer byte cap; rows past it wait for next_cursor"`
}

var _ = addTool(findProblemsTool)

func findProblemsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "find_problems",
		Title: "Find problem dialogs",
		Description: "list_dialogs page of dialogs matching problem aliases (problems, slow-setup, short-calls, one-way, " +
			"nat-issues, codec-asym, ptime-asym, payload-asym, duration-asym, late-media); by_method exposes keepalives.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an unknown alias in kinds (the message lists the aliases and suggests the nearest)"},
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (the message gives the position and a caret line)"},
			{Code: sdk.CodeInvalidParams, When: "a malformed cursor"},
			{Code: sdk.CodeInvalidParams, When: "an unknown name in fields (the message lists the valid ones)"},
			{Code: sdk.CodeInvalidParams, When: "a negative max_response_bytes"},
		},
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
