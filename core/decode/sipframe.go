package decode

import (
	"bytes"

	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/websocket"
)

// unitKind is what a TCP stream holds at a unit boundary.
type unitKind uint8

const (
	unitNeedMore unitKind = iota // not enough bytes to tell or to finish the unit
	unitOther                    // not a unit the decoder frames
	unitSIP                      // a SIP message, framed by Content-Length
	unitHEP                      // a HEP3 envelope, framed by its total length
	unitUpgrade                  // an HTTP request or response switching to WebSocket
	unitWSFrame                  // a WebSocket frame carrying SIP, seen without the handshake
)

// Limits of the stream framer.
const (
	maxStartLine = 8 << 10 // longest SIP start line or HTTP header block looked at
	maxMethod    = 32      // longest SIP method token considered
)

// classify looks at the bytes at a unit boundary and, for a complete unit,
// returns its length.
func classify(b []byte) (unitKind, int) {
	if len(b) == 0 {
		return unitNeedMore, 0
	}
	// HEP3 envelope.
	if len(b) < 4 && bytes.HasPrefix([]byte("HEP3"), b) {
		return unitNeedMore, 0
	}
	if bytes.HasPrefix(b, []byte("HEP3")) {
		if len(b) < 6 {
			return unitNeedMore, 0
		}
		n, ok := hep.FrameLen(b)
		if !ok {
			return unitOther, 0
		}
		if n > len(b) {
			return unitNeedMore, 0
		}
		return unitHEP, n
	}
	// SIP message.
	switch sipStart(b) {
	case startYes:
		n, ok := sipMessageLen(b)
		if !ok {
			return unitNeedMore, 0
		}
		return unitSIP, n
	case startMore:
		return unitNeedMore, 0
	}
	// HTTP upgrade to WebSocket.
	if k, n := httpUpgrade(b); k != unitOther {
		return k, n
	}
	if looksWSFrame(b) {
		return unitWSFrame, 0
	}
	return unitOther, 0
}

// startState says whether bytes begin a SIP message.
type startState uint8

const (
	startNo startState = iota
	startYes
	startMore // the first line is incomplete but so far consistent with SIP
)

// sipStart checks the first line of b: a status line (SIP/2.0 NNN) or a
// request line (METHOD SP URI SP SIP/2.0).
func sipStart(b []byte) startState {
	lim := min(len(b), maxStartLine)
	i := bytes.IndexByte(b[:lim], '\n')
	if i < 0 {
		if len(b) >= maxStartLine || !partialStartLine(b) {
			return startNo
		}
		return startMore
	}
	line := bytes.TrimSuffix(b[:i], []byte("\r"))
	if isStatusLine(line) || isRequestLine(line) {
		return startYes
	}
	return startNo
}

var sipVersion = []byte("SIP/2.0")

func isStatusLine(l []byte) bool {
	if len(l) < 11 || !bytes.EqualFold(l[:7], sipVersion) || l[7] != ' ' {
		return false
	}
	if !isDigit(l[8]) || !isDigit(l[9]) || !isDigit(l[10]) {
		return false
	}
	return len(l) == 11 || l[11] == ' '
}

func isRequestLine(l []byte) bool {
	sp1 := bytes.IndexByte(l, ' ')
	if sp1 < 1 || sp1 > maxMethod || !isToken(l[:sp1]) {
		return false
	}
	sp2 := bytes.LastIndexByte(l, ' ')
	if sp2 <= sp1+1 {
		return false
	}
	return bytes.EqualFold(l[sp2+1:], sipVersion)
}

// partialStartLine reports whether b (holding no line end yet) could still
// become a SIP start line.
func partialStartLine(b []byte) bool {
	if n := min(len(b), 8); bytes.EqualFold(b[:n], []byte("SIP/2.0 ")[:n]) {
		if len(b) <= 8 {
			return true
		}
		for _, c := range b[8:min(len(b), 11)] {
			if !isDigit(c) {
				return false
			}
		}
		return true
	}
	sp1 := bytes.IndexByte(b, ' ')
	if sp1 < 0 {
		return len(b) <= maxMethod && isToken(b)
	}
	if sp1 < 1 || sp1 > maxMethod || !isToken(b[:sp1]) {
		return false
	}
	rest := b[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 < 0 {
		return true // still in the Request-URI
	}
	v := bytes.TrimSuffix(rest[sp2+1:], []byte("\r"))
	if len(v) > len(sipVersion) || bytes.IndexByte(v, ' ') >= 0 {
		return false
	}
	return bytes.EqualFold(v, sipVersion[:len(v)])
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isToken reports whether b is a non-empty RFC 3261 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '.', c == '!', c == '%', c == '*', c == '_', c == '+', c == '`', c == '\'', c == '~':
		default:
			return false
		}
	}
	return true
}

// sipMessageLen returns the length of the SIP message at the start of b:
// the header section up to and including the empty line, plus the body
// length from Content-Length (or its compact form l). A message without a
// Content-Length has no body (RFC 3261 makes the header mandatory on
// streams). ok is false until the whole message is in b.
func sipMessageLen(b []byte) (n int, ok bool) {
	pos := bytes.IndexByte(b, '\n')
	if pos < 0 {
		return 0, false
	}
	pos++
	cl, haveCL := 0, false
	for {
		j := bytes.IndexByte(b[pos:], '\n')
		if j < 0 {
			return 0, false
		}
		line := bytes.TrimSuffix(b[pos:pos+j], []byte("\r"))
		pos += j + 1
		if len(line) == 0 {
			break
		}
		if haveCL || line[0] == ' ' || line[0] == '\t' {
			continue
		}
		c := bytes.IndexByte(line, ':')
		if c < 1 {
			continue
		}
		name := bytes.TrimRight(line[:c], " \t")
		if bytes.EqualFold(name, []byte("content-length")) || bytes.EqualFold(name, []byte("l")) {
			cl, haveCL = parseLength(bytes.TrimSpace(line[c+1:])), true
		}
	}
	if cl > len(b)-pos {
		return 0, false
	}
	return pos + cl, true
}

// parseLength reads leading decimal digits, saturating at 1<<30; a value
// without digits is 0.
func parseLength(v []byte) int {
	n := 0
	for _, c := range v {
		if !isDigit(c) {
			break
		}
		n = n*10 + int(c-'0')
		if n > 1<<30 {
			return 1 << 30
		}
	}
	return n
}

// httpUpgrade recognizes a complete HTTP request or response header section
// that switches the connection to WebSocket. It returns unitOther for
// anything else, and unitNeedMore while an HTTP header section that could
// still be an upgrade is incomplete.
func httpUpgrade(b []byte) (unitKind, int) {
	get, resp := []byte("GET "), []byte("HTTP/1.")
	switch {
	case len(b) < len(get) && bytes.HasPrefix(get, b), len(b) < len(resp) && bytes.HasPrefix(resp, b):
		return unitNeedMore, 0
	case bytes.HasPrefix(b, resp):
		if len(b) < 12 {
			return unitNeedMore, 0
		}
		if string(b[8:12]) != " 101" {
			return unitOther, 0
		}
	case !bytes.HasPrefix(b, get):
		return unitOther, 0
	}
	lim := min(len(b), maxStartLine)
	end := headerEnd(b[:lim])
	if end < 0 {
		if len(b) >= maxStartLine {
			return unitOther, 0
		}
		return unitNeedMore, 0
	}
	if websocket.IsUpgradeRequest(b[:end]) || websocket.IsUpgradeResponse(b[:end]) {
		return unitUpgrade, end
	}
	return unitOther, 0
}

// headerEnd returns the length of the header section ending with an empty
// line (CRLF CRLF or LF LF), or -1.
func headerEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		j := i + 1
		if j < len(b) && b[j] == '\r' {
			j++
		}
		if j < len(b) && b[j] == '\n' {
			return j + 1
		}
	}
	return -1
}

// looksWSFrame recognizes a complete, final, unfragmented WebSocket text or
// binary frame whose payload starts a SIP message, for streams captured
// after their upgrade handshake.
func looksWSFrame(b []byte) bool {
	if len(b) < 2 || (b[0] != 0x81 && b[0] != 0x82) {
		return false
	}
	h, err := websocket.ParseHeader(b)
	if err != nil {
		return false
	}
	n, ok := h.FrameLen()
	if !ok || n > len(b) || h.Length < 8 {
		return false
	}
	var head [64]byte
	k := copy(head[:], b[h.HeaderLen:n])
	if h.Masked {
		websocket.Unmask(head[:k], h.Key, 0)
	}
	p := head[:k]
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		return sipStart(p) == startYes
	}
	return sipStart(p) == startMore && (bytes.HasPrefix(p, sipVersion) || bytes.IndexByte(p, ' ') > 0)
}

// resync finds, inside bytes that are not a unit, the start of a later line
// that begins a SIP message, or a later HEP3 envelope header; 0 when there is
// none.
func resync(b []byte) int {
	s := resyncSIP(b)
	lim := len(b)
	if s > 0 {
		lim = s
	}
	for h := 1; h < lim; {
		k := bytes.Index(b[h:lim], []byte("HEP3"))
		if k < 0 {
			break
		}
		h += k
		if plausibleHEP3(b[h:]) {
			return h
		}
		h++
	}
	return s
}

// plausibleHEP3 checks a HEP3 header found inside other bytes: a total length
// and, when present, a first chunk header that fits it.
func plausibleHEP3(b []byte) bool {
	n, ok := hep.FrameLen(b)
	switch {
	case !ok:
		return len(b) < 6
	case n < 12:
		return n == 6
	case len(b) < 12:
		return true
	}
	cl := int(b[10])<<8 | int(b[11])
	return b[6] == 0 && b[7] == 0 && cl >= 6 && cl <= n-6
}

func resyncSIP(b []byte) int {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0
		}
		i += j + 1
		if i >= len(b) {
			return 0
		}
		switch sipStart(b[i:]) {
		case startYes:
			return i
		case startMore:
			// The last line may start a message the next segment finishes.
			if t := b[i:]; bytes.HasPrefix(t, sipVersion) || bytes.IndexByte(t, ' ') > 0 {
				return i
			}
		}
	}
	return 0
}
