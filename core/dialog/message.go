package dialog

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sipnab/sipnab/core/sip"
)

// MessageSchemaVersion is the version of the MessageView wire shape.
const MessageSchemaVersion = 1

// CSeqView is a message's CSeq.
type CSeqView struct {
	Number uint32 `json:"number" desc:"CSeq number"`
	Method string `json:"method" desc:"CSeq method"`
}

// MessageView is one SIP message as every surface renders it (get_dialog
// messages[], the per-message NDJSON). Absent fields were not in the
// message.
type MessageView struct {
	SchemaVersion int `json:"schema_version" desc:"message shape version"`
	// Index is the message's 0-based position in its dialog.
	Index  int    `json:"index" desc:"position in the dialog, from 0"`
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// Timestamp is when the message was captured.
	Timestamp time.Time `json:"timestamp" desc:"capture time"`
	IsRequest bool      `json:"is_request" desc:"request (true) or response"`
	// Method is the request method (requests only).
	Method string `json:"method,omitempty" desc:"request method"`
	// StatusCode and Reason are the status line (responses only).
	StatusCode int    `json:"status_code,omitempty" desc:"response status code"`
	Reason     string `json:"reason,omitempty" desc:"response reason phrase"`
	// CSeq is absent when the message carried no readable CSeq.
	CSeq *CSeqView `json:"cseq,omitempty" desc:"CSeq number and method"`
	// From and To are the full header values.
	From string `json:"from,omitempty" desc:"From header value"`
	To   string `json:"to,omitempty" desc:"To header value"`
	// Contact is the first Contact header value.
	Contact string `json:"contact,omitempty" desc:"Contact header value"`
	// UA is User-Agent (or Server on a response without one).
	UA        string `json:"ua,omitempty" desc:"User-Agent, or Server on responses"`
	Src       string `json:"src" desc:"source address"`
	SrcPort   uint16 `json:"src_port" desc:"source port"`
	Dst       string `json:"dst" desc:"destination address"`
	DstPort   uint16 `json:"dst_port" desc:"destination port"`
	Transport string `json:"transport,omitempty" enum:"UDP|TCP|SCTP|TLS|WS|WSS" desc:"transport"`
	// Frame points at the frame the message came from; absent when unknown.
	Frame string `json:"frame,omitempty" desc:"evidence pointer <source>#<ordinal>@<digest>"`
	// DSCP is the IP header's DSCP; absent when not read.
	DSCP *uint8 `json:"dscp,omitempty" desc:"DSCP of the IP header"`
	// InputOrigin says how the message reached sipnab.
	InputOrigin string `json:"input_origin,omitempty" enum:"wire|hep|uprobe" desc:"how the message reached sipnab"`
	// SDP is the application/sdp body (also inside multipart), with "\n"
	// line endings; absent when there is none or it is not UTF-8.
	SDP string `json:"sdp,omitempty" desc:"SDP body, \\n line endings"`
	// Malformed lists what the parser found wrong.
	Malformed []string `json:"malformed,omitempty" desc:"what is wrong with the message"`
	// Retransmission: the message repeated an earlier one of the dialog.
	Retransmission bool `json:"retransmission,omitempty" desc:"re-sent by its sender"`
	// Duplicates counts the capture duplicates of this message: the same
	// bytes seen again within the duplicate window (a mirrored copy, a
	// second interface, a second HEP agent), not re-sent by its sender.
	Duplicates int `json:"duplicates,omitempty" desc:"capture duplicates of this message"`
}

// View renders a retained message.
func (m *Message) View() MessageView {
	v := MessageView{
		SchemaVersion: MessageSchemaVersion, Index: m.Index, Timestamp: m.TS,
		Src: m.Src.Addr().String(), SrcPort: m.Src.Port(), Dst: m.Dst.Addr().String(), DstPort: m.Dst.Port(),
		Transport: m.Transport.String(), InputOrigin: m.Origin.String(), Retransmission: m.Retransmission,
		Duplicates: m.Duplicates,
	}
	if !m.Src.IsValid() {
		v.Src = ""
	}
	if !m.Dst.IsValid() {
		v.Dst = ""
	}
	if !m.Frame.IsZero() {
		v.Frame = m.Frame.String()
	}
	if m.HasDSCP {
		d := m.DSCP
		v.DSCP = &d
	}
	s := m.Msg
	if s == nil {
		return v
	}
	v.CallID, v.IsRequest, v.UA = s.CallID, s.IsRequest, s.UserAgent
	if s.IsRequest {
		v.Method = s.Method
	} else {
		v.StatusCode, v.Reason = s.StatusCode, s.Reason
	}
	if s.CSeq.Valid {
		v.CSeq = &CSeqView{Number: s.CSeq.Number, Method: s.CSeq.Method}
	}
	if h, ok := s.Header(sip.HdrFrom); ok {
		v.From = h
	}
	if h, ok := s.Header(sip.HdrTo); ok {
		v.To = h
	}
	if h, ok := s.Header(sip.HdrContact); ok {
		v.Contact = h
	}
	if b, ok := s.SDPBody(); ok && len(b) > 0 && utf8.Valid(b) {
		v.SDP = strings.ReplaceAll(string(b), "\r\n", "\n")
	}
	if len(s.Malformed) > 0 {
		v.Malformed = append([]string(nil), s.Malformed...)
	}
	return v
}
