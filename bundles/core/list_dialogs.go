package core

import (
	"context"
	"github.com/sipnab/sipnab/bundles/internal/answer"

	"github.com/sipnab/sipnab/sdk"
)

type listDialogsIn struct {
	Filter           string   `json:"filter,omitempty" desc:"filter expression or alias; absent: all dialogs"`
	Limit            int      `json:"limit,omitempty" default:"50" desc:"rows per page (default 50, max --mcp-max-rows)"`
	Cursor           string   `json:"cursor,omitempty" desc:"next_cursor of the previous page"`
	Fields           []string `json:"fields,omitempty" desc:"row fields to keep; call_id always kept"`
	MaxResponseBytes int      `json:"max_response_bytes,omitempty" default:"--mcp-max-response-bytes" desc:"answer byte cap; rows past it wait for next_cursor"`
}

var _ = addTool(listDialogsTool)

func listDialogsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "list_dialogs",
		Title: "List dialogs",
		Description: "Page of dialog rows (created_at order) matching an optional filter, with total_matched and " +
			"by_method over every match. Page with next_cursor; count with aggregate_dialogs, not by tallying rows.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (the message gives the position and a caret line)"},
			{Code: sdk.CodeInvalidParams, When: "a malformed cursor"},
			{Code: sdk.CodeInvalidParams, When: "an unknown name in fields (the message lists the valid ones)"},
			{Code: sdk.CodeInvalidParams, When: "a negative max_response_bytes"},
		},
	}, func(ctx context.Context, c *sdk.Call, in listDialogsIn) (DialogPage, error) {
		f, err := answer.CompileFilter(querier(d), in.Filter)
		if err != nil {
			return DialogPage{}, err
		}
		return dialogPage(ctx, d, c, dialogPageArgs{filter: f, limit: in.Limit, cursor: in.Cursor,
			fields: in.Fields, maxResponseBytes: in.MaxResponseBytes})
	})
}
