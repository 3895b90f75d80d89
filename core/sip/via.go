package sip

import (
	"errors"
	"strings"
)

var (
	errBadVia  = errors.New("via has no sent-protocol")
	errBadCSeq = errors.New("cseq is not a number and a method")
)

// ParseVia parses one Via element (a Via header value may hold several:
// split it with SplitList first): "SIP/2.0/UDP host:port;branch=..;rport".
// Whitespace around '/' is tolerated. The error says what is wrong; the
// fields read so far are still returned.
func ParseVia(s string) (Via, error) {
	var v Via
	s = trimSpaceFast(s)
	// sent-protocol: name / version / transport, LWS allowed around '/'.
	parts := [3]string{}
	rest := s
	for k := 0; k < 3; k++ {
		rest = trimLeftWS(rest)
		if k > 0 {
			if !strings.HasPrefix(rest, "/") {
				return v, errBadVia
			}
			rest = trimLeftWS(rest[1:])
		}
		j := 0
		for j < len(rest) && isTokenChar[rest[j]] {
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
		v.Protocol = s[:len(s)-len(rest)] // no whitespace: reuse the input
	} else {
		v.Protocol = parts[0] + "/" + parts[1] + "/" + parts[2]
	}
	v.Transport = strings.ToUpper(parts[2])
	rest = trimSpaceFast(rest)
	hp, params := rest, ""
	if i := strings.IndexByte(rest, ';'); i >= 0 {
		hp, params = rest[:i], rest[i:]
	}
	host, port, err := splitHostPort(hp)
	v.Host, v.Port = host, port
	for i := 0; i < len(params); {
		var k, val string
		if k, val, i = nextParam(params, i); i < 0 {
			break
		}
		switch {
		case strings.EqualFold(k, "branch"):
			v.Branch = unquote(val)
		case strings.EqualFold(k, "received"):
			v.Received = unquote(val)
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

// ParseCSeq parses "number method". Valid is set when both are present and
// the number fits 32 bits. A method token longer than MaxMethodBytes is cut
// to it, as the request line's is.
func ParseCSeq(s string) (CSeq, error) {
	cs, _, err := parseCSeq(s)
	return cs, err
}

// parseCSeq is ParseCSeq also reporting whether the method was cut.
func parseCSeq(s string) (cs CSeq, capped bool, err error) {
	s = trimSpaceFast(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, ok := atoiBounded(s[:i], 1<<32-1)
	if !ok || i == len(s) || !isWS(s[i]) {
		return CSeq{}, false, errBadCSeq
	}
	// The method after the spaces (trimSpaceFast would hand a value
	// that starts with one to strings.TrimSpace).
	m := trimLeftWS(s[i:])
	if m == "" || !isPrint(m[0]) {
		m = trimSpaceFast(s[i:])
	}
	if m == "" {
		return CSeq{}, false, errBadCSeq
	}
	for j := 0; j < len(m); j++ {
		if !isTokenChar[m[j]] {
			return CSeq{}, false, errBadCSeq
		}
	}
	if len(m) > MaxMethodBytes {
		m, capped = m[:MaxMethodBytes], true
	}
	return CSeq{Number: uint32(n), Method: internMethod(upperASCII(m)), Valid: true}, capped, nil
}

// trimLeftWS drops leading spaces and tabs.
func trimLeftWS(s string) string {
	i := 0
	for i < len(s) && isWS(s[i]) {
		i++
	}
	return s[i:]
}

// upperASCII upper-cases ASCII letters, allocating only when needed.
func upperASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'a' <= s[i] && s[i] <= 'z' {
			return strings.ToUpper(s)
		}
	}
	return s
}
