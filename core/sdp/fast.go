package sdp

// Fast paths for the usual line shapes. An offer or answer of a SIP
// device writes its o=, m= and a=rtpmap lines as printable ASCII tokens
// separated by single spaces; for such a line the parser needs neither
// fields' general splitting nor strconv. Each fast path handles its line
// only when the general code would read it without a problem, with the
// same result, and otherwise changes nothing and reports false, so that
// the general code reads the line as before (Errors included).
// FuzzFastPathsChangeNothing holds them to that.

// printable reports whether c is printable ASCII other than the space
// (RFC 5234 VCHAR), a byte that no splitting by white space cuts.
func printable(c byte) bool { return c-0x21 < 0x7f-0x21 }

// spaced splits v into out when v is exactly len(out) tokens of printable
// bytes separated by single spaces, which are then what fields(v) returns.
func spaced(v string, out []string) bool {
	n, start := 0, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == ' ' {
			if i == start || n == len(out)-1 {
				return false
			}
			out[n], n, start = v[start:i], n+1, i+1
		} else if !printable(c) {
			return false
		}
	}
	if start == len(v) || n != len(out)-1 {
		return false
	}
	out[n] = v[start:]
	return true
}

// spacedTokens reports whether v is one or more tokens of printable bytes
// separated by single spaces: fields(v) joined by single spaces is then v.
func spacedTokens(v string) bool {
	if v == "" || v[0] == ' ' || v[len(v)-1] == ' ' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == ' ' {
			if v[i-1] == ' ' {
				return false
			}
		} else if !printable(c) {
			return false
		}
	}
	return true
}

// connFast is parseConn for the usual c= value (RFC 8866 §5.7): "IN",
// an address type and an address, printable tokens separated by single
// spaces; ok is false for any other value.
func connFast(v string) (addr, typ string, ok bool) {
	var f [3]string
	if !spaced(v, f[:]) || f[0] != "IN" {
		return "", "", false
	}
	addr = f[2]
	if i := indexSlash(addr); i >= 0 {
		addr = addr[:i] // a multicast address's TTL and count
	}
	return addr, f[1], addr != ""
}

// originFast reads the usual o= line: six tokens (RFC 8866 §5.2).
func (p *parser) originFast(v string) bool {
	var f [6]string
	if !spaced(v, f[:]) {
		return false
	}
	p.s.Origin = Origin{f[0], f[1], f[2], f[3], f[4], f[5]}
	p.s.HasOrigin = true
	return true
}

// digits returns the value of v when it is 1 to max decimal digits (max
// at most 9); ok is false otherwise.
func digits(v string, max int) (n int, ok bool) {
	if len(v) == 0 || len(v) > max {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		d := v[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int(d)
	}
	return n, true
}

// allDigits reports whether v is decimal digits only.
func allDigits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i]-'0' > 9 {
			return false
		}
	}
	return true
}

// mediaFast reads the usual m= line (RFC 8866 §5.14): a media type, a port
// without a count, a protocol and at least one format, printable tokens
// separated by single spaces, each format a payload type of at most three
// digits or not a number at all.
func (p *parser) mediaFast(v string) bool {
	// One pass checks the shape and counts the formats before anything is
	// written.
	n := 1
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == ' ' {
			if i == 0 || v[i-1] == ' ' {
				return false
			}
			n++
		} else if !printable(c) {
			return false
		}
	}
	if n < 4 || v[len(v)-1] == ' ' {
		return false
	}
	n -= 3
	typ, v := cutSpace(v)
	port, v := cutSpace(v)
	proto, v := cutSpace(v)
	portN, ok := digits(port, 5)
	if !ok || portN > 65535 {
		return false
	}
	for rest := v; rest != ""; {
		var t string
		t, rest = cutSpace(rest)
		if len(t) > 3 && allDigits(t) {
			return false // "0096": strconv's reading is the general code's
		}
	}
	m := p.newMedia()
	m.Type, m.Port, m.Proto = typ, portN, proto
	m.Formats = p.formats(n)
	for v != "" {
		var t string
		t, v = cutSpace(v)
		pt := -1
		if k, ok := digits(t, 3); ok && k <= 127 {
			pt = k
		}
		m.Formats = append(m.Formats, Format{PayloadType: pt, Fmt: t})
	}
	return true
}

// cutSpace cuts v at its first space. A loop and not strings.Cut: the
// tokens of an m= line are a few bytes, and strings.Cut's call to
// IndexByte made BenchmarkParseText's signaling body 4-5 % slower.
func cutSpace(v string) (before, after string) {
	for i := 0; i < len(v); i++ {
		if v[i] == ' ' {
			return v[:i], v[i+1:]
		}
	}
	return v, ""
}

// rtpmap is what an a=rtpmap line says of its payload type.
type rtpmap struct {
	enc      string
	clock    int
	channels int // 0 when absent
}

// rtpmapFast reads the usual a=rtpmap value (RFC 8866 §6.6): "96
// opus/48000/2", a payload type of at most three digits up to 127, a
// single space, a printable encoding name, and a clock rate and channel
// count of at most nine digits, not zero.
func rtpmapFast(v string) (pt int, r rtpmap, ok bool) {
	if pt, v, ok = ptAndRestFast(v); !ok {
		return 0, r, false
	}
	j := 0
	for j < len(v) && v[j] != '/' {
		if !printable(v[j]) {
			return 0, r, false
		}
		j++
	}
	if j == 0 || j == len(v) {
		return 0, r, false
	}
	r.enc, v = v[:j], v[j+1:]
	clock, chans := v, ""
	k := indexSlash(v)
	if k >= 0 {
		clock, chans = v[:k], v[k+1:]
	}
	if r.clock, ok = digits(clock, 9); !ok || r.clock == 0 {
		return 0, r, false
	}
	if k >= 0 {
		if r.channels, ok = digits(chans, 9); !ok || r.channels == 0 {
			return 0, r, false
		}
	}
	return pt, r, true
}

// indexSlash is strings.IndexByte(v, '/') for the few bytes of a clock
// rate.
func indexSlash(v string) int {
	for i := 0; i < len(v); i++ {
		if v[i] == '/' {
			return i
		}
	}
	return -1
}

// ptAndRestFast is ptAndRest for the usual value: a payload type of at
// most three digits up to 127, alone or followed by a single space and a
// rest that starts and ends with a printable byte (which TrimSpace keeps).
func ptAndRestFast(v string) (pt int, rest string, ok bool) {
	i := 0
	for i < len(v) && i < 4 && v[i]-'0' <= 9 {
		i++
	}
	if pt, ok = digits(v[:i], 3); !ok || pt > 127 {
		return 0, "", false
	}
	if i == len(v) {
		return pt, "", true
	}
	rest = v[i+1:]
	if v[i] != ' ' || rest == "" || !printable(rest[0]) || !printable(rest[len(rest)-1]) {
		return 0, "", false
	}
	return pt, rest, true
}

// attrFast is parseAttr for the usual a= line: a name of printable bytes
// up to the first colon or the end, which TrimSpace keeps.
func attrFast(v string) (Attr, bool) {
	i := 0
	for i < len(v) && v[i] != ':' && printable(v[i]) {
		i++
	}
	switch {
	case i == 0:
		return Attr{}, false
	case i == len(v):
		return Attr{Key: v}, true
	case v[i] == ':':
		return Attr{Key: v[:i], Value: v[i+1:]}, true
	}
	return Attr{}, false
}
