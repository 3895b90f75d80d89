// The parser as it was before its fast paths (commit 193b9b3: parse.go,
// addr.go, via.go, startline.go, headers.go), every top-level function and
// variable renamed with a "ref" prefix and comments dropped. It is the
// reference the differential tests (reference_diff_test.go) compare the
// parser against: the same bytes must give the same Message, field for
// field. Do not change it to follow the parser.

package sip

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf8"
	"unsafe"
)

func refParseLimits(b []byte, lim Limits) (*Message, error) {
	m := new(Message)
	if err := refparseInto(m, b, lim); err != nil {
		return nil, err
	}
	return m, nil
}

func refparseInto(m *Message, b []byte, lim Limits) error {
	if lim.MaxHeaders <= 0 {
		lim.MaxHeaders = MaxHeaders
	}
	if lim.MaxLineBytes <= 0 {
		lim.MaxLineBytes = MaxLineBytes
	}
	sl, ok := reffindStartLine(b)
	if !ok {
		return ErrNotSIP
	}

	raw := make([]byte, len(b)-sl.off)
	copy(raw, b[sl.off:])
	m.Raw = raw
	m.JunkPrefixBytes = sl.off
	m.MaxForwards = -1
	m.ContentLength = -1
	m.lim = limitsRef(lim)
	p := refparser{m: m, raw: raw, lim: lim}
	if sl.off > 0 && !refonlyCRLF(b[:sl.off]) {
		p.flag(MalJunkBeforeStartLine)
	}
	p.startLine(sl, sl.off)
	end := p.headers(sl.next - sl.off)
	p.body(end)
	p.interpret()
	if len(m.Vias) == 0 {
		m.Vias = nil
	}
	return nil
}

func refonlyCRLF(b []byte) bool {
	for _, c := range b {
		if c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

type refparser struct {
	m   *Message
	raw []byte
	lim Limits
}

func (p *refparser) str(i, j int) string {
	if j <= i {
		return ""
	}
	return unsafe.String(&p.raw[i], j-i)
}

func (p *refparser) flag(reason string) {
	for _, r := range p.m.Malformed {
		if r == reason {
			return
		}
	}
	p.m.Malformed = append(p.m.Malformed, reason)
}

func (p *refparser) startLine(sl startLine, shift int) {
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
		m.Method = refinternMethod(refupperASCII(p.str(m0, m1)))
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

func (p *refparser) headers(i int) int {
	m := p.m
	raw := p.raw
	if m.Headers == nil {

		n := bytes.Count(raw[i:], []byte{'\n'}) + 1
		m.Headers = make([]Header, 0, min(n, p.lim.MaxHeaders, maxPresize))
	}
	for i < len(raw) {
		lineStart := i
		end, next := reflineEnd(raw, i)
		ce := end
		if ce > lineStart && raw[ce-1] == '\r' {
			ce--
		}
		if ce == lineStart {
			return next
		}
		if refisWS(raw[lineStart]) {

			p.flag(MalOrphanContinuation)
			i = next
			continue
		}

		logicalEnd, folded := ce, false
		for next < len(raw) && refisWS(raw[next]) {
			e2, n2 := reflineEnd(raw, next)
			c2 := e2
			if c2 > next && raw[c2-1] == '\r' {
				c2--
			}

			logicalEnd, folded = c2, true
			next = n2
		}
		i = next
		if len(m.Headers) >= p.lim.MaxHeaders {
			if !m.HeaderLimitHit {
				m.HeaderLimitHit = true
				p.flag(MalHeaderLimit)
			}
			continue
		}
		p.header(lineStart, logicalEnd, folded)
	}
	p.flag(MalNoEndOfHeaders)
	return len(raw)
}

func (p *refparser) header(s, e int, folded bool) {
	raw := p.raw
	colon := bytes.IndexByte(raw[s:e], ':')
	if colon < 0 {
		p.flag(MalNoColon)
		return
	}
	colon += s
	ne := colon
	for ne > s && refisWS(raw[ne-1]) {
		ne--
	}
	if ne == s {
		p.flag(MalEmptyName)
		return
	}

	k := s
	for ; k+8 <= e; k += 8 {
		if refmayHoldCtl(binary.LittleEndian.Uint64(raw[k:])) {
			break
		}
	}
	for ; k < e; k++ {
		c := raw[k]
		if refisCtl[c] {
			if (c == '\r' || c == '\n') && folded && reffoldBreak(raw, k) {
				continue
			}
			p.flag(MalControlByte)
			break
		}
	}
	h := Header{
		ID:    reflookupHeaderBytes(raw[s:ne]),
		Name:  p.str(s, ne),
		Start: s,
		End:   e,
	}
	if c := refcanonicalNames[h.ID]; h.ID != HdrExtension && h.Name == c {
		h.Name = c
	}
	var val string
	if folded {
		val = refunfold(raw[colon+1 : e])
	} else {
		val = reftrimWS(p.str(colon+1, e))
	}

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

func refmayHoldCtl(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	less := (x - ones*0x20) & ^x & highs
	y := x ^ (ones * 0x7f)
	del := (y - ones) & ^y & highs
	return less|del != 0
}

func reffoldBreak(raw []byte, k int) bool {
	if raw[k] == '\r' {
		return k+1 < len(raw) && raw[k+1] == '\n'
	}
	return k+1 < len(raw) && refisWS(raw[k+1])
}

func refunfold(v []byte) string {
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
		for len(out) > 0 && refisWS(out[len(out)-1]) {
			out = out[:len(out)-1]
		}
		i += brk
		for i < len(v) && refisWS(v[i]) {
			i++
		}
		out = append(out, ' ')
	}
	if len(out) == 0 {
		return ""
	}

	return reftrimWS(unsafe.String(&out[0], len(out)))
}

func (p *refparser) body(i int) {
	m := p.m
	if i > len(p.raw) {
		i = len(p.raw)
	}
	avail := len(p.raw) - i
	if v, ok := m.Header(HdrContentLength); ok {
		n, ok := refatoiBounded(reftrimSpaceFast(v), 1<<31-1)
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

func (p *refparser) interpret() {
	m := p.m
	var haveCallID, haveFrom, haveTo, haveCSeq bool
	var ua, server string
	var haveUA bool
	for i := range m.Headers {
		h := &m.Headers[i]
		switch h.ID {
		case HdrCallID:
			if !haveCallID && h.Value != "" {
				m.CallID, haveCallID = h.Value, true
			}
		case HdrFrom:
			if !haveFrom {
				haveFrom = true
				na, err := refParseNameAddr(h.Value)
				m.From = na
				if err != nil {
					p.flag(MalBadFrom)
				}
			}
		case HdrTo:
			if !haveTo {
				haveTo = true
				na, err := refParseNameAddr(h.Value)
				m.To = na
				if err != nil {
					p.flag(MalBadTo)
				}
			}
		case HdrCSeq:
			if !haveCSeq {
				haveCSeq = true
				cs, capped, err := refparseCSeq(h.Value)
				m.CSeq = cs
				if err != nil {
					p.flag(MalBadCSeq)
				}
				if capped {
					p.flag(MalMethodLimit)
				}
			}
		case HdrVia:
			for e, k := refnextElem(h.Value, 0); e != ""; e, k = refnextElem(h.Value, k) {
				v, err := refParseVia(e)
				if err != nil {
					p.flag(MalBadVia)
				}
				m.Vias = append(m.Vias, v)
			}
			if reftrimSpaceFast(h.Value) == "" {
				p.flag(MalBadVia)
			}
		case HdrContact:
			if m.Contact == nil {
				if e, _ := refnextElem(h.Value, 0); e != "" {
					m.contact, _ = refParseNameAddr(e)
					m.Contact = &m.contact
				}
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
				m.ContentType = refMediaType(h.Value)
			}
		case HdrMaxForwards:
			if m.MaxForwards < 0 {
				n, ok := refatoiBounded(reftrimSpaceFast(h.Value), 1<<31-1)
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

func (p *refparser) seenFlag(r string) bool {
	for _, x := range p.m.Malformed {
		if x == r {
			return true
		}
	}
	return false
}

func refMediaType(contentType string) string {
	v := contentType
	if i := strings.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	v = reftrimSpaceFast(v)
	for i := 0; i < len(v); i++ {
		if 'A' <= v[i] && v[i] <= 'Z' {
			return strings.ToLower(v)
		}
	}
	return v
}

func refParseURI(s string) (URI, error) {
	s = reftrimSpaceFast(s)
	u := URI{Raw: s}
	if s == "" {
		return u, errEmptyURI
	}
	colon := strings.IndexByte(s, ':')
	if colon <= 0 || !refisScheme(s[:colon]) {
		return u, errNoScheme
	}
	u.Scheme = strings.ToLower(s[:colon])
	rest := s[colon+1:]
	switch u.Scheme {
	case "sip", "sips":
	case "tel":
		if i := strings.IndexByte(rest, ';'); i >= 0 {
			u.User, u.Params = rest[:i], rest[i:]
		} else {
			u.User = rest
		}
		return u, nil
	default:
		return u, nil
	}
	if at := strings.IndexByte(rest, '@'); at >= 0 {
		user := rest[:at]
		if c := strings.IndexByte(user, ':'); c >= 0 {
			user = user[:c]
		}
		u.User = user
		rest = rest[at+1:]
	}

	hp := rest
	if i := refindexParamsOrHeaders(rest); i >= 0 {
		hp, rest = rest[:i], rest[i:]
	} else {
		rest = ""
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		u.Params, u.Headers = rest[:q], rest[q+1:]
	} else {
		u.Params = rest
	}
	host, port, err := refsplitHostPort(hp)
	u.Host, u.Port = host, port
	if err != nil {
		return u, err
	}
	if host == "" {
		return u, errEmptyHost
	}
	return u, nil
}

func refindexParamsOrHeaders(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == ';' || s[i] == '?' {
			return i
		}
	}
	return -1
}

func refisScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

func refsplitHostPort(hp string) (string, int, error) {
	hp = reftrimSpaceFast(hp)
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return hp[1:], 0, errUnclosed
		}
		host, rest := hp[1:end], hp[end+1:]
		if rest == "" {
			return host, 0, nil
		}
		if rest[0] != ':' {
			return host, 0, errBadPort
		}
		p, ok := refparsePort(strings.TrimSpace(rest[1:]))
		if !ok {
			return host, 0, errBadPort
		}
		return host, p, nil
	}
	c := strings.IndexByte(hp, ':')
	if c < 0 {
		return hp, 0, nil
	}
	if strings.IndexByte(hp[c+1:], ':') >= 0 {

		return hp, 0, nil
	}
	host := reftrimSpaceFast(hp[:c])
	p, ok := refparsePort(reftrimSpaceFast(hp[c+1:]))
	if !ok {
		return host, 0, errBadPort
	}
	return host, p, nil
}

func refparsePort(s string) (int, bool) {
	n, ok := refatoiBounded(s, 65535)
	if !ok || n == 0 {
		return 0, false
	}
	return n, true
}

func refatoiBounded(s string, max int) (int, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
		if n > max {
			return 0, false
		}
	}
	return n, true
}

func refParseNameAddr(value string) (NameAddr, error) {
	v := reftrimSpaceFast(value)
	var na NameAddr
	if v == "" {
		return na, errNoURI
	}
	if v == "*" {
		na.URI = "*"
		return na, nil
	}
	lt := refindexUnquoted(v, '<')
	if lt >= 0 {
		na.Display = refunquoteDisplay(strings.TrimSpace(v[:lt]))
		gt := strings.IndexByte(v[lt+1:], '>')
		if gt < 0 {
			na.URI = strings.TrimSpace(v[lt+1:])
			reffillFromURI(&na)
			return na, errUnclosed
		}
		na.URI = reftrimSpaceFast(v[lt+1 : lt+1+gt])
		na.Params = reftrimSpaceFast(v[lt+1+gt+1:])
	} else {
		if i := strings.IndexByte(v, ';'); i >= 0 {
			na.URI, na.Params = strings.TrimSpace(v[:i]), v[i:]
		} else {
			na.URI = v
		}
	}
	na.Tag, _ = refParamValue(na.Params, "tag")
	if na.URI == "" {
		return na, errNoURI
	}
	return na, reffillFromURI(&na)
}

func reffillFromURI(na *NameAddr) error {
	u, err := refParseURI(na.URI)
	na.Scheme, na.User, na.Host, na.Port = u.Scheme, u.User, u.Host, u.Port
	return err
}

func refindexUnquoted(s string, c byte) int {
	inQ := false
	for i := 0; i < len(s); i++ {
		switch {
		case inQ && s[i] == '\\':
			i++
		case s[i] == '"':
			inQ = !inQ
		case !inQ && s[i] == c:
			return i
		}
	}
	return -1
}

func refunquoteDisplay(s string) string {
	if len(s) < 2 || s[0] != '"' {
		return s
	}
	return refunquote(s)
}

func refunquote(s string) string {
	if len(s) < 2 || s[0] != '"' {
		return s
	}
	inner := s[1:]
	if n := len(inner); n > 0 && inner[n-1] == '"' && (n < 2 || inner[n-2] != '\\') {
		inner = inner[:n-1]
	}
	if strings.IndexByte(inner, '\\') < 0 {
		return inner
	}
	var b strings.Builder
	b.Grow(len(inner))
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\\' && i+1 < len(inner) {
			i++
		}
		b.WriteByte(inner[i])
	}
	return b.String()
}

func refParamValue(params, name string) (string, bool) {
	for i := 0; i < len(params); {
		var k, v string
		k, v, i = refnextParam(params, i)
		if i < 0 {
			break
		}
		if strings.EqualFold(k, name) {
			return refunquote(v), true
		}
	}
	return "", false
}

func refnextParam(params string, i int) (k, v string, next int) {

	for i < len(params) && (params[i] == ';' || refisWS(params[i])) {
		i++
	}
	if i >= len(params) {
		return "", "", -1
	}
	j := i
	inQ := false
	for j < len(params) {
		c := params[j]
		if inQ && c == '\\' {
			j += 2
			continue
		}
		if c == '"' {
			inQ = !inQ
		} else if c == ';' && !inQ {
			break
		}
		j++
	}
	if j > len(params) {
		j = len(params)
	}

	if eq := strings.IndexByte(params[i:j], '='); eq >= 0 {
		eq += i
		k, v = params[i:eq], params[eq+1:j]
	} else {
		k = params[i:j]
	}
	return reftrimSpaceFast(k), reftrimSpaceFast(v), j
}

func reftrimSpaceFast(s string) string {
	if s == "" || (s[0] > ' ' && s[0] < 0x80 && s[len(s)-1] > ' ' && s[len(s)-1] < 0x80) {
		return s
	}
	return strings.TrimSpace(s)
}

func refnextElem(value string, i int) (string, int) {
	if i == 0 && strings.IndexByte(value, ',') < 0 {

		return reftrimSpaceFast(value), len(value) + 1
	}
	for i < len(value) {
		inQ, depth, start := false, 0, i
	scan:
		for ; i < len(value); i++ {
			c := value[i]
			switch {
			case inQ && c == '\\':
				i++
			case c == '"':
				inQ = !inQ
			case inQ:
			case c == '<':
				depth++
			case c == '>':
				if depth > 0 {
					depth--
				}
			case c == ',' && depth == 0:
				break scan
			}
		}
		end := min(i, len(value))
		i = end + 1
		if e := reftrimSpaceFast(value[start:end]); e != "" {
			return e, i
		}
	}
	return "", i
}

func refParseVia(s string) (Via, error) {
	var v Via
	s = reftrimSpaceFast(s)

	parts := [3]string{}
	rest := s
	for k := 0; k < 3; k++ {
		rest = reftrimLeftWS(rest)
		if k > 0 {
			if !strings.HasPrefix(rest, "/") {
				return v, errBadVia
			}
			rest = reftrimLeftWS(rest[1:])
		}
		j := 0
		for j < len(rest) && refisTokenChar[rest[j]] {
			j++
		}
		if j == 0 {
			return v, errBadVia
		}
		parts[k], rest = rest[:j], rest[j:]
	}
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return v, errBadVia
	}
	if len(s)-len(rest) == len(parts[0])+len(parts[1])+len(parts[2])+2 {
		v.Protocol = s[:len(s)-len(rest)]
	} else {
		v.Protocol = parts[0] + "/" + parts[1] + "/" + parts[2]
	}
	v.Transport = strings.ToUpper(parts[2])
	rest = reftrimSpaceFast(rest)
	hp, params := rest, ""
	if i := strings.IndexByte(rest, ';'); i >= 0 {
		hp, params = rest[:i], rest[i:]
	}
	host, port, err := refsplitHostPort(hp)
	v.Host, v.Port = host, port
	for i := 0; i < len(params); {
		var k, val string
		if k, val, i = refnextParam(params, i); i < 0 {
			break
		}
		switch {
		case strings.EqualFold(k, "branch"):
			v.Branch = refunquote(val)
		case strings.EqualFold(k, "received"):
			v.Received = refunquote(val)
		case strings.EqualFold(k, "rport"):
			v.RPort, v.HasRPort = val, true
		}
	}
	if err != nil {
		return v, err
	}
	if host == "" {
		return v, errEmptyHost
	}
	return v, nil
}

func refparseCSeq(s string) (cs CSeq, capped bool, err error) {
	s = reftrimSpaceFast(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, ok := refatoiBounded(s[:i], 1<<32-1)
	if !ok || i == len(s) || !refisWS(s[i]) {
		return CSeq{}, false, errBadCSeq
	}
	m := reftrimSpaceFast(s[i:])
	if m == "" {
		return CSeq{}, false, errBadCSeq
	}
	for j := 0; j < len(m); j++ {
		if !refisTokenChar[m[j]] {
			return CSeq{}, false, errBadCSeq
		}
	}
	if len(m) > MaxMethodBytes {
		m, capped = m[:MaxMethodBytes], true
	}
	return CSeq{Number: uint32(n), Method: refinternMethod(refupperASCII(m)), Valid: true}, capped, nil
}

func reftrimLeftWS(s string) string {
	i := 0
	for i < len(s) && refisWS(s[i]) {
		i++
	}
	return s[i:]
}

func refupperASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'a' <= s[i] && s[i] <= 'z' {
			return strings.ToUpper(s)
		}
	}
	return s
}

var refisTokenChar [256]bool

var refisLeadSpace [256]bool

func init() {
	for c := 'a'; c <= 'z'; c++ {
		refisTokenChar[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		refisTokenChar[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		refisTokenChar[c] = true
	}
	for _, c := range "-.!%*_+`'~" {
		refisTokenChar[c] = true
	}
	for _, c := range "\r\n \t\x00" {
		refisLeadSpace[c] = true
	}
}

func refisWS(c byte) bool { return c == ' ' || c == '\t' }

func refsipVersionAt(b []byte, i int) bool {
	if len(b)-i < 7 {
		return false
	}
	return b[i]|0x20 == 's' && b[i+1]|0x20 == 'i' && b[i+2]|0x20 == 'p' &&
		b[i+3] == '/' && b[i+4] == '2' && b[i+5] == '.' && b[i+6] == '0'
}

func refclassifyLine(b []byte, off, end int) (startLine, bool) {

	for end > off && (refisWS(b[end-1]) || b[end-1] == '\r') {
		end--
	}
	sl := startLine{off: off, end: end}
	if refsipVersionAt(b, off) && off+7 < end && refisWS(b[off+7]) {

		i := off + 7
		for i < end && refisWS(b[i]) {
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
		if i < end && !refisWS(b[i]) {
			return sl, false
		}
		sl.code = int(d0)*100 + int(d1)*10 + int(d2)
		for i < end && refisWS(b[i]) {
			i++
		}
		sl.r0, sl.r1 = i, end
		return sl, true
	}

	i := off
	for i < end && refisTokenChar[b[i]] {
		i++
	}
	if i == off || i >= end || !refisWS(b[i]) {
		return sl, false
	}
	sl.m0, sl.m1 = off, i
	if end-i < 9 || !refsipVersionAt(b, end-7) || !refisWS(b[end-8]) {
		return sl, false
	}
	u0, u1 := i, end-8
	for u0 < u1 && refisWS(b[u0]) {
		u0++
	}
	for u1 > u0 && refisWS(b[u1-1]) {
		u1--
	}
	if u0 == u1 {
		return sl, false
	}
	sl.u0, sl.u1 = u0, u1
	sl.isRequest = true
	return sl, true
}

func reflineEnd(b []byte, i int) (end, next int) {
	j := bytes.IndexByte(b[i:], '\n')
	if j < 0 {
		return len(b), len(b)
	}
	return i + j, i + j + 1
}

func reffindStartLine(b []byte) (startLine, bool) {

	i := 0
	for i < len(b) && i < MaxJunkBytes && refisLeadSpace[b[i]] {
		i++
	}
	if i < len(b) && refisTokenChar[b[i]] {
		if refsipVersionAt(b, i) {

			if len(b)-i < 12 || !refisWS(b[i+7]) || !refisDigit(b[i+8]) || !refisDigit(b[i+9]) || !refisDigit(b[i+10]) {
				return reffindStartLineSlow(b)
			}
		}
		end, next := reflineEnd(b, i)
		if sl, ok := refclassifyLine(b, i, end); ok {
			sl.next = next
			return sl, true
		}
	}
	return reffindStartLineSlow(b)
}

func refisDigit(c byte) bool { return c >= '0' && c <= '9' }

func reffindStartLineSlow(b []byte) (startLine, bool) {

	win := b
	if len(win) > maxStartWindow {
		win = win[:maxStartWindow]
	}
	if !refhasVersion(win) {
		return startLine{}, false
	}

	if refotherProtocolFirst(b) {
		return startLine{}, false
	}
	for ls := 0; ls < len(b) && ls < MaxJunkBytes; {
		end, next := reflineEnd(b, ls)

		e := end
		for e > ls && (refisWS(b[e-1]) || b[e-1] == '\r') {
			e--
		}
		if e-ls >= 10 && refsipVersionAt(b, e-7) && refisWS(b[e-8]) {

			u1 := e - 8
			for u1 > ls && refisWS(b[u1-1]) {
				u1--
			}
			u0 := u1
			for u0 > ls && !refisWS(b[u0-1]) {
				u0--
			}
			m1 := u0
			for m1 > ls && refisWS(b[m1-1]) {
				m1--
			}
			m0 := m1
			for m0 > ls && refisTokenChar[b[m0-1]] {
				m0--
			}
			if u0 < u1 && m0 < m1 && m1 < u0 && m0 < MaxJunkBytes {
				if sl, ok := refclassifyLine(b, m0, end); ok {
					sl.next = next
					return sl, true
				}
			}
		}

		win := end
		if lim := MaxJunkBytes + 8; win > lim {
			win = lim
		}
		for from := ls; from < win; {
			k := bytes.Index(b[from:win], []byte("SIP/2.0 "))
			if k < 0 {
				break
			}
			if sl, ok := refclassifyLine(b, from+k, end); ok && !sl.isRequest {
				sl.next = next
				return sl, true
			}
			from += k + 1
		}
		ls = next
	}
	return startLine{}, false
}

func refotherProtocolFirst(b []byte) bool {
	i := 0
	for i < len(b) && i < MaxJunkBytes && refisLeadSpace[b[i]] {
		i++
	}
	end, _ := reflineEnd(b, i)
	line := bytes.TrimRight(b[i:end], " \t\r")
	isVer := func(v []byte) bool {
		return len(v) == 8 && (bytes.HasPrefix(v, []byte("HTTP/")) || bytes.HasPrefix(v, []byte("RTSP/"))) &&
			refisDigit(v[5]) && v[6] == '.' && refisDigit(v[7])
	}
	if len(line) >= 8 && isVer(line[:8]) {
		return true
	}
	if k := bytes.LastIndexByte(line, ' '); k >= 0 && isVer(line[k+1:]) {
		return true
	}
	return false
}

func refhasVersion(b []byte) bool {
	for i := 3; i+4 <= len(b); {
		k := bytes.IndexByte(b[i:len(b)-3], '/')
		if k < 0 {
			return false
		}
		j := i + k
		if b[j+1] == '2' && b[j+2] == '.' && b[j+3] == '0' && refsipVersionAt(b, j-3) {
			return true
		}
		i = j + 1
	}
	return false
}

var refisCtl = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = c != '\t'
	}
	t[0x7f] = true
	return t
}()

func reftrimWS(s string) string {
	i, j := 0, len(s)
	for i < j && refisWS(s[i]) {
		i++
	}
	for j > i && refisWS(s[j-1]) {
		j--
	}
	return s[i:j]
}

func refinternMethod(s string) string {
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

var refcanonicalNames = [hdrCount]string{
	HdrExtension:                "",
	HdrAccept:                   "Accept",
	HdrAcceptContact:            "Accept-Contact",
	HdrAllow:                    "Allow",
	HdrAllowEvents:              "Allow-Events",
	HdrAuthorization:            "Authorization",
	HdrCallID:                   "Call-ID",
	HdrContact:                  "Contact",
	HdrContentEncoding:          "Content-Encoding",
	HdrContentLength:            "Content-Length",
	HdrContentType:              "Content-Type",
	HdrCSeq:                     "CSeq",
	HdrDiversion:                "Diversion",
	HdrEvent:                    "Event",
	HdrExpires:                  "Expires",
	HdrFrom:                     "From",
	HdrHistoryInfo:              "History-Info",
	HdrIdentity:                 "Identity",
	HdrMaxForwards:              "Max-Forwards",
	HdrMinSE:                    "Min-SE",
	HdrPAssertedIdentity:        "P-Asserted-Identity",
	HdrPChargingVector:          "P-Charging-Vector",
	HdrProxyAuthenticate:        "Proxy-Authenticate",
	HdrProxyAuthorization:       "Proxy-Authorization",
	HdrRAck:                     "RAck",
	HdrReason:                   "Reason",
	HdrRecordRoute:              "Record-Route",
	HdrReferTo:                  "Refer-To",
	HdrReferredBy:               "Referred-By",
	HdrRejectContact:            "Reject-Contact",
	HdrRequestDisposition:       "Request-Disposition",
	HdrRequire:                  "Require",
	HdrRoute:                    "Route",
	HdrRSeq:                     "RSeq",
	HdrServer:                   "Server",
	HdrSessionExpires:           "Session-Expires",
	HdrSessionID:                "Session-ID",
	HdrSubject:                  "Subject",
	HdrSubscriptionState:        "Subscription-State",
	HdrSupported:                "Supported",
	HdrTo:                       "To",
	HdrUserAgent:                "User-Agent",
	HdrVia:                      "Via",
	HdrWarning:                  "Warning",
	HdrWWWAuthenticate:          "WWW-Authenticate",
	HdrXAsteriskHangupCauseCode: "X-Asterisk-HangupCauseCode",
}

var refcompactForms = [26]HeaderID{
	0:         HdrAcceptContact,
	'b' - 'a': HdrReferredBy,
	'c' - 'a': HdrContentType,
	'd' - 'a': HdrRequestDisposition,
	'e' - 'a': HdrContentEncoding,
	'f' - 'a': HdrFrom,
	'i' - 'a': HdrCallID,
	'j' - 'a': HdrRejectContact,
	'k' - 'a': HdrSupported,
	'l' - 'a': HdrContentLength,
	'm' - 'a': HdrContact,
	'o' - 'a': HdrEvent,
	'r' - 'a': HdrReferTo,
	's' - 'a': HdrSubject,
	't' - 'a': HdrTo,
	'u' - 'a': HdrAllowEvents,
	'v' - 'a': HdrVia,
	'x' - 'a': HdrSessionExpires,
	'y' - 'a': HdrIdentity,
}

func reflowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func reflookupHeaderBytes(name []byte) HeaderID {
	n := len(name)
	if n == 1 {
		c := name[0] | 0x20
		if 'a' <= c && c <= 'z' {
			return refcompactForms[c-'a']
		}
		return HdrExtension
	}
	if n == 0 || n > maxKnownName {
		return HdrExtension
	}
	c := name[0] | 0x20
	if c < 'a' || c > 'z' {
		return HdrExtension
	}
	for _, id := range refbyShape[n][c-'a'] {
		if refequalFoldLower(name, reflowerNames[id]) {
			return id
		}
	}
	return HdrExtension
}

var reflowerNames, refbyShape = func() (names [hdrCount]string, shape [maxKnownName + 1][26][]HeaderID) {
	for id := HeaderID(1); id < hdrCount; id++ {
		l := reflowerASCII(refcanonicalNames[id])
		names[id] = l
		shape[len(l)][l[0]-'a'] = append(shape[len(l)][l[0]-'a'], id)
	}
	return
}()

func refequalFoldLower(b []byte, l string) bool {
	if len(b) != len(l) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 32
		}
		if c != l[i] {
			return false
		}
	}
	return true
}
