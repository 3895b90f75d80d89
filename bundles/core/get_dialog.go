package core

import (
	"context"
	"strings"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/sdk"
)

// getDialogSchemaVersion is get_dialog's response schema version: 2 made
// the cursor an opaque string and added returned, first_index, truncated
// and truncated_by.
const getDialogSchemaVersion = 2

// getDialogDefaultMessages is max_messages when absent.
const getDialogDefaultMessages = 100

// What cut a get_dialog answer short.
const (
	truncatedByMaxMessages = "max_messages"
	truncatedByResponse    = "max_response_bytes"
	truncatedByRetention   = "retention"
)

type getDialogIn struct {
	CallID      string `json:"call_id" desc:"Call-ID, verbatim"`
	MaxMessages int    `json:"max_messages,omitempty" default:"100" clamp:"rows" desc:"messages per page (max --mcp-max-rows)"`
	Cursor      string `json:"cursor,omitempty" desc:"next_cursor of the previous page"`
}

// GetDialogMessage is one SIP message of a dialog: the message shape every
// surface renders (dialog.MessageView) with the sender-written values
// fenced (From, To, Contact, User-Agent, the reason phrase and the SDP) and
// the response's context. Addresses, numbers and identifiers are verbatim.
type GetDialogMessage struct {
	dialog.MessageView
	// ResponseContext says what a response answers: its class and the
	// request method of its transaction ("challenge to REGISTER").
	ResponseContext string `json:"response_context,omitempty" desc:"response class and the method it answers"`
}

// GetDialog is get_dialog's answer.
type GetDialog struct {
	// SchemaVersion of this answer (2).
	SchemaVersion int `json:"schema_version" desc:"response schema version (2)"`
	// Dialog is everything the store knows about the Call-ID: the row, the
	// legs, the full timing, the termination cause. Sender-written values
	// (users, reason phrase, cause text) are fenced.
	Dialog dialog.Detail `json:"dialog" desc:"the dialog: row, legs, timing, termination; sender-written values fenced"`
	// Messages are this page's messages in arrival order.
	Messages []GetDialogMessage `json:"messages" nonnull:"true" desc:"messages in arrival order; sender-written values fenced"`
	// TotalMessages counts every message of the Call-ID, retransmissions
	// included (msg_count), retained or not.
	TotalMessages int `json:"total_messages" desc:"every message of the Call-ID, retained or not"`
	// Returned counts the messages in this page.
	Returned int `json:"returned" desc:"messages in this page"`
	// FirstIndex is the index of the page's first message.
	FirstIndex int `json:"first_index" desc:"index of the first message returned"`
	// Truncated: messages exist past this page. false is omitted until the
	// source is read whole.
	Truncated *bool `json:"truncated,omitempty" desc:"messages exist past this page; false only once the source is read whole"`
	// TruncatedBy says what cut the page: max_messages, max_response_bytes
	// (page on with next_cursor) or retention (messages past the store's
	// per-dialog cap were counted, not kept: no cursor reaches them).
	TruncatedBy string `json:"truncated_by,omitempty" enum:"max_messages|max_response_bytes|retention" desc:"what cut the page"`
	// NextCursor continues with the next message; null on the last page.
	NextCursor *string `json:"next_cursor" desc:"cursor of the next page; null on the last page"`
	// Complete: this answer holds every message of the dialog and the
	// source was read whole. Never true over a partial read.
	Complete bool `json:"complete" desc:"every message of the dialog is here and the source was read whole"`
	sdk.SourceFlags
}

var _ = addTool(getDialogTool)

func getDialogTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "get_dialog",
		Title: "Get one dialog",
		Description: "One dialog's SIP messages as data (addresses, CSeq, fenced headers, SDP), paged by max_messages and cursor; " +
			"total_messages counts all. Who sent what when, drawn: render_ladder.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "One call's messages, at most five", Args: map[string]any{"call_id": sampleCallID, "max_messages": 5}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
			{Code: sdk.CodeInvalidParams, When: "a negative max_messages"},
			{Code: sdk.CodeInvalidParams, When: "a cursor that is malformed, an integer, altered, or from another capture, tool or call_id"},
			{Code: sdk.CodeInvalidParams, When: "one message larger than --mcp-max-response-bytes"},
		},
	}, func(ctx context.Context, c *sdk.Call, in getDialogIn) (GetDialog, error) {
		return getDialog(d, c, in)
	})
}

func getDialog(d *deps, c *sdk.Call, in getDialogIn) (GetDialog, error) {
	if in.CallID == "" {
		return GetDialog{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs or find_problems")
	}
	if in.MaxMessages < 0 {
		return GetDialog{}, sdk.InvalidParams("max_messages must be positive, got %d", in.MaxMessages)
	}
	limit := in.MaxMessages
	if limit == 0 {
		limit = getDialogDefaultMessages
	}
	limit = c.Limit(limit)
	src := answer.SourceState(d.capture.Status())
	det, ok := d.capture.Dialogs().Get(in.CallID)
	if !ok {
		return GetDialog{}, answer.UnknownCall("call_id", in.CallID)
	}
	d.capture.Dialogs().MarkInProgress(&det.Summary, querier(d).CaptureEnd())
	pos, err := c.BindCursor(in.Cursor, src.Identity.Instance, "call_id", in.CallID)
	if err != nil {
		return GetDialog{}, err
	}
	start := 0
	if pos != "" {
		cur, err := query.ParseMessageCursor(pos)
		if err != nil {
			return GetDialog{}, sdk.InvalidParams("%v", err)
		}
		if !cur.HasIndex || cur.CallID != in.CallID {
			return GetDialog{}, sdk.InvalidParams("cursor is not a get_dialog cursor of call_id %q: pass next_cursor of the previous page", in.CallID)
		}
		start = cur.Index + 1
	}
	msgs := det.Messages
	retained := len(msgs)
	det.Messages = nil
	view := fenceDetail(c, det)

	first := min(start, retained)
	end := min(first+limit, retained)
	page := make([]GetDialogMessage, 0, end-first)
	for i := first; i < end; i++ {
		page = append(page, messageView(c, &msgs[i]))
	}
	whole := src.Exhausted && !src.StoppedEarly
	build := func(k int) GetDialog {
		g := GetDialog{
			SchemaVersion: getDialogSchemaVersion,
			Dialog:        view,
			Messages:      append([]GetDialogMessage{}, page[:k]...),
			TotalMessages: det.MsgCount,
			Returned:      k,
			FirstIndex:    first,
			SourceFlags:   src.Flags(),
		}
		last := first + k // index after the last message returned
		switch {
		case last < retained:
			g.TruncatedBy = truncatedByMaxMessages
			if k < end-first {
				g.TruncatedBy = truncatedByResponse
			}
			next := query.MessageCursor(det.CreatedAt, det.CallID, last-1)
			if k == 0 {
				next = pos
			}
			next = c.Cursor(next)
			g.NextCursor = &next
		case retained < det.MsgCount:
			g.TruncatedBy = truncatedByRetention
		}
		if g.TruncatedBy != "" {
			t := true
			g.Truncated = &t
		} else if whole {
			f := false
			g.Truncated = &f
		}
		g.Complete = whole && first == 0 && k == det.MsgCount
		return g
	}
	k, err := c.FitPage(len(page), 0, "message", func(k int) any { return build(k) })
	if err != nil {
		return GetDialog{}, err
	}
	return build(k), nil
}

// fenceDetail fences a dialog detail's sender-written values: the users of
// the row and of each leg, the final reason phrase and the cause text; the
// method tokens (of the row, each leg and each unanswered request), shown
// unfenced, get the fence's hygiene (answer.Unfenced).
func fenceDetail(c *sdk.Call, det dialog.Detail) dialog.Detail {
	det.Summary = fencedRow(c, det.Summary)
	if det.FinalReason != "" {
		det.FinalReason = c.Fence(det.FinalReason)
	}
	if det.RetransmittedNoResponse != nil {
		rs := make([]dialog.Unanswered, len(det.RetransmittedNoResponse))
		for i, r := range det.RetransmittedNoResponse {
			r.Method = answer.Unfenced(r.Method)
			rs[i] = r
		}
		det.RetransmittedNoResponse = rs
	}
	legs := make([]dialog.LegView, len(det.Legs))
	for i, l := range det.Legs {
		l.Method = answer.Unfenced(l.Method)
		if l.FromUser != "" {
			l.FromUser = c.Fence(l.FromUser)
		}
		if l.ToUser != "" {
			l.ToUser = c.Fence(l.ToUser)
		}
		legs[i] = l
	}
	det.Legs = legs
	if det.Termination != nil {
		t := *det.Termination
		if t.Text != "" {
			t.Text = c.Fence(t.Text)
		}
		det.Termination = &t
	}
	return det
}

// messageView shapes one message, fencing what its sender wrote.
func messageView(c *sdk.Call, m *dialog.Message) GetDialogMessage {
	v := GetDialogMessage{MessageView: m.View()}
	fence := func(s *string) {
		if *s != "" {
			*s = c.Fence(*s)
		}
	}
	fence(&v.From)
	fence(&v.To)
	fence(&v.Contact)
	fence(&v.UA)
	fence(&v.Reason)
	if v.SDP != "" {
		v.SDP = c.FenceBody(lfOnly(v.SDP))
	}
	// Method tokens are sender-written, shown unfenced.
	v.Method = answer.Unfenced(v.Method)
	if v.CSeq != nil {
		cs := *v.CSeq
		cs.Method = answer.Unfenced(cs.Method)
		v.CSeq = &cs
	}
	if msg := m.Msg; msg != nil && !msg.IsRequest {
		v.ResponseContext = sip.StatusClass(msg.StatusCode)
		if msg.CSeq.Valid {
			v.ResponseContext += " to " + answer.Unfenced(msg.CSeq.Method)
		}
	}
	return v
}

// lfOnly rewrites CRLF (and lone CR) line endings to LF.
func lfOnly(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}
