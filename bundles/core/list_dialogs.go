package core

import (
	"context"
	"github.com/sipnab/sipnab/bundles/internal/answer"

	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

type listDialogsIn struct {
	Filter           string   `json:"filter,omitempty" desc:"absent: all dialogs"`
	Limit            int      `json:"limit,omitempty" default:"50" desc:"rows per page (max --mcp-max-rows)"`
	Cursor           string   `json:"cursor,omitempty" desc:"next_cursor of the previous page"`
	Fields           []string `json:"fields,omitempty" desc:"row fields to keep; call_id always kept"`
	MaxResponseBytes int      `json:"max_response_bytes,omitempty" default:"--mcp-max-response-bytes" min:"1" desc:"answer byte cap; rows past it wait for next_cursor"`
}

var _ = addTool(listDialogsTool)

func listDialogsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "list_dialogs",
		Title: "List dialogs",
		Description: "Dialog rows matching a filter, oldest first, with total_matched and by_method over every match. " +
			"Counts: aggregate_dialogs; why each is a problem: find_problems. " + reference.FilterHelp,
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "The first page of dialogs, one row", Args: map[string]any{"limit": 1}},
			{Title: "Only the answered INVITE dialogs", Args: map[string]any{"filter": "method == INVITE and final_status_code == 200", "fields": []string{"call_id", "state", "timing"}}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (the message gives the position and a caret line)"},
			{Code: sdk.CodeInvalidParams, When: "a cursor that is not this listing's: malformed, altered, or from another capture, tool or filter"},
			{Code: sdk.CodeInvalidParams, When: "an unknown name in fields (the message lists the valid ones)"},
			{Code: sdk.CodeInvalidParams, When: "a negative max_response_bytes"},
		},
	}, func(ctx context.Context, c *sdk.Call, in listDialogsIn) (DialogPage, error) {
		f, err := answer.CompileFilter(querier(d), in.Filter)
		if err != nil {
			return DialogPage{}, err
		}
		return dialogPage(ctx, d, c, dialogPageArgs{filter: f, limit: in.Limit, cursor: in.Cursor,
			bind: []string{"filter", in.Filter}, fields: in.Fields, maxResponseBytes: in.MaxResponseBytes})
	})
}
