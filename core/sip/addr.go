package sip

import (
	"errors"
	"strings"
)

// URI is a parsed SIP, SIPS or tel URI (other schemes keep only Scheme and
// the raw text).
type URI struct {
	Raw     string // the URI as given
	Scheme  string // lower-cased: sip, sips, tel, urn, ...
	User    string // user part (tel: the number); "" when absent; no password
	Host    string // host, IPv6 brackets removed; "" when absent
	Port    int    // 0 when absent
	Params  string // URI parameters, raw, with the leading ';' ("" when none)
	Headers string // URI headers after '?', raw, without the '?'
}

// Param returns a URI parameter's value (case-insensitive name) and whether
// it is present. A flag parameter (";lr") is present with value "".
func (u URI) Param(name string) (string, bool) { return ParamValue(u.Params, name) }

var (
	errEmptyURI  = errors.New("empty uri")
	errNoScheme  = errors.New("uri has no scheme")
	errBadPort   = errors.New("uri has a bad port")
	errNoURI     = errors.New("no uri in name-addr")
	errUnclosed  = errors.New("unclosed angle bracket")
	errEmptyHost = errors.New("uri has no host")
)

// ParseURI parses a URI. sip/sips: [user[:password]@]host[:port][;params][?headers]
// (the password is dropped); tel: number[;params]. Other schemes are returned
// with Scheme and Raw only. The error says what is wrong; the fields read
// so far are still returned.
func ParseURI(s string) (URI, error) {
	s = trimSpaceFast(s)
	u := URI{Raw: s}
	if s == "" {
		return u, errEmptyURI
	}
	colon := strings.IndexByte(s, ':')
	if colon <= 0 || !isScheme(s[:colon]) {
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
	// hostport ends at ';' or '?'.
	hp := rest
	if i := indexParamsOrHeaders(rest); i >= 0 {
		hp, rest = rest[:i], rest[i:]
	} else {
		rest = ""
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		u.Params, u.Headers = rest[:q], rest[q+1:]
	} else {
		u.Params = rest
	}
	host, port, err := splitHostPort(hp)
	u.Host, u.Port = host, port
	if err != nil {
		return u, err
	}
	if host == "" {
		return u, errEmptyHost
	}
	return u, nil
}

// indexParamsOrHeaders returns the index of the first ';' or '?' in s, -1
// when there is none.
func indexParamsOrHeaders(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == ';' || s[i] == '?' {
			return i
		}
	}
	return -1
}

func isScheme(s string) bool {
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

// splitHostPort splits "host[:port]" / "[v6]:port". Port 0 when absent.
func splitHostPort(hp string) (string, int, error) {
	hp = trimSpaceFast(hp)
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
		p, ok := parsePort(strings.TrimSpace(rest[1:]))
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
		// Bare IPv6 address without brackets: tolerate, no port.
		return hp, 0, nil
	}
	host := trimSpaceFast(hp[:c])
	p, ok := parsePort(trimSpaceFast(hp[c+1:]))
	if !ok {
		return host, 0, errBadPort
	}
	return host, p, nil
}

// parsePort parses 1..65535.
func parsePort(s string) (int, bool) {
	n, ok := atoiBounded(s, 65535)
	if !ok || n == 0 {
		return 0, false
	}
	return n, true
}

// atoiBounded parses a non-empty run of decimal digits no larger than max.
func atoiBounded(s string, max int) (int, bool) {
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

// ParseNameAddr parses a From/To/Contact/Route-style value (RFC 3261 §20):
// `"Display" <uri>;params`, `Display <uri>;params`, or a bare `uri;params`
// where, without angle brackets, every ';' parameter belongs to the header,
// not to the URI. The error says what is wrong; fields read so far are
// still filled.
func ParseNameAddr(value string) (NameAddr, error) {
	v := trimSpaceFast(value)
	var na NameAddr
	if v == "" {
		return na, errNoURI
	}
	if v == "*" {
		na.URI = "*"
		return na, nil
	}
	lt := indexUnquoted(v, '<')
	if lt >= 0 {
		na.Display = unquoteDisplay(strings.TrimSpace(v[:lt]))
		gt := strings.IndexByte(v[lt+1:], '>')
		if gt < 0 {
			na.URI = strings.TrimSpace(v[lt+1:])
			fillFromURI(&na)
			return na, errUnclosed
		}
		na.URI = trimSpaceFast(v[lt+1 : lt+1+gt])
		na.Params = trimSpaceFast(v[lt+1+gt+1:])
	} else {
		if i := strings.IndexByte(v, ';'); i >= 0 {
			na.URI, na.Params = strings.TrimSpace(v[:i]), v[i:]
		} else {
			na.URI = v
		}
	}
	na.Tag, _ = ParamValue(na.Params, "tag")
	if na.URI == "" {
		return na, errNoURI
	}
	return na, fillFromURI(&na)
}

func fillFromURI(na *NameAddr) error {
	u, err := ParseURI(na.URI)
	na.Scheme, na.User, na.Host, na.Port = u.Scheme, u.User, u.Host, u.Port
	return err
}

// indexUnquoted returns the index of the first c outside a quoted string.
func indexUnquoted(s string, c byte) int {
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

// unquoteDisplay removes the quotes of a quoted display name and resolves
// quoted-pairs; an unquoted display name is returned as is.
func unquoteDisplay(s string) string {
	if len(s) < 2 || s[0] != '"' {
		return s
	}
	return unquote(s)
}

// unquote strips one level of double quotes and resolves backslash pairs.
// It allocates only when the string contains a backslash.
func unquote(s string) string {
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

// ParamValue finds a ';'-separated parameter in params (a string such as
// ";tag=1;lr" or "tag=1;lr") by case-insensitive name. A quoted value is
// unquoted. A flag parameter is present with value "".
func ParamValue(params, name string) (string, bool) {
	for i := 0; i < len(params); {
		var k, v string
		k, v, i = nextParam(params, i)
		if i < 0 {
			break
		}
		if strings.EqualFold(k, name) {
			return unquote(v), true
		}
	}
	return "", false
}

// eachParam calls fn for each name=value parameter of a ';'-separated list,
// stopping when fn returns false. Semicolons inside quotes do not split.
func eachParam(params string, fn func(k, v string) bool) {
	for i := 0; i < len(params); {
		var k, v string
		k, v, i = nextParam(params, i)
		if i < 0 {
			return
		}
		if !fn(k, v) {
			return
		}
	}
}

// nextParam reads the parameter of the ';'-separated list params that
// starts at or after offset i: its name and value (each trimmed; value ""
// for a flag) and the offset to continue from (len(params) at the end). A
// semicolon inside quotes does not split. When only separators remain it
// returns next = -1 and no parameter. It does not allocate.
func nextParam(params string, i int) (k, v string, next int) {
	// skip separators
	for i < len(params) && (params[i] == ';' || isWS(params[i])) {
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
	// The first '=' of the parameter, quoted or not, splits it.
	if eq := strings.IndexByte(params[i:j], '='); eq >= 0 {
		eq += i
		k, v = params[i:eq], params[eq+1:j]
	} else {
		k = params[i:j]
	}
	return trimSpaceFast(k), trimSpaceFast(v), j
}

// trimSpaceFast is strings.TrimSpace with a shortcut for the usual case of
// nothing to trim.
func trimSpaceFast(s string) string {
	if s == "" || (s[0] > ' ' && s[0] < 0x80 && s[len(s)-1] > ' ' && s[len(s)-1] < 0x80) {
		return s
	}
	return strings.TrimSpace(s)
}

// SplitList splits a comma-separated header value into its elements,
// ignoring commas inside double quotes (with backslash escapes) and inside
// angle brackets. Elements are trimmed; empty elements are dropped. Whether
// a header is a list is the caller's choice (Date and WWW-Authenticate
// values contain commas that do not separate elements).
func SplitList(value string) []string {
	var out []string
	eachElem(value, func(e string) bool {
		out = append(out, e)
		return true
	})
	return out
}

// eachElem calls fn for each trimmed, non-empty element of a comma-separated
// list (see SplitList), stopping when fn returns false. It does not allocate.
func eachElem(value string, fn func(string) bool) {
	for e, k := nextElem(value, 0); e != ""; e, k = nextElem(value, k) {
		if !fn(e) {
			return
		}
	}
}

// nextElem returns the first non-empty element of the comma-separated list
// value[i:] (trimmed; commas inside double quotes, with backslash escapes,
// and inside angle brackets do not separate) and the offset to continue
// from; "" when there is none. It does not allocate.
func nextElem(value string, i int) (string, int) {
	if i == 0 && strings.IndexByte(value, ',') < 0 {
		// No comma: the whole value is the one element (the usual Via,
		// Contact), whatever quotes or brackets it holds.
		return trimSpaceFast(value), len(value) + 1
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
		if e := trimSpaceFast(value[start:end]); e != "" {
			return e, i
		}
	}
	return "", i
}
