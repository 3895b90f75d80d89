package dialog

import (
	"strconv"
	"strings"
	"unicode/utf8"

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

// causeOf returns the cause a message names, if any.
func causeOf(m *sip.Message) (Cause, bool) {
	var q850, sipc *Cause
	for i := range m.Headers {
		h := &m.Headers[i]
		if h.ID != sip.HdrReason {
			continue
		}
		for _, v := range splitComma(h.Value) {
			c, ok := parseReason(v)
			if !ok {
				continue
			}
			switch {
			case c.Protocol == "Q.850" && q850 == nil:
				q850 = &c
			case c.Protocol == "SIP" && sipc == nil:
				sipc = &c
			}
		}
	}
	if q850 != nil {
		return *q850, true
	}
	if v, ok := m.Header(sip.HdrXAsteriskHangupCauseCode); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 && n < 1000 {
			return Cause{Code: n, Protocol: "Q.850", SourceHeader: "X-Asterisk-HangupCauseCode"}, true
		}
	}
	if sipc != nil {
		return *sipc, true
	}
	return Cause{}, false
}

// parseReason reads one Reason value: protocol *( ";" param ), RFC 3326.
func parseReason(v string) (Cause, bool) {
	parts := splitSemi(v)
	if len(parts) == 0 {
		return Cause{}, false
	}
	proto := strings.TrimSpace(parts[0])
	var c Cause
	switch {
	case strings.EqualFold(proto, "Q.850"):
		c.Protocol = "Q.850"
	case strings.EqualFold(proto, "SIP"):
		c.Protocol = "SIP"
	default:
		return Cause{}, false
	}
	c.SourceHeader = "Reason"
	haveCode := false
	for _, p := range parts[1:] {
		k, val, _ := strings.Cut(p, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		val = strings.TrimSpace(val)
		switch k {
		case "cause":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n >= 1000 {
				return Cause{}, false
			}
			c.Code, haveCode = n, true
		case "text":
			c.Text = clipText(unquote(val), sip.MaxCauseChars)
		}
	}
	return c, haveCode
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
		if strings.IndexByte(s, '\\') >= 0 {
			var b strings.Builder
			for i := 0; i < len(s); i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			s = b.String()
		}
	}
	return s
}

// clipText cuts s to at most n characters (runes), on a rune boundary.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i]
}

// splitComma splits a header value at commas outside double quotes and angle
// brackets.
func splitComma(v string) []string { return splitOutside(v, ',') }

// splitSemi splits at semicolons outside double quotes.
func splitSemi(v string) []string { return splitOutside(v, ';') }

func splitOutside(v string, sep byte) []string {
	var out []string
	inQ, angle, esc := false, 0, false
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case esc:
			esc = false
		case inQ && c == '\\':
			esc = true
		case c == '"':
			inQ = !inQ
		case !inQ && c == '<':
			angle++
		case !inQ && c == '>' && angle > 0:
			angle--
		case !inQ && angle == 0 && c == sep:
			if s := strings.TrimSpace(v[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(v[start:]); s != "" {
		out = append(out, s)
	}
	return out
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
	contacts := 0
	zero := 0
	for _, v := range m.HeaderValues(sip.HdrContact) {
		for _, c := range splitComma(v) {
			contacts++
			if strings.TrimSpace(c) == "*" {
				return true
			}
			for _, p := range splitSemi(c)[1:] {
				k, val, _ := strings.Cut(p, "=")
				if strings.EqualFold(strings.TrimSpace(k), "expires") && strings.TrimSpace(val) == "0" {
					zero++
					break
				}
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
