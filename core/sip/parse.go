package sip

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Malformation reasons recorded in Message.Malformed.
const (
	MalMissingCallID      = "missing Call-ID"
	MalMissingCSeq        = "missing CSeq"
	MalMissingFrom        = "missing From"
	MalMissingTo          = "missing To"
	MalMissingVia         = "missing Via"
	MalBadCSeq            = "unparseable CSeq"
	MalBadFrom            = "unparseable From"
	MalBadTo              = "unparseable To"
	MalBadVia             = "unparseable Via"
	MalBadContentLength   = "unparseable Content-Length"
	MalBadMaxForwards     = "unparseable Max-Forwards"
	MalBodyTruncated      = "Content-Length larger than body"
	MalControlByte        = "control byte in header"
	MalHeaderLimit        = "too many headers" // more than Limits.MaxHeaders
	MalLineLimit          = "line too long"    // longer than Limits.MaxLineBytes, truncated
	MalNoColon            = "header line without colon"
	MalEmptyName          = "header line without a name"
	MalOrphanContinuation = "continuation line without a header"
	MalNoEndOfHeaders     = "no empty line after headers"
	MalBadStatusCode      = "status code out of range"
	MalMethodLimit        = "method token too long" // longer than MaxMethodBytes, cut
	// MalJunkBeforeStartLine: bytes other than CR and LF before the start
	// line. RFC 3261 §7.5 lets a receiver ignore CRLF before a start line
	// (and RFC 5626 keepalives are CRLFs); anything else is no SIP message.
	// The message is still read past the junk, as on a stream (§18.3) a
	// receiver resynchronizes, but it is flagged.
	MalJunkBeforeStartLine = "junk before the start line"
)

// ErrNotSIP is returned by Parse when the bytes hold no SIP start line.
var ErrNotSIP = errors.New("not a sip message")

// Parse parses one SIP message. It copies b once into Message.Raw; every
// string of the Message points into that copy (Raw must be treated as
// read-only). The only error is ErrNotSIP, when b has no SIP start line
// within its first MaxJunkBytes bytes. Anything else wrong is tolerated and
// listed in Message.Malformed: the message is returned, never dropped.
//
// Raw spans the start line through the end of the body; junk before the
// start line (JunkPrefixBytes) and bytes after a Content-Length-bounded body
// (TrailingBytes) are not part of it.
func Parse(b []byte) (*Message, error) { return ParseLimits(b, DefaultLimits) }

// Limits are the per-message parser limits (engine.md §17).
type Limits struct {
	MaxHeaders   int // headers kept per message; past it HeaderLimitHit
	MaxLineBytes int // bytes of an unfolded header line; past it the value is truncated
}

// DefaultLimits are MaxHeaders (200) and MaxLineBytes (8 KiB).
var DefaultLimits = Limits{MaxHeaders: MaxHeaders, MaxLineBytes: MaxLineBytes}

// ParseLimits is Parse with configurable limits; a limit of 0 or less takes
// its default.
func ParseLimits(b []byte, lim Limits) (*Message, error) {
	m := new(Message)
	if err := parseInto(m, b, lim, nil, false); err != nil {
		return nil, err
	}
	return m, nil
}

// Parser parses a stream of messages into one Message it reuses, so that
// the parsed form (the Message, its Headers and its Vias)
// costs no allocation per message and none per header: each message costs
// one allocation, its own copy of the bytes.
//
// What the caller may keep after the next Parse: Raw, Body and every
// string of the Message (views into Raw, which is the message's own copy,
// never the caller's buffer, so a reader may reuse that buffer at once).
// What it may not: the *Message, Headers, Vias and Malformed,
// which the next Parse overwrites (copy what must outlive it, or use
// Parse, which returns a new Message each time). A Parser is not safe for
// concurrent use. The zero Parser parses with the default limits.
type Parser struct {
	m   Message
	lim Limits
	// looked is where Looks found the start line of the lookedLen bytes
	// at lookedAt; the next Parse of those bytes starts there. lookedLen
	// 0: nothing is remembered.
	looked    startLine
	lookedAt  *byte
	lookedLen int
}

// NewParser returns a Parser with the given limits (0 or less: the
// default).
func NewParser(lim Limits) *Parser { return &Parser{lim: lim} }

// Looks is the package's Looks(b), also remembering where the start line
// of b is, so that the next Parse, when it is of b itself (the same slice,
// its bytes unchanged since), starts from it instead of looking again: a
// router that asks whether a payload is SIP, then parses it, finds the
// start line once. A Parse of any other bytes (another slice, another
// length) looks for the start line as always, and any Parse forgets what
// Looks remembered. Either way the Message is the one Parse makes of b
// (TestParserLooksThenParseEqualsParse, FuzzParse).
func (ps *Parser) Looks(b []byte) bool {
	ps.lookedLen = 0
	if !hasVersion(b) {
		return false
	}
	var ok bool
	if ps.looked, ok = findStartLine(b); !ok || len(b) == 0 {
		return false
	}
	ps.lookedAt, ps.lookedLen = unsafe.SliceData(b), len(b)
	return true
}

// Parse parses one message as ParseLimits does, into the Parser's Message.
func (ps *Parser) Parse(b []byte) (*Message, error) {
	m := &ps.m
	*m = Message{Headers: m.Headers[:0], Vias: m.Vias[:0]}
	var found *startLine
	if ps.lookedLen != 0 && ps.lookedLen == len(b) && ps.lookedAt == unsafe.SliceData(b) {
		found = &ps.looked
	}
	ps.lookedLen, ps.lookedAt = 0, nil
	if err := parseInto(m, b, ps.lim, found, false); err != nil {
		return nil, err
	}
	return m, nil
}

// parseInto parses b into m (zero but for the spare capacity of Headers and
// Vias). found, when not nil, is findStartLine(b).
// owned: b's bytes from the start line on may be Raw as they are (they are
// read-only and outlive the Message); else Raw is a copy.
func parseInto(m *Message, b []byte, lim Limits, found *startLine, owned bool) error {
	if lim.MaxHeaders <= 0 {
		lim.MaxHeaders = MaxHeaders
	}
	if lim.MaxLineBytes <= 0 {
		lim.MaxLineBytes = MaxLineBytes
	}
	var sl startLine
	if found != nil {
		sl = *found
	} else {
		var ok bool
		if sl, ok = findStartLine(b); !ok {
			return ErrNotSIP
		}
	}
	// The message's one allocation: its own bytes (b may be a reader's
	// buffer, reused for the next packet).
	// make+copy of the same length compiles to one allocation the copy
	// fills (no zeroing first).
	raw := b[sl.off:]
	if !owned {
		raw = ownCopy(raw)
	}
	m.Raw = raw
	m.JunkPrefixBytes = sl.off
	m.MaxForwards = -1
	m.ContentLength = -1
	m.lim = limitsRef(lim)
	p := parser{m: m, raw: raw, lim: lim}
	if sl.off > 0 && !onlyCRLF(b[:sl.off]) {
		p.flag(MalJunkBeforeStartLine)
	}
	p.startLine(sl, sl.off)
	end := p.headers(sl.next - sl.off)
	p.body(end)
	p.interpret()
	if len(m.Vias) == 0 {
		m.Vias = nil // as a Message without Vias always was
	}
	return nil
}

// ownCopy returns a copy of src: make+copy of the same length compiles to
// one allocation the copy fills (no zeroing first).
func ownCopy(src []byte) []byte {
	raw := make([]byte, len(src))
	copy(raw, src)
	return raw
}

// onlyCRLF reports whether b holds nothing but CR and LF.
func onlyCRLF(b []byte) bool {
	for _, c := range b {
		if c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

type parser struct {
	m   *Message
	raw []byte
	lim Limits
}

// str returns raw[i:j] as a string sharing raw's memory.
func (p *parser) str(i, j int) string {
	if j <= i {
		return ""
	}
	return unsafe.String(&p.raw[i], j-i)
}

func (p *parser) flag(reason string) {
	for _, r := range p.m.Malformed {
		if r == reason {
			return
		}
	}
	p.m.Malformed = append(p.m.Malformed, reason)
}

func (p *parser) startLine(sl startLine, shift int) {
	m := p.m
	end := sl.end - shift
	lineEndAt := end
	if end > p.lim.MaxLineBytes {
		m.LineLimitHit = true
		p.flag(MalLineLimit)
		lineEndAt = p.lim.MaxLineBytes
		for lineEndAt > 0 && !utf8.RuneStart(p.raw[lineEndAt]) {
			lineEndAt--
		}
	}
	m.StartLine = p.str(0, lineEndAt)
	if sl.isRequest {
		m.IsRequest = true
		m0, m1 := sl.m0-shift, sl.m1-shift
		if m1-m0 > MaxMethodBytes {
			m1 = m0 + MaxMethodBytes
			p.flag(MalMethodLimit)
		}
		m.Method = internMethod(upperASCII(p.str(m0, m1)))
		u1 := sl.u1 - shift
		if u1 > lineEndAt {
			u1 = lineEndAt
		}
		m.RequestURI = p.str(sl.u0-shift, u1)
		return
	}
	m.StatusCode = sl.code
	if sl.code < 100 || sl.code > 699 {
		p.flag(MalBadStatusCode)
	}
	r1 := sl.r1 - shift
	if r1 > lineEndAt {
		r1 = lineEndAt
	}
	m.Reason = p.str(sl.r0-shift, r1)
}

// headers walks the header section starting at offset i of raw and returns
// the offset where the body starts (len(raw) when there is no empty line).
//
// The usual line is read in place (the fast block below): a name of
// printable ASCII right before the colon, a value without control bytes
// (tabs allowed) ended by CRLF or LF, no continuation line after it, within
// the limits. It records exactly what header would record for such a line;
// any other line goes to the general path (lineEnd, folding, header).
func (p *parser) headers(i int) int {
	m := p.m
	raw := p.raw
	n := len(raw)
	if m.Headers == nil {
		// One allocation for every header: at most one per line of the
		// rest of the message, and never more than the limit allows.
		c := bytes.Count(raw[i:], []byte{'\n'}) + 1
		m.Headers = make([]Header, 0, min(c, p.lim.MaxHeaders, maxPresize))
	}
	hs := m.Headers // written back before header runs and at the end
	maxHeaders, maxLine := p.lim.MaxHeaders, p.lim.MaxLineBytes
lines:
	for i < n {
		if c := raw[i]; c == '\r' && i+1 < n && raw[i+1] == '\n' {
			m.Headers = hs
			return i + 2 // empty line: end of headers
		} else if c == '\n' {
			m.Headers = hs
			return i + 1
		}
		for len(hs) < maxHeaders { // runs once: break to the general path
			s := i
			// The name: a known header's canonical "Name:" in the line's
			// first sixteen bytes, else a scan to the colon, all of it
			// printable ASCII, then a lookup.
			j, id, canonical := -1, HdrExtension, false
			if s+16 <= n {
				x0 := binary.LittleEndian.Uint64(raw[s:])
				x1 := binary.LittleEndian.Uint64(raw[s+8:])
				for _, pi := range patternSlots[patternHash(x0)] {
					if pi == 0 {
						break
					}
					pt := &namePatterns[pi]
					if x0&pt.mask[0] == pt.w[0] && x1&pt.mask[1] == pt.w[1] {
						j, id, canonical = s+pt.n, pt.id, true
						break
					}
				}
			}
			if j < 0 {
				j = s
				for ; j+8 <= n; j += 8 {
					x := binary.LittleEndian.Uint64(raw[j:])
					if mk := eqMask(x, ':') | outsideASCII(x); mk != 0 {
						j += firstMark(mk)
						break
					}
				}
				if j+8 > n {
					for j < n && raw[j] != ':' && raw[j] >= 0x20 && raw[j] < 0x7f {
						j++
					}
				}
				// No whitespace before the name (a continuation line) or
				// after it (header trims it), no empty name.
				if j >= n || raw[j] != ':' || j == s || raw[s] == ' ' || raw[j-1] == ' ' {
					break
				}
				id, canonical = lookupName(raw[s:j])
			}
			ne := j
			k := j + 1
			for k < n && isWS(raw[k]) {
				k++
			}
			vs := k
			// To the first control byte, eight bytes at a time:
			// outsideASCII marks exactly the first byte of the word that is
			// not printable ASCII (a control byte, a tab, or 0x80 and up),
			// where the scan stops or, for a tab or a non-ASCII byte, goes
			// on after it.
			for {
				if k+8 > n {
					for k < n && !isCtl[raw[k]] {
						k++
					}
					break
				}
				f := outsideASCII(binary.LittleEndian.Uint64(raw[k:]))
				if f == 0 {
					k += 8
					continue
				}
				k += firstMark(f)
				if isCtl[raw[k]] {
					break
				}
				k++
			}
			ce, next := k, 0
			switch {
			case k+1 < n && raw[k] == '\r' && raw[k+1] == '\n':
				next = k + 2
			case k < n && raw[k] == '\n':
				next = k + 1
			}
			if next == 0 || (next < n && isWS(raw[next])) {
				break // a control byte, no line end, or a fold
			}
			ve := ce
			for ve > vs && isWS(raw[ve-1]) {
				ve--
			}
			if (ne-s)+2+(ve-vs) > maxLine {
				break
			}
			var name, value string
			if canonical {
				name = canonicalNames[id] // interned: the usual spelling holds no message's bytes
			} else {
				name = unsafe.String(&raw[s], ne-s) // ne > s
			}
			if ve > vs {
				value = unsafe.String(&raw[vs], ve-vs)
			}
			if len(hs) == cap(hs) {
				hs = append(hs, Header{})[:len(hs)]
			}
			hs = hs[:len(hs)+1]
			h := &hs[len(hs)-1]
			h.ID, h.Name, h.Value, h.Start, h.End = id, name, value, s, ce
			i = next
			continue lines
		}
		m.Headers = hs
		lineStart := i
		end, next := lineEnd(raw, i)
		ce := end
		if ce > lineStart && raw[ce-1] == '\r' {
			ce--
		}
		if ce == lineStart {
			return next // empty line: end of headers
		}
		if isWS(raw[lineStart]) {
			// A continuation with no header before it.
			p.flag(MalOrphanContinuation)
			i = next
			continue
		}
		// Gather continuation lines into this logical line.
		logicalEnd, folded := ce, false
		for next < n && isWS(raw[next]) {
			e2, n2 := lineEnd(raw, next)
			c2 := e2
			if c2 > next && raw[c2-1] == '\r' {
				c2--
			}
			// A whitespace-only line after a header: RFC 3261 treats it as
			// LWS; keep folding.
			logicalEnd, folded = c2, true
			next = n2
		}
		i = next
		if len(m.Headers) >= maxHeaders {
			if !m.HeaderLimitHit {
				m.HeaderLimitHit = true
				p.flag(MalHeaderLimit)
			}
			continue
		}
		p.header(lineStart, logicalEnd, folded)
		hs = m.Headers
	}
	m.Headers = hs
	p.flag(MalNoEndOfHeaders)
	return n
}

// maxPresize bounds the header slots Parse allocates up front; a message
// with more headers grows the slice as it goes.
const maxPresize = 64

// header records the logical line raw[s:e].
func (p *parser) header(s, e int, folded bool) {
	raw := p.raw
	colon := bytes.IndexByte(raw[s:e], ':')
	if colon < 0 {
		p.flag(MalNoColon)
		return
	}
	colon += s
	ne := colon
	for ne > s && isWS(raw[ne-1]) {
		ne--
	}
	if ne == s {
		p.flag(MalEmptyName)
		return
	}
	// Control bytes anywhere in the logical line (CRLF of folds excepted).
	// Eight bytes at a time up to the first word that may hold one (a tab
	// stops the fast scan too), then byte by byte.
	k := s
	for ; k+8 <= e; k += 8 {
		if mayHoldCtl(binary.LittleEndian.Uint64(raw[k:])) {
			break
		}
	}
	for ; k < e; k++ {
		c := raw[k]
		if isCtl[c] {
			if (c == '\r' || c == '\n') && folded && foldBreak(raw, k) {
				continue
			}
			p.flag(MalControlByte)
			break
		}
	}
	h := Header{
		ID:    lookupHeaderBytes(raw[s:ne]),
		Name:  p.str(s, ne),
		Start: s,
		End:   e,
	}
	if c := canonicalNames[h.ID]; h.ID != HdrExtension && h.Name == c {
		h.Name = c // interned: the usual spelling holds no message's bytes
	}
	var val string
	if folded {
		val = unfold(raw[colon+1 : e])
	} else {
		val = trimWS(p.str(colon+1, e))
	}
	// The unfolded logical line is name ":" SP value.
	if lineLen := (ne - s) + 2 + len(val); lineLen > p.lim.MaxLineBytes {
		p.m.LineLimitHit = true
		p.flag(MalLineLimit)
		keep := p.lim.MaxLineBytes - (ne - s) - 2
		if keep < 0 {
			keep = 0
		}
		for keep > 0 && !utf8.RuneStart(val[keep]) {
			keep--
		}
		val = val[:keep]
	}
	h.Value = val
	p.m.Headers = append(p.m.Headers, h)
}

// mayHoldCtl reports whether one of the eight bytes of x is below 0x20 or
// is 0x7f (the classic "has a byte less than n" and "has a zero byte" word
// tricks; exact for bytes below 0x80, and a byte of 0x80 or more cannot
// raise a false negative: it only sends the scan byte by byte).
func mayHoldCtl(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	less := (x - ones*0x20) & ^x & highs
	y := x ^ (ones * 0x7f)
	del := (y - ones) & ^y & highs
	return less|del != 0
}

// foldBreak reports whether the CR or LF at k is part of a line fold (CRLF
// or LF followed by whitespace).
func foldBreak(raw []byte, k int) bool {
	if raw[k] == '\r' {
		return k+1 < len(raw) && raw[k+1] == '\n'
	}
	return k+1 < len(raw) && isWS(raw[k+1])
}

// unfold replaces each line fold (optional whitespace, CRLF or LF, and the
// whitespace that follows) with one space and trims the result (RFC 3261
// §7.3.1). Whitespace inside a line and a bare CR are kept as they are.
func unfold(v []byte) string {
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); {
		brk := 0
		switch {
		case v[i] == '\n':
			brk = 1
		case v[i] == '\r' && i+1 < len(v) && v[i+1] == '\n':
			brk = 2
		}
		if brk == 0 {
			out = append(out, v[i])
			i++
			continue
		}
		for len(out) > 0 && isWS(out[len(out)-1]) {
			out = out[:len(out)-1]
		}
		i += brk
		for i < len(v) && isWS(v[i]) {
			i++
		}
		out = append(out, ' ')
	}
	if len(out) == 0 {
		return ""
	}
	// out is private and never written again: share it.
	return trimWS(unsafe.String(&out[0], len(out)))
}

// body sets Body from offset i using Content-Length.
func (p *parser) body(i int) {
	m := p.m
	if i > len(p.raw) {
		i = len(p.raw)
	}
	avail := len(p.raw) - i
	if v, ok := m.Header(HdrContentLength); ok {
		n, ok := atoiBounded(trimSpaceFast(v), 1<<31-1)
		if !ok {
			p.flag(MalBadContentLength)
		} else {
			m.ContentLength = n
		}
	}
	switch {
	case m.ContentLength < 0:
		m.Body = p.raw[i:len(p.raw):len(p.raw)]
	case m.ContentLength > avail:
		m.BodyTruncated = true
		p.flag(MalBodyTruncated)
		m.Body = p.raw[i:len(p.raw):len(p.raw)]
	default:
		end := i + m.ContentLength
		m.Body = p.raw[i:end:end]
		m.TrailingBytes = len(p.raw) - end
		m.Raw = p.raw[:end:end]
	}
	if len(m.Body) == 0 {
		m.Body = nil
	}
}

// interpret fills the typed fields from the headers.
func (p *parser) interpret() {
	m := p.m
	var haveCallID, haveFrom, haveTo, haveCSeq bool
	var ua, server string
	var haveUA bool
	hs := m.Headers
	for i := range hs {
		h := &hs[i]
		switch h.ID {
		case HdrCallID:
			if !haveCallID && h.Value != "" {
				m.CallID, haveCallID = h.Value, true
			}
		case HdrFrom:
			if !haveFrom {
				haveFrom = true
				if err := parseNameAddr(&m.From, h.Value); err != nil {
					p.flag(MalBadFrom)
				}
			}
		case HdrTo:
			if !haveTo {
				haveTo = true
				if err := parseNameAddr(&m.To, h.Value); err != nil {
					p.flag(MalBadTo)
				}
			}
		case HdrCSeq:
			if !haveCSeq {
				haveCSeq = true
				cs, capped, err := parseCSeq(h.Value)
				m.CSeq = cs
				if err != nil {
					p.flag(MalBadCSeq)
				}
				if capped {
					p.flag(MalMethodLimit)
				}
			}
		case HdrVia:
			for e, k := nextElem(h.Value, 0); e != ""; e, k = nextElem(h.Value, k) {
				m.Vias = append(m.Vias, Via{})
				if err := parseVia(&m.Vias[len(m.Vias)-1], e); err != nil {
					p.flag(MalBadVia)
				}
			}
			if trimSpaceFast(h.Value) == "" {
				p.flag(MalBadVia)
			}
		case HdrUserAgent:
			if !haveUA {
				ua, haveUA = h.Value, true
			}
		case HdrServer:
			if server == "" {
				server = h.Value
			}
		case HdrContentType:
			if m.ContentType == "" {
				m.ContentType = MediaType(h.Value)
			}
		case HdrMaxForwards:
			if m.MaxForwards < 0 {
				n, ok := atoiBounded(trimSpaceFast(h.Value), 1<<31-1)
				if ok {
					m.MaxForwards = n
				} else {
					p.flag(MalBadMaxForwards)
				}
			}
		}
	}
	if haveUA {
		m.UserAgent = ua
	} else if !m.IsRequest {
		m.UserAgent = server
	}
	if !haveCallID {
		p.flag(MalMissingCallID)
	}
	if !haveCSeq {
		p.flag(MalMissingCSeq)
	}
	if !haveFrom {
		p.flag(MalMissingFrom)
	}
	if !haveTo {
		p.flag(MalMissingTo)
	}
	if len(m.Vias) == 0 && !p.seenFlag(MalBadVia) {
		p.flag(MalMissingVia)
	}
}

func (p *parser) seenFlag(r string) bool {
	for _, x := range p.m.Malformed {
		if x == r {
			return true
		}
	}
	return false
}

// MediaType returns the media type of a Content-Type value, lower-cased,
// parameters and whitespace dropped ("application/sdp").
func MediaType(contentType string) string {
	v := contentType
	if i := strings.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	v = trimSpaceFast(v)
	for i := 0; i < len(v); i++ {
		if 'A' <= v[i] && v[i] <= 'Z' {
			return strings.ToLower(v)
		}
	}
	return v
}

// IsWellFormed reports whether nothing was flagged.
func (m *Message) IsWellFormed() bool { return len(m.Malformed) == 0 }

// String returns a short description: "INVITE sip:bob@x" or "200 OK".
func (m *Message) String() string {
	if m.IsRequest {
		return m.Method + " " + m.RequestURI
	}
	return strconv.Itoa(m.StatusCode) + " " + m.Reason
}
