package sip

import (
	"bytes"
	"strings"
)

// MaxJunkBytes is how many bytes before the start line the parser skips at
// most (whitespace, NUL padding, keepalive leftovers, garbage). A start line
// that begins later is not found.
const MaxJunkBytes = 256

// isTokenChar[c] reports whether c is an RFC 3261 token character.
var isTokenChar [256]bool

// isLeadSpace[c] reports whether c may be skipped before a start line
// without counting as a problem (CR, LF, SP, HT, NUL).
var isLeadSpace [256]bool

func init() {
	for c := 'a'; c <= 'z'; c++ {
		isTokenChar[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		isTokenChar[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		isTokenChar[c] = true
	}
	for _, c := range "-.!%*_+`'~" {
		isTokenChar[c] = true
	}
	for _, c := range "\r\n \t\x00" {
		isLeadSpace[c] = true
	}
}

func isWS(c byte) bool { return c == ' ' || c == '\t' }

// startLine is what the start-line recognizer found.
type startLine struct {
	off       int // offset of the start line in the input (junk before it)
	end       int // offset just past the line's content (before CR/LF)
	next      int // offset of the byte after the line's LF (or len)
	isRequest bool
	// request: method [m0,m1), uri [u0,u1); response: code, reason [r0,r1)
	m0, m1, u0, u1 int
	code           int
	r0, r1         int
}

// sipVersionAt reports whether b[i:] starts with "SIP/2.0" in any case.
func sipVersionAt(b []byte, i int) bool {
	if len(b)-i < 7 {
		return false
	}
	return b[i]|0x20 == 's' && b[i+1]|0x20 == 'i' && b[i+2]|0x20 == 'p' &&
		b[i+3] == '/' && b[i+4] == '2' && b[i+5] == '.' && b[i+6] == '0'
}

// classifyLine tests whether b[off:end] (one line, CR/LF excluded) is a
// start line beginning exactly at off.
func classifyLine(b []byte, off, end int) (startLine, bool) {
	// Trim trailing whitespace and CR.
	for end > off && (isWS(b[end-1]) || b[end-1] == '\r') {
		end--
	}
	sl := startLine{off: off, end: end}
	if sipVersionAt(b, off) && off+7 < end && isWS(b[off+7]) {
		// Status line: SIP/2.0 SP 3DIGIT [SP reason]
		i := off + 7
		for i < end && isWS(b[i]) {
			i++
		}
		if end-i < 3 {
			return sl, false
		}
		d0, d1, d2 := b[i]-'0', b[i+1]-'0', b[i+2]-'0'
		if d0 > 9 || d1 > 9 || d2 > 9 {
			return sl, false
		}
		i += 3
		if i < end && !isWS(b[i]) {
			return sl, false
		}
		sl.code = int(d0)*100 + int(d1)*10 + int(d2)
		for i < end && isWS(b[i]) {
			i++
		}
		sl.r0, sl.r1 = i, end
		return sl, true
	}
	// Request line: token 1*WS uri 1*WS SIP/2.0
	i := off
	for i < end && isTokenChar[b[i]] {
		i++
	}
	if i == off || i >= end || !isWS(b[i]) {
		return sl, false
	}
	sl.m0, sl.m1 = off, i
	if end-i < 9 || !sipVersionAt(b, end-7) || !isWS(b[end-8]) {
		return sl, false
	}
	u0, u1 := i, end-8
	for u0 < u1 && isWS(b[u0]) {
		u0++
	}
	for u1 > u0 && isWS(b[u1-1]) {
		u1--
	}
	if u0 == u1 {
		return sl, false
	}
	sl.u0, sl.u1 = u0, u1
	sl.isRequest = true
	return sl, true
}

// lineEnd returns the offset of the LF ending the line starting at i (or
// len(b)) and the offset after it.
func lineEnd(b []byte, i int) (end, next int) {
	j := bytes.IndexByte(b[i:], '\n')
	if j < 0 {
		return len(b), len(b)
	}
	return i + j, i + j + 1
}

// findStartLine locates the start line within the first MaxJunkBytes bytes
// of b. It never allocates.
func findStartLine(b []byte) (startLine, bool) {
	// Fast path: optional leading whitespace, then the start line.
	i := 0
	for i < len(b) && i < MaxJunkBytes && isLeadSpace[b[i]] {
		i++
	}
	if i < len(b) && isTokenChar[b[i]] {
		if sipVersionAt(b, i) {
			// Status line: decide on the first 12 bytes before looking
			// for the line end.
			if len(b)-i < 12 || !isWS(b[i+7]) || !isDigit(b[i+8]) || !isDigit(b[i+9]) || !isDigit(b[i+10]) {
				return findStartLineSlow(b)
			}
		}
		end, next := lineEnd(b, i)
		if sl, ok := classifyLine(b, i, end); ok {
			sl.next = next
			return sl, true
		}
	}
	return findStartLineSlow(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// maxStartWindow is how far into the input a start line's SIP/2.0 can be.
const maxStartWindow = MaxJunkBytes + MaxLineBytes

// findStartLineSlow handles junk before the start line: on each line that
// begins within MaxJunkBytes, it looks for a status line ("SIP/2.0 NNN"
// anywhere in the junk window of the line) or a request line (a line ending
// in " SIP/2.0", the method being the token run before the URI).
func findStartLineSlow(b []byte) (startLine, bool) {
	// Cheap rejection: no "SIP/2.0" (case-sensitive, the common spelling)
	// and no lower-case variant near the start means no start line.
	win := b
	if len(win) > maxStartWindow {
		win = win[:maxStartWindow]
	}
	if !hasVersion(win) {
		return startLine{}, false
	}
	// Another text protocol's start line first (HTTP, RTSP) means the SIP
	// further on is that protocol's content (message/sip in an HTTP body),
	// not a SIP message after junk.
	if otherProtocolFirst(b) {
		return startLine{}, false
	}
	for ls := 0; ls < len(b) && ls < MaxJunkBytes; {
		end, next := lineEnd(b, ls)
		// Request line ending in SIP/2.0.
		e := end
		for e > ls && (isWS(b[e-1]) || b[e-1] == '\r') {
			e--
		}
		if e-ls >= 10 && sipVersionAt(b, e-7) && isWS(b[e-8]) {
			// Backtrack: URI is the last non-space run before the version,
			// the method the token run before the URI.
			u1 := e - 8
			for u1 > ls && isWS(b[u1-1]) {
				u1--
			}
			u0 := u1
			for u0 > ls && !isWS(b[u0-1]) {
				u0--
			}
			m1 := u0
			for m1 > ls && isWS(b[m1-1]) {
				m1--
			}
			m0 := m1
			for m0 > ls && isTokenChar[b[m0-1]] {
				m0--
			}
			if u0 < u1 && m0 < m1 && m1 < u0 && m0 < MaxJunkBytes {
				if sl, ok := classifyLine(b, m0, end); ok {
					sl.next = next
					return sl, true
				}
			}
		}
		// Status line somewhere in the junk window of this line.
		win := end
		if lim := MaxJunkBytes + 8; win > lim {
			win = lim
		}
		for from := ls; from < win; {
			k := bytes.Index(b[from:win], []byte("SIP/2.0 "))
			if k < 0 {
				break
			}
			if sl, ok := classifyLine(b, from+k, end); ok && !sl.isRequest {
				sl.next = next
				return sl, true
			}
			from += k + 1
		}
		ls = next
	}
	return startLine{}, false
}

// otherProtocolFirst reports whether the first non-blank line of b is an
// HTTP or RTSP request or status line.
func otherProtocolFirst(b []byte) bool {
	i := 0
	for i < len(b) && i < MaxJunkBytes && isLeadSpace[b[i]] {
		i++
	}
	end, _ := lineEnd(b, i)
	line := bytes.TrimRight(b[i:end], " \t\r")
	isVer := func(v []byte) bool {
		return len(v) == 8 && (bytes.HasPrefix(v, []byte("HTTP/")) || bytes.HasPrefix(v, []byte("RTSP/"))) &&
			isDigit(v[5]) && v[6] == '.' && isDigit(v[7])
	}
	if len(line) >= 8 && isVer(line[:8]) {
		return true
	}
	if k := bytes.LastIndexByte(line, ' '); k >= 0 && isVer(line[k+1:]) {
		return true
	}
	return false
}

// hasVersion reports whether b holds "SIP/2.0" in any case. It is one pass
// over b looking for the rare '/' (vectorized by bytes.IndexByte), so binary
// payloads (RTP) that hold no SIP version are rejected in a few nanoseconds.
func hasVersion(b []byte) bool {
	for i := 3; i+4 <= len(b); {
		k := bytes.IndexByte(b[i:len(b)-3], '/')
		if k < 0 {
			return false
		}
		j := i + k
		if b[j+1] == '2' && b[j+2] == '.' && b[j+3] == '0' && sipVersionAt(b, j-3) {
			return true
		}
		i = j + 1
	}
	return false
}

// Looks reports, cheaply and without allocating, whether b starts with a SIP
// message: a request line (any token method, a URI, SIP/2.0) or a status line
// (SIP/2.0 and a three-digit code), possibly after a little junk (at most
// MaxJunkBytes bytes). HTTP, RTP, keepalives (CRLFCRLF, short garbage) and
// other payloads on SIP ports are not SIP. Looks(b) is true exactly when
// Parse(b) succeeds.
func Looks(b []byte) bool {
	// Every start line holds SIP/2.0 (a status line's first word, a request
	// line's last), so bytes without it anywhere are rejected in one
	// vectorized pass: the common case of an RTP payload.
	if !hasVersion(b) {
		return false
	}
	_, ok := findStartLine(b)
	return ok
}

// isCtl[c] reports whether c is a control byte a header line may not hold
// (below 0x20 except HT, and DEL).
var isCtl = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = c != '\t'
	}
	t[0x7f] = true
	return t
}()

// trimWS trims spaces and tabs at both ends of s (strings.Trim(s, " \t")
// without building a cutset each call).
func trimWS(s string) string {
	i, j := 0, len(s)
	for i < j && isWS(s[i]) {
		i++
	}
	for j > i && isWS(s[j-1]) {
		j--
	}
	return s[i:j]
}

// CanonicalMethod is strings.ToUpper(s), returned as the registry's
// constant spelling for an IANA method (internMethod), so that a method kept
// as a map key or in a long-lived record holds no message's bytes.
func CanonicalMethod(s string) string { return internMethod(strings.ToUpper(s)) }

// internMethod returns the registry's constant spelling of an upper-cased
// IANA method, so that a method kept as a map key or in a long-lived record
// holds no message's bytes; any other token is returned as it is.
func internMethod(s string) string {
	switch s {
	case "INVITE":
		return "INVITE"
	case "ACK":
		return "ACK"
	case "BYE":
		return "BYE"
	case "CANCEL":
		return "CANCEL"
	case "REGISTER":
		return "REGISTER"
	case "OPTIONS":
		return "OPTIONS"
	case "INFO":
		return "INFO"
	case "PRACK":
		return "PRACK"
	case "UPDATE":
		return "UPDATE"
	case "SUBSCRIBE":
		return "SUBSCRIBE"
	case "NOTIFY":
		return "NOTIFY"
	case "REFER":
		return "REFER"
	case "MESSAGE":
		return "MESSAGE"
	case "PUBLISH":
		return "PUBLISH"
	}
	return s
}
