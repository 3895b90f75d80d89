package core

import (
	"context"
	"errors"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/sdk"
)

// searchSchemaVersion is search_messages' response schema version.
const searchSchemaVersion = 1

type searchMessagesIn struct {
	Query            string `json:"query" desc:"text to find, case-insensitive"`
	Limit            int    `json:"limit,omitempty" default:"50" desc:"hits per page (max --mcp-max-rows)"`
	Cursor           string `json:"cursor,omitempty" desc:"next_cursor of the previous page"`
	MaxResponseBytes int    `json:"max_response_bytes,omitempty" default:"--mcp-max-response-bytes" min:"1" desc:"answer byte cap; hits past it wait for next_cursor"`
}

// SearchHit is one message containing the query.
type SearchHit struct {
	// CallID is the message's dialog.
	CallID string `json:"call_id" desc:"Call-ID of the message's dialog"`
	// MessageIndex is the message's 0-based index in its dialog (get_dialog,
	// get_message).
	MessageIndex int `json:"message_index" desc:"0-based message index in the dialog"`
	// Part says where the query was found first: method, from, to, ua or body.
	Part string `json:"part" enum:"method|from|to|ua|body" desc:"where the query was found"`
	// Snippet is the text around the match, fenced, at most
	// --mcp-max-body-bytes.
	Snippet string `json:"snippet" desc:"text around the match, fenced, at most --mcp-max-body-bytes"`
}

// SearchMessages is search_messages' answer.
type SearchMessages struct {
	// Hits are the page's hits in (created_at, Call-ID, message index)
	// order; each message is one hit at most.
	Hits []SearchHit `json:"hits" nonnull:"true" desc:"hits in created_at, Call-ID, message index order"`
	// MessagesSearched counts the retained messages looked at.
	MessagesSearched int `json:"messages_searched" desc:"retained messages searched"`
	sdk.Page
}

var _ = addTool(searchMessagesTool)

func searchMessagesTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "search_messages",
		Title: "Search SIP messages",
		Description: "Finds a substring (case-insensitive) in the method, From, To, User-Agent and body of every " +
			"retained SIP message; one hit per message with a fenced snippet.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "SIP messages carrying INVITE", Args: map[string]any{"query": "INVITE", "limit": 2}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty query or one over the query size limit"},
			{Code: sdk.CodeInvalidParams, When: "a cursor that is not this search's: malformed, altered, or from another capture, tool or query"},
			{Code: sdk.CodeInvalidParams, When: "a max_response_bytes too small for one hit"},
		},
	}, func(ctx context.Context, c *sdk.Call, in searchMessagesIn) (SearchMessages, error) {
		src := answer.SourceState(d.capture.Status())
		pos, err := c.BindCursor(in.Cursor, src.Identity.Instance, "query", in.Query)
		if err != nil {
			return SearchMessages{}, err
		}
		var after *query.Cursor
		if pos != "" {
			cur, err := query.ParseMessageCursor(pos)
			if err != nil {
				return SearchMessages{}, sdk.InvalidParams("%v", err)
			}
			after = &cur
		}
		if _, err := c.ResponseBudget(in.MaxResponseBytes); err != nil {
			return SearchMessages{}, err
		}
		p, err := querier(d).Search(ctx, query.SearchOptions{Query: in.Query, After: after, Limit: c.Limit(in.Limit),
			SnippetBytes: c.Limits().MaxBodyBytes})
		if errors.Is(err, query.ErrQuery) {
			return SearchMessages{}, sdk.InvalidParams("query must be 1 to %d bytes, got %d", query.MaxQueryBytes, len(in.Query))
		}
		if err != nil {
			return SearchMessages{}, sdk.Internal("searching messages: %v", err)
		}
		hits := make([]SearchHit, len(p.Hits))
		for i, h := range p.Hits {
			hits[i] = SearchHit{CallID: h.CallID, MessageIndex: h.Index, Part: h.Part, Snippet: c.FenceBody(h.Snippet)}
		}
		page := func(k int) SearchMessages {
			more := p.More || k < len(hits)
			last := pos
			if k > 0 {
				last = p.Hits[k-1].Cursor()
			}
			last = c.Cursor(last)
			next := ""
			if more && k > 0 {
				next = last
			}
			pg := sdk.NewPage(k, p.TotalMatched, more, next, src, searchSchemaVersion)
			pg.ResumeAt(src, last)
			return SearchMessages{Hits: append([]SearchHit{}, hits[:k]...), MessagesSearched: p.MessagesSearched, Page: pg}
		}
		k, err := c.FitPage(len(hits), in.MaxResponseBytes, "hit", func(k int) any { return page(k) })
		if err != nil {
			return SearchMessages{}, err
		}
		out := page(k)
		return out, nil
	})
}
