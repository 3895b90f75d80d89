package sip

import "strings"

// Fast paths for the forms almost every message uses. Each one either
// returns exactly what the full parser (ParseNameAddr, ParseVia) returns
// with no error, or ok=false, and the caller runs the full parser: they
// decide nothing the full parser would decide differently
// (FuzzFastPathsMatchFullParsers; TestParsed*MatchTheGolden for whole messages).

// isPrint reports whether c is printable ASCII other than space: a byte
// trimSpaceFast never trims and that starts no multi-byte rune.
func isPrint(c byte) bool { return c > ' ' && c < 0x7f }

// parseNameAddr is ParseNameAddr into *dst, with a fast path for
// `"Display" <sip:user@host:port>;tag=x` and `<sip:user@host>` values
// (RFC 3261 §20.10, §20.20, §20.39 name-addr with a plain display name).
func parseNameAddr(dst *NameAddr, v string) error {
	if fastNameAddr(dst, v) {
		return nil
	}
	na, err := ParseNameAddr(v)
	*dst = na
	return err
}

// fastNameAddr parses the common name-addr forms (see parseNameAddr) into
// every field of *dst; false for anything else, including anything
// ParseNameAddr would flag (*dst is then partly written). It finds the
// same delimiters ParseNameAddr and ParseURI find, with vectorized or
// word-at-a-time scans, and checks only what decides that the full parser
// would answer the same: the bytes where it would trim, bracket or split.
func fastNameAddr(dst *NameAddr, v string) bool {
	n := len(v)
	if n < 3 || !isPrint(v[0]) || !isPrint(v[n-1]) {
		return false
	}
	i, display := 0, ""
	switch v[0] {
	case '<':
	case '"':
		// A quoted display name without quoted-pairs, spaces, then '<'.
		q := strings.IndexByte(v[1:], '"') + 1
		if q <= 0 || strings.IndexByte(v[1:q], '\\') >= 0 {
			return false
		}
		display = v[1:q]
		i = q + 1
		for i < n && v[i] == ' ' {
			i++
		}
		if i >= n || v[i] != '<' {
			return false
		}
	default:
		return false
	}
	u0 := i + 1
	var scheme string
	switch {
	case strings.HasPrefix(v[u0:], "sip:"):
		scheme, i = "sip", u0+4
	case strings.HasPrefix(v[u0:], "sips:"):
		scheme, i = "sips", u0+5
	default:
		return false
	}
	g := strings.IndexByte(v[i:], '>')
	if g < 0 {
		return false
	}
	gt := i + g
	if !isPrint(v[gt-1]) {
		return false // ParseNameAddr would trim the URI
	}
	// As ParseURI: the user part ends at the first '@' and drops a
	// password; the host ends at ';', '?' or ':'.
	rest, user := v[i:gt], ""
	if at := strings.IndexByte(rest, '@'); at >= 0 {
		user = rest[:at]
		if c := strings.IndexByte(user, ':'); c >= 0 {
			user = user[:c]
		}
		rest = rest[at+1:]
	}
	e := indexURIHostEnd(rest)
	if e == 0 || rest[0] == '[' || !isPrint(rest[0]) || !isPrint(rest[e-1]) {
		return false // no host, an IPv6 reference, or one ParseURI would trim
	}
	host, port := rest[:e], 0
	if e < len(rest) && rest[e] == ':' {
		var ok bool
		if port, e, ok = fastPort(rest, e+1); !ok {
			return false
		}
		if e < len(rest) && rest[e] != ';' && rest[e] != '?' {
			return false
		}
	}
	params, tag := v[gt+1:], ""
	if params != "" {
		if params[0] != ';' {
			return false
		}
		var ok bool
		if tag, ok = leadingTag(params); !ok {
			tag, _ = ParamValue(params, "tag")
		}
	}
	dst.Display = display
	dst.URI = v[u0:gt]
	dst.Scheme = scheme
	dst.User = user
	dst.Host = host
	dst.Port = port
	dst.Tag = tag
	dst.Params = params
	return true
}

// leadingTag returns the value of a ";tag=" parameter that comes first in
// params, when its value is a plain run of printable bytes (no quotes,
// backslashes or whitespace): the value ParamValue(params, "tag") returns.
func leadingTag(params string) (string, bool) {
	if len(params) < 6 || params[:5] != ";tag=" {
		return "", false
	}
	i := plainEnd(params, 5)
	if i == 5 || (i < len(params) && params[i] != ';') {
		return "", false
	}
	return params[5:i], true
}

// plainValueChar: a byte of a parameter value that needs no unquoting
// (printable ASCII but for ';', '"' and '\').
var plainValueChar = printExcept(";\"\\")

func printExcept(not string) (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = isPrint(byte(c)) && !strings.ContainsRune(not, rune(c))
	}
	return t
}

// fastPort reads 1 to 5 digits at s[i:] worth 1 to 65535 and returns the
// port and the offset after the digits.
func fastPort(s string, i int) (port, next int, ok bool) {
	start := i
	for i < len(s) && isDigit(s[i]) {
		port = port*10 + int(s[i]-'0')
		i++
	}
	if i == start || i-start > 5 || port == 0 || port > 65535 {
		return 0, i, false
	}
	return port, i, true
}

// parseVia is ParseVia into *dst, with a fast path for
// "SIP/2.0/UDP host:port;branch=z9hG4bK..;rport" (RFC 3261 §20.42) with
// plain parameters.
func parseVia(dst *Via, s string) error {
	if fastVia(dst, s) {
		return nil
	}
	v, err := ParseVia(s)
	*dst = v
	return err
}

// fastVia parses a Via element of the common form (see parseVia); ok=false
// for anything else, including anything ParseVia would flag. s is trimmed
// (nextElem's element). *dst must be the zero Via; it is partly written
// when fastVia returns false.
func fastVia(dst *Via, s string) bool {
	v := dst
	const proto = "SIP/2.0/"
	if len(s) < len(proto)+3 || s[:len(proto)] != proto || !isPrint(s[len(s)-1]) {
		return false
	}
	i := len(proto)
	for i < len(s) && 'A' <= s[i] && s[i] <= 'Z' {
		i++
	}
	if i == len(proto) || i >= len(s) || s[i] != ' ' {
		return false
	}
	v.Protocol, v.Transport = s[:i], s[len(proto):i]
	for i < len(s) && s[i] == ' ' {
		i++
	}
	// The host ends at ';' or ':' (ParseVia splits there); it must not be
	// an IPv6 reference or have ends ParseVia would trim.
	h := i
	i += indexViaHostEnd(s[h:])
	if i == h || s[h] == '[' || !isPrint(s[h]) || !isPrint(s[i-1]) {
		return false
	}
	v.Host = s[h:i]
	if i < len(s) && s[i] == ':' {
		var ok bool
		if v.Port, i, ok = fastPort(s, i+1); !ok {
			return false
		}
	}
	for i < len(s) {
		if s[i] != ';' {
			return false
		}
		i++
		k := i
		for i < len(s) && isTokenChar[s[i]] {
			i++
		}
		if i == k {
			return false
		}
		name := s[k:i]
		val := ""
		if i < len(s) && s[i] == '=' {
			i++
			e := plainEnd(s, i)
			val, i = s[i:e], e
		}
		switch len(name) {
		case 6:
			if name == "branch" || strings.EqualFold(name, "branch") {
				v.Branch = val
			}
		case 8:
			if name == "received" || strings.EqualFold(name, "received") {
				v.Received = val
			}
		case 5:
			if name == "rport" || strings.EqualFold(name, "rport") {
				v.RPort, v.HasRPort = val, true
			}
		}
	}
	return true
}
