package dialog

import (
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// Cause is why a call ended, as the signaling said it: the last message
// naming a cause wins (a Reason header on a BYE or CANCEL counts), and within
// one message a Q.850 cause beats a SIP one (a SIP cause restates the status
// code).
type Cause struct {
	// Code is the cause value (a Q.850 cause or a SIP status code).
	Code int `json:"cause_code" desc:"cause value: a Q.850 cause or a SIP status code"`
	// Text is the cause text the sender wrote, cut at 200 characters;
	// absent when none was given.
	Text string `json:"cause_text,omitempty" desc:"cause text as sent, at most 200 characters"`
	// Protocol is Q.850 or SIP.
	Protocol string `json:"protocol" enum:"Q.850|SIP" desc:"protocol of the cause value"`
	// SourceHeader is the header the cause came from.
	SourceHeader string `json:"source_header" enum:"Reason|X-Asterisk-HangupCauseCode" desc:"header the cause came from"`
	// FrameRef points at the frame of the message that named the cause;
	// absent when unknown.
	FrameRef string `json:"frame_ref,omitempty" desc:"evidence pointer of the message naming the cause"`

	frame packet.FrameRef
}

// namesCause reports whether a message carries a header causeOf reads
// (Reason, X-Asterisk-HangupCauseCode): without one causeOf finds nothing,
// and most messages carry neither, so the store asks this first and copies
// no empty Cause.
func namesCause(m *sip.Message) bool {
	for i := range m.Headers {
		if id := m.Headers[i].ID; id == sip.HdrReason || id == sip.HdrXAsteriskHangupCauseCode {
			return true
		}
	}
	return false
}

// noteCause keeps the cause m names, if any, as the dialog's cause, with
// the frame that carried it: the last message naming a cause wins.
func (d *dialog) noteCause(m *sip.Message, frame packet.FrameRef) {
	if c, ok := causeOf(m); ok {
		c.frame = frame
		d.cause = new(Cause) // only a message naming a cause allocates
		*d.cause = c
	}
}

// causeOf returns the cause a message names, if any: within one message a
// Q.850 Reason beats X-Asterisk-HangupCauseCode (a Q.850 value without
// text), which beats a SIP Reason.
func causeOf(m *sip.Message) (Cause, bool) {
	var q850, sipc *Cause
	asterisk := -1 // the first X-Asterisk-HangupCauseCode, found in the same pass
	for i := range m.Headers {
		h := &m.Headers[i]
		if h.ID != sip.HdrReason {
			if h.ID == sip.HdrXAsteriskHangupCauseCode && asterisk < 0 {
				asterisk = i
			}
			continue
		}
		for _, r := range sip.ParseReason(h.Value) {
			if !r.HasCause || r.Cause >= 1000 {
				continue
			}
			c := Cause{Code: r.Cause, Text: r.Text, Protocol: r.Protocol, SourceHeader: "Reason"}
			switch {
			case r.Protocol == "Q.850" && q850 == nil:
				q850 = &c
			case r.Protocol == "SIP" && sipc == nil:
				sipc = &c
			}
		}
	}
	if q850 != nil {
		return *q850, true
	}
	if asterisk >= 0 {
		if n, err := strconv.Atoi(strings.TrimSpace(m.Headers[asterisk].Value)); err == nil && n >= 0 && n < 1000 {
			return Cause{Code: n, Protocol: "Q.850", SourceHeader: "X-Asterisk-HangupCauseCode"}, true
		}
	}
	if sipc != nil {
		return *sipc, true
	}
	return Cause{}, false
}

// subscriptionState returns the Subscription-State value token, lower-cased.
func subscriptionState(m *sip.Message) string {
	v, ok := m.Header(sip.HdrSubscriptionState)
	if !ok {
		return ""
	}
	tok, _, _ := strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(tok))
}

// expiresZero reports whether a REGISTER (or its answer) removes bindings:
// Expires: 0, a Contact of "*", or every Contact carrying expires=0.
func expiresZero(m *sip.Message) bool {
	if v, ok := m.Header(sip.HdrExpires); ok && strings.TrimSpace(v) == "0" {
		return true
	}
	contacts, zero := 0, 0
	for i := range m.Headers { // the Contact values, without HeaderValues' slice
		if m.Headers[i].ID != sip.HdrContact {
			continue
		}
		for _, c := range sip.SplitList(m.Headers[i].Value) {
			contacts++
			if c == "*" {
				return true
			}
			// Contact parameters follow the closing '>' (or the URI when
			// there are no brackets, in which case they are header params
			// too, RFC 3261 §20).
			params := c
			if i := strings.LastIndexByte(c, '>'); i >= 0 {
				params = c[i+1:]
			} else if i := strings.IndexByte(c, ';'); i >= 0 {
				params = c[i:]
			} else {
				params = ""
			}
			if e, ok := sip.ParamValue(params, "expires"); ok && strings.TrimSpace(e) == "0" {
				zero++
			}
		}
	}
	return contacts > 0 && zero == contacts
}

// dtmfOf reads the digit and duration of an INFO DTMF body
// (application/dtmf-relay "Signal=5\r\nDuration=160", or application/dtmf
// "5").
func dtmfOf(m *sip.Message) (digit string, durationMs int, ok bool) {
	switch m.ContentType {
	case "application/dtmf-relay":
		for _, line := range strings.Split(string(m.Body), "\n") {
			k, v, found := strings.Cut(strings.TrimSpace(line), "=")
			if !found {
				continue
			}
			v = strings.TrimSpace(v)
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "signal":
				digit = v
			case "duration":
				if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < 1<<20 {
					durationMs = n
				}
			}
		}
	case "application/dtmf":
		digit = strings.TrimSpace(string(m.Body))
	default:
		return "", 0, false
	}
	if !validDigit(digit) {
		return "", 0, false
	}
	return digit, durationMs, true
}

func validDigit(d string) bool {
	switch len(d) {
	case 1:
		c := d[0]
		return c >= '0' && c <= '9' || c == '*' || c == '#' || c >= 'A' && c <= 'D' || c >= 'a' && c <= 'd'
	case 2:
		return d == "10" || d == "11" || d == "12" || d == "13" || d == "14" || d == "15" || d == "16"
	}
	return false
}
