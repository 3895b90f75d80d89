package signaling

import (
	"context"
	"strings"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/sdk"
)

// getMessageSchemaVersion is the version of one message's shape, the same
// as get_dialog's messages[].
const getMessageSchemaVersion = 1

type getMessageIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	Index  int    `json:"index" min:"0" desc:"message index, from 0 (get_dialog messages[].index)"`
}

// MessageCSeq is a message's CSeq.
type MessageCSeq struct {
	Method string `json:"method" desc:"CSeq method"`
	Number uint32 `json:"number" desc:"CSeq number"`
}

// Message is get_message's answer: one SIP message in the shape of
// get_dialog's messages[] (header fields and the SDP fenced; addresses,
// numbers and identifiers verbatim), plus every other header line.
type Message struct {
	// Index is the message's 0-based index in the dialog.
	Index  int    `json:"index" desc:"0-based index in the dialog"`
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// IsRequest tells a request from a response.
	IsRequest bool         `json:"is_request" desc:"request (true) or response"`
	CSeq      *MessageCSeq `json:"cseq,omitempty" desc:"CSeq; absent when missing or unreadable"`
	// From and To are the header values, fenced.
	From string `json:"from,omitempty" desc:"From header value, fenced"`
	To   string `json:"to,omitempty" desc:"To header value, fenced"`
	// Src, Dst and their ports say where the message went.
	Src     string `json:"src" desc:"source address"`
	SrcPort int    `json:"src_port" desc:"source port"`
	Dst     string `json:"dst" desc:"destination address"`
	DstPort int    `json:"dst_port" desc:"destination port"`
	// Transport is UDP, TCP, SCTP, TLS, WS or WSS.
	Transport string `json:"transport,omitempty" desc:"UDP, TCP, SCTP, TLS, WS, WSS"`
	// Timestamp is the capture time.
	Timestamp time.Time `json:"timestamp" desc:"capture time"`
	// Frame is the evidence pointer of the frame the message came from.
	Frame string `json:"frame,omitempty" desc:"evidence pointer <source>#<ordinal>@<digest>"`
	// Retransmission: the message repeats an earlier one of the dialog.
	Retransmission bool `json:"retransmission,omitempty" desc:"repeats an earlier message"`
	// DSCP is the IP DSCP marking; absent when not seen.
	DSCP *uint8 `json:"dscp,omitempty" desc:"IP DSCP marking"`
	// InputOrigin says how the message reached sipnab.
	InputOrigin string `json:"input_origin,omitempty" enum:"wire|hep|uprobe" desc:"how the message reached sipnab"`
	// Method is a request's method.
	Method string `json:"method,omitempty" desc:"request method"`
	// Contact is the Contact header value, fenced.
	Contact string `json:"contact,omitempty" desc:"Contact header value, fenced"`
	// SDP is the message's SDP with \n line endings, fenced.
	SDP string `json:"sdp,omitempty" desc:"SDP body, \\n line endings, fenced"`
	// StatusCode and Reason are a response's status.
	StatusCode int    `json:"status_code,omitempty" desc:"response status code"`
	Reason     string `json:"reason,omitempty" desc:"response reason phrase, fenced"`
	// ResponseContext says what the response is to: its class and the
	// request method it answers ("challenge to REGISTER").
	ResponseContext string `json:"response_context,omitempty" desc:"response class and the method it answers"`
	// UA is the User-Agent (Server on a response without one), fenced.
	UA string `json:"ua,omitempty" desc:"User-Agent, or Server on a response, fenced"`
	// SchemaVersion of this message shape.
	SchemaVersion int `json:"schema_version" desc:"message shape version"`
	// ExtensionHeaders are the message's other header lines, whole
	// ("Name: value", unfolded), fenced, in wire order: every header but
	// Call-ID, From, To, Contact, User-Agent and CSeq, which the fields
	// above carry. The parser's limits bound them (200 headers, 8 KiB a
	// line); each line is cut at 256 bytes like every fenced field.
	ExtensionHeaders []string `json:"extension_headers" nonnull:"true" desc:"other header lines, whole, fenced, in wire order"`
	sdk.SourceFlags
}

func getMessageTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "get_message",
		Title: "Get one SIP message in full",
		Description: "One message by index: get_dialog's row plus every other header line (extension_headers), " +
			"fenced, in wire order.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "A call's first message", Args: map[string]any{"call_id": sampleCallID, "index": 0}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
			{Code: sdk.CodeInvalidParams, When: "an index out of range (the message gives the count)"},
			{Code: sdk.CodeInvalidParams, When: "an index past the per-dialog retention cap (the message gives how many are kept)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in getMessageIn) (Message, error) {
		return getMessage(d.capture, c, in)
	})
}

func getMessage(capture *engine.Capture, c *sdk.Call, in getMessageIn) (Message, error) {
	if in.CallID == "" {
		return Message{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs or find_problems")
	}
	src := answer.SourceState(capture.Status())
	det, ok := capture.Dialogs().Get(in.CallID)
	if !ok {
		return Message{}, answer.UnknownCall("call_id", in.CallID)
	}
	n := len(det.Messages)
	switch {
	case in.Index < 0 || (in.Index >= n && in.Index >= det.MsgCount):
		return Message{}, sdk.InvalidParams("index %d is out of range: call_id %q has %d messages (indexes 0 to %d)",
			in.Index, in.CallID, det.MsgCount, det.MsgCount-1)
	case in.Index >= n:
		return Message{}, sdk.InvalidParams("index %d was not kept: call_id %q has %d messages, of which the first %d are kept (indexes 0 to %d; the rest passed the per-dialog retention cap)",
			in.Index, in.CallID, det.MsgCount, n, n-1)
	}
	m := messageRow(c, &det.Messages[in.Index])
	m.SourceFlags = src.Flags()
	return m, nil
}

// messageRow shapes one message as get_dialog's messages[] does, fencing
// what its sender wrote, and adds its other header lines.
func messageRow(c *sdk.Call, m *dialog.Message) Message {
	v := Message{
		Index:            m.Index,
		Src:              m.Src.Addr().Unmap().String(),
		SrcPort:          int(m.Src.Port()),
		Dst:              m.Dst.Addr().Unmap().String(),
		DstPort:          int(m.Dst.Port()),
		Transport:        m.Transport.String(),
		Timestamp:        m.TS,
		Retransmission:   m.Retransmission,
		InputOrigin:      m.Origin.String(),
		SchemaVersion:    getMessageSchemaVersion,
		ExtensionHeaders: []string{},
	}
	if !m.Frame.IsZero() {
		v.Frame = m.Frame.String()
	}
	if m.HasDSCP {
		dscp := m.DSCP
		v.DSCP = &dscp
	}
	msg := m.Msg
	if msg == nil {
		return v
	}
	v.CallID = msg.CallID
	v.IsRequest = msg.IsRequest
	if msg.CSeq.Valid {
		v.CSeq = &MessageCSeq{Method: answer.Unfenced(msg.CSeq.Method), Number: msg.CSeq.Number}
	}
	if h, ok := msg.Header(sip.HdrFrom); ok {
		v.From = c.Fence(h)
	}
	if h, ok := msg.Header(sip.HdrTo); ok {
		v.To = c.Fence(h)
	}
	if msg.UserAgent != "" {
		v.UA = c.Fence(msg.UserAgent)
	}
	if h, ok := msg.Header(sip.HdrContact); ok {
		v.Contact = c.Fence(h)
	}
	if body, ok := msg.SDPBody(); ok && len(body) > 0 {
		s := strings.ReplaceAll(string(body), "\r\n", "\n")
		v.SDP = c.FenceBody(strings.ReplaceAll(s, "\r", "\n"))
	}
	for _, h := range msg.Headers {
		switch h.ID {
		case sip.HdrCallID, sip.HdrFrom, sip.HdrTo, sip.HdrContact, sip.HdrUserAgent, sip.HdrCSeq:
			continue
		}
		v.ExtensionHeaders = append(v.ExtensionHeaders, c.Fence(h.Name+": "+h.Value))
	}
	if msg.IsRequest {
		v.Method = answer.Unfenced(msg.Method) // sender-written, shown unfenced
		return v
	}
	v.StatusCode = msg.StatusCode
	if msg.Reason != "" {
		v.Reason = c.Fence(msg.Reason)
	}
	if msg.CSeq.Valid {
		v.ResponseContext = sip.StatusClass(msg.StatusCode) + " to " + answer.Unfenced(msg.CSeq.Method)
	} else {
		v.ResponseContext = sip.StatusClass(msg.StatusCode)
	}
	return v
}
