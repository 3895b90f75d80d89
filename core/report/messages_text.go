package report

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// MessageTextOptions shape the per-message text of `sipnab -N -I FILE`
// (docs/cli-output.md).
type MessageTextOptions struct {
	// Raw prints each message's text after its line (-T).
	Raw bool
	// Hexdump prints each message's bytes as a hex dump after its line.
	Hexdump bool
	// DeltaTime prints the time since the previous message printed
	// instead of the capture time.
	DeltaTime bool
	// ProtoNumbers prints the transport as its IP protocol number (UDP
	// 17, TCP 6, SCTP 132) instead of its name.
	ProtoNumbers bool
	// PayloadLimit cuts the bytes Raw and Hexdump show per message (0:
	// all of them); a cut says how many bytes were left out.
	PayloadLimit int
	// Color marks requests and responses by class with ANSI colors (the
	// caller turns it on only for a terminal).
	Color bool
}

const (
	ansiReset   = "\x1b[0m"
	ansiRequest = "\x1b[36m" // cyan
	ansi1xx     = "\x1b[33m" // yellow
	ansi2xx     = "\x1b[32m" // green
	ansi3xx     = "\x1b[34m" // blue
	ansiFailure = "\x1b[31m" // red: 4xx, 5xx, 6xx
)

// WriteMessagesText writes the per-message text for a capture read to its
// end: every retained SIP message of the selected dialogs in capture time
// order (EachMessage) through NewMessagesText. It returns the number of
// messages written.
func WriteMessagesText(w io.Writer, c *engine.Capture, sel Selection, o MessageTextOptions) (int, error) {
	s := NewMessagesText(w, o)
	if err := EachMessage(c, sel, s.Message); err != nil {
		return s.Count(), fmt.Errorf("writing messages: %w", err)
	}
	if err := s.End(c.Status()); err != nil {
		return s.Count(), fmt.Errorf("writing messages: %w", err)
	}
	return s.Count(), nil
}

// NewMessagesText returns the per-message text sink, one line per
// message:
//
//	2009-03-23T17:33:17.123456Z 10.0.0.1:5060 -> 10.0.0.2:5060 UDP INVITE call-id
//
// the capture time (or, with DeltaTime, "+seconds" since the previous
// line), source and destination, transport, the method or the status code
// and reason, and the Call-ID (textsafe.ID: escaped, never dropped). With
// Raw or Hexdump the message's bytes follow, indented. End adds, for a run
// not read whole, a line saying so and why, as --report's INCOMPLETE RUN
// does, and a line counting the SIP messages read but not printed.
func NewMessagesText(w io.Writer, o MessageTextOptions) MessageSink {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &textMessages{bw: bw, ew: &errWriter{w: bw}, o: o}
}

type textMessages struct {
	bw   *bufio.Writer
	ew   *errWriter
	o    MessageTextOptions
	prev time.Time
	n    int
	line []byte
}

func (t *textMessages) Message(mo MessageOrder) error {
	m := &mo.Msg
	t.line = appendMessageLine(t.line[:0], m, t.prev, t.n == 0, t.o)
	t.prev = m.TS
	t.n++
	if _, err := t.ew.Write(t.line); err != nil {
		return err
	}
	if m.Msg != nil && (t.o.Raw || t.o.Hexdump) {
		writeBody(t.ew, m.Msg.Raw, t.o)
	}
	return t.ew.err
}

func (t *textMessages) Count() int { return t.n }

func (t *textMessages) Flush() error {
	if t.ew.err != nil {
		return t.ew.err
	}
	return t.bw.Flush()
}

func (t *textMessages) End(st engine.Status) error {
	if !st.Complete || MessagesUnwritten(st) > 0 {
		writeRunNote(t.ew, st)
	}
	return t.Flush()
}

func appendMessageLine(b []byte, m *dialog.Message, prev time.Time, first bool, o MessageTextOptions) []byte {
	switch {
	case !o.DeltaTime:
		b = m.TS.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	case first:
		b = append(b, "+0.000000"...)
	default:
		d := m.TS.Sub(prev)
		sign := byte('+')
		if d < 0 {
			sign, d = '-', -d
		}
		b = append(b, sign)
		b = strconv.AppendFloat(b, d.Seconds(), 'f', 6, 64)
	}
	b = append(b, ' ')
	b = appendAddr(b, m.Src)
	b = append(b, " -> "...)
	b = appendAddr(b, m.Dst)
	b = append(b, ' ')
	b = appendTransport(b, m.Transport, o.ProtoNumbers)
	b = append(b, ' ')
	s := m.Msg
	if s == nil {
		return append(b, "?\n"...)
	}
	color := ""
	if o.Color {
		color = ansiRequest
		if !s.IsRequest {
			switch {
			case s.StatusCode < 200:
				color = ansi1xx
			case s.StatusCode < 300:
				color = ansi2xx
			case s.StatusCode < 400:
				color = ansi3xx
			default:
				color = ansiFailure
			}
		}
		b = append(b, color...)
	}
	if s.IsRequest {
		b = append(b, textsafe.Line(s.Method, 40)...)
	} else {
		b = strconv.AppendInt(b, int64(s.StatusCode), 10)
		if s.Reason != "" {
			b = append(b, ' ')
			b = append(b, textsafe.Line(s.Reason, 80)...)
		}
	}
	if color != "" {
		b = append(b, ansiReset...)
	}
	if m.Retransmission {
		b = append(b, " (retransmission)"...)
	}
	b = append(b, ' ')
	b = append(b, textsafe.ID(s.CallID, 120)...)
	return append(b, '\n')
}

func appendAddr(b []byte, a netip.AddrPort) []byte {
	if !a.IsValid() {
		return append(b, '?')
	}
	return a.AppendTo(b)
}

// ipProto are the IP protocol numbers of the SIP transports (IANA
// "Assigned Internet Protocol Numbers"); TLS, WS and WSS ride on TCP.
var ipProto = map[packet.Transport]int{
	packet.TransportUDP: 17, packet.TransportTCP: 6, packet.TransportSCTP: 132,
	packet.TransportTLS: 6, packet.TransportWS: 6, packet.TransportWSS: 6,
}

func appendTransport(b []byte, t packet.Transport, numbers bool) []byte {
	if numbers {
		if n, ok := ipProto[t]; ok {
			return strconv.AppendInt(b, int64(n), 10)
		}
	}
	return append(b, t.String()...)
}

// writeBody writes a message's bytes after its line: the text (Raw, with
// control characters other than line breaks and tabs dropped:
// textsafe.Clean) and/or a hex dump, each line indented by four spaces,
// cut at PayloadLimit bytes.
func writeBody(w io.Writer, raw []byte, o MessageTextOptions) {
	cut := 0
	if o.PayloadLimit > 0 && len(raw) > o.PayloadLimit {
		cut = len(raw) - o.PayloadLimit
		raw = raw[:o.PayloadLimit]
	}
	if o.Raw {
		text := textsafe.Clean(string(raw), true)
		for len(text) > 0 {
			l := text
			if i := indexByte(text, '\n'); i >= 0 {
				l, text = text[:i], text[i+1:]
			} else {
				text = ""
			}
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	if o.Hexdump {
		d := hex.Dump(raw)
		for len(d) > 0 {
			i := indexByte(d, '\n')
			fmt.Fprintf(w, "    %s\n", d[:i])
			d = d[i+1:]
		}
	}
	if cut > 0 {
		fmt.Fprintf(w, "    [%d more bytes not shown: --payload-limit %d]\n", cut, o.PayloadLimit)
	}
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// writeRunNote ends the per-message text of a run that was not read whole,
// or whose SIP messages are not all printed.
func writeRunNote(w io.Writer, st engine.Status) {
	if !st.Complete {
		fmt.Fprintf(w, "INCOMPLETE RUN: %s\n", textsafe.Line(joinReasons(st.IncompleteReasons), 300))
		for _, e := range st.Errors {
			fmt.Fprintf(w, "  - %s\n", textsafe.Line(e, 300))
		}
	}
	if n := MessagesUnwritten(st); n > 0 {
		fmt.Fprintf(w, "NOT PRINTED: %d SIP messages (%d without a Call-ID, %d of Call-IDs refused at the dialog cap, %d past the per-dialog message cap)\n",
			n, st.SIPWithoutCallID, st.SIPRefused, st.Dialogs.MessagesNotRetained)
	}
}

func joinReasons(r []string) string {
	if len(r) == 0 {
		return "not read whole"
	}
	out := r[0]
	for _, x := range r[1:] {
		out += ", " + x
	}
	return out
}
