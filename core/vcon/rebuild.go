package vcon

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/pcapout"
)

// Rebuilding a container's SIP (analyze_vcon): the messages of its
// sip-message-trace attachments written back as frames of an in-memory
// pcap, which a scratch engine reads apart from the loaded capture.

// Bounds of a rebuild: a container is caller-supplied.
const (
	// MaxTraceMessages caps the messages rebuilt; the rest are counted.
	MaxTraceMessages = 20000
	// MaxSkipListed caps the skipped messages listed; all are counted.
	MaxSkipListed = 16
)

// Skipped is a trace message that could not be rebuilt.
type Skipped struct {
	Attachment int    `json:"attachment" desc:"index of the attachment in the container"`
	Message    int    `json:"message" desc:"index of the message in the attachment's messages"`
	Reason     string `json:"reason" desc:"why it was not rebuilt"`
}

// Rebuilt is a container's SIP as a classic pcap (LINKTYPE_ETHERNET), one
// UDP datagram per message.
type Rebuilt struct {
	// Pcap is the file's bytes; Frames the records in it.
	Pcap   []byte
	Frames int
	// UUID is the container's uuid ("" when absent or not a string).
	UUID string
	// Traces counts the sip-message-trace attachments read.
	Traces int
	// Skipped lists the first MaxSkipListed messages not rebuilt;
	// SkippedTotal counts them all (past MaxTraceMessages included).
	Skipped      []Skipped
	SkippedTotal int
}

// Rebuild reads every sip-message-trace attachment of a decoded container
// (sipnab's trace body: messages[{time, src, dst, text | base64url}],
// encoding json) and writes each message as one Ethernet/IP/UDP frame
// stamped with its time (core/pcapout.UDPFrame). A message that arrived
// over TCP, TLS or WebSocket is rebuilt as UDP too: the analysis reads
// its SIP, not its transport. A message with an unreadable time, address
// or body, or too large for one datagram, is skipped and counted.
func Rebuild(doc map[string]any) Rebuilt {
	var r Rebuilt
	r.UUID, _ = doc["uuid"].(string)
	r.Pcap = pcapout.AppendPcapHeader(nil, 1) // LINKTYPE_ETHERNET
	skip := func(att, msg int, format string, a ...any) {
		r.SkippedTotal++
		if len(r.Skipped) < MaxSkipListed {
			r.Skipped = append(r.Skipped, Skipped{Attachment: att, Message: msg, Reason: fmt.Sprintf(format, a...)})
		}
	}
	atts, _ := doc["attachments"].([]any)
	for ai, a := range atts {
		att, _ := a.(map[string]any)
		if p, _ := att["purpose"].(string); p != PurposeTrace {
			continue
		}
		r.Traces++
		body, _ := att["body"].(map[string]any)
		msgs, ok := body["messages"].([]any)
		if !ok {
			skip(ai, -1, "the attachment's body has no messages array (encoding json, sipnab's trace)")
			continue
		}
		for mi, m := range msgs {
			if r.Frames >= MaxTraceMessages {
				skip(ai, mi, "past the %d messages one analysis rebuilds", MaxTraceMessages)
				continue
			}
			msg, _ := m.(map[string]any)
			raw, reason := traceBytes(msg)
			if reason != "" {
				skip(ai, mi, "%s", reason)
				continue
			}
			ts, err := time.Parse(time.RFC3339Nano, str(msg["time"]))
			if err != nil {
				skip(ai, mi, "time is not RFC 3339")
				continue
			}
			src, err1 := netip.ParseAddrPort(str(msg["src"]))
			dst, err2 := netip.ParseAddrPort(str(msg["dst"]))
			if err1 != nil || err2 != nil {
				skip(ai, mi, "src or dst is not an ip:port")
				continue
			}
			frame, err := pcapout.UDPFrame(src, dst, raw)
			if err != nil {
				skip(ai, mi, "%v", err)
				continue
			}
			r.Pcap = pcapout.AppendPcapRecord(r.Pcap, &packet.Frame{TS: ts, LinkType: 1, Data: frame, OrigLen: len(frame)})
			r.Frames++
		}
	}
	return r
}

// traceBytes is a trace message's bytes: text, or base64url (unpadded,
// padded tolerated).
func traceBytes(msg map[string]any) ([]byte, string) {
	if t, ok := msg["text"].(string); ok && t != "" {
		return []byte(t), ""
	}
	if b, ok := msg["base64url"].(string); ok && b != "" {
		raw, err := base64.RawURLEncoding.DecodeString(b)
		if err != nil {
			if raw, err = base64.URLEncoding.DecodeString(b); err != nil {
				return nil, "base64url does not decode"
			}
		}
		return raw, ""
	}
	return nil, "no text or base64url"
}

func str(v any) string { s, _ := v.(string); return s }
