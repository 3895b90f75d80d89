package sdp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/core/sip"
)

// MaxErrors bounds Session.Errors; past it one last "too many errors" entry
// is added and further problems are not listed.
const MaxErrors = 32

// ErrNotSDP is returned by Parse when the body has no v= and no m= line.
var ErrNotSDP = errors.New("not an sdp body")

// sessionBlock is a Session with room for the usual body (one media
// section, up to eight a= lines, up to four formats), so that parsing such a
// body costs one allocation instead of four. A bigger body takes what does
// not fit from the heap as before.
type sessionBlock struct {
	s       Session
	media   [1]Media
	attrs   [8]Attr
	formats [4]Format
}

type parser struct {
	blk *sessionBlock
	s   *Session
	cur *Media // current media section; nil at session level
	// attrs holds every a= line of the body in order, in the block or in
	// one allocation past it: the session's and each section's Attrs are
	// contiguous runs of it.
	attrs     []Attr
	attrStart int    // where the current run (session or section) starts
	rest      string // the text after the current line
	curConn   bool   // the current media section has its own c=
	lineNo    int
	sawV      bool
	sawO      bool
	sawS      bool
	sawT      bool
	// general turns the fast paths for the usual line shapes off (fast.go),
	// for the tests that check they change nothing.
	general bool
}

func (p *parser) errorf(format string, args ...any) {
	switch n := len(p.s.Errors); {
	case n < MaxErrors:
		p.s.Errors = append(p.s.Errors, "line "+strconv.Itoa(p.lineNo)+": "+fmt.Sprintf(format, args...))
	case n == MaxErrors:
		p.s.Errors = append(p.s.Errors, "too many errors")
	}
}

// Parse parses an SDP body tolerantly: LF or CRLF line ends, lines of
// unknown or misplaced types recorded in Session.Errors rather than
// refused. The only error is ErrNotSDP, when the body has neither a v= nor
// an m= line. Every string is a copy: the Session does not retain body.
//
// Media sections inherit the session-level c= and direction; static RTP
// payload types without an rtpmap get their RFC 3551 encoding and clock
// (Format.Static).
func Parse(body []byte) (*Session, error) {
	if !bytes.Contains(body, []byte("v=")) && !bytes.Contains(body, []byte("m=")) {
		return nil, ErrNotSDP
	}
	return parseText(string(body)) // one copy; every string below shares it
}

// ParseText is Parse on a body that is already an immutable string (a SIP
// message's own bytes, which the caller keeps): the Session's strings share
// text instead of copying it.
func ParseText(text string) (*Session, error) {
	if !maybeSDP(text) {
		return nil, ErrNotSDP
	}
	return parseText(text)
}

// Parser parses SDP bodies into one Session it reuses: parsing the usual
// body (one media section, up to eight a= lines, up to four formats) through
// a Parser allocates nothing. The Session a call returns, and every slice in
// it, is valid only until the Parser's next call; its strings share the
// text, as ParseText's do. A Parser is not safe for concurrent use; the zero
// value is ready.
type Parser struct {
	blk sessionBlock
}

// ParseText is the package's ParseText into the Parser's reused Session,
// with the same result.
func (ps *Parser) ParseText(text string) (*Session, error) {
	if !maybeSDP(text) {
		return nil, ErrNotSDP
	}
	// Only the Session needs zeroing: every entry of the block's arrays a
	// parse hands out was written whole by its append. (Entries past that
	// may still hold strings of an earlier body, the SIP message text they
	// share, until overwritten.)
	ps.blk.s = Session{}
	return parseInto(text, &ps.blk)
}

// maybeSDP reports whether text holds a v= or an m= line's start, as Parse
// requires; the usual body starts with its v= line.
func maybeSDP(text string) bool {
	return strings.HasPrefix(text, "v=") || strings.Contains(text, "v=") || strings.Contains(text, "m=")
}

func parseText(text string) (*Session, error) {
	return parseInto(text, &sessionBlock{})
}

// linesLeft counts the lines of type typ in text as the parse loop sees
// them: lines split at LF whose type letter is followed by '='.
func linesLeft(text string, typ byte) int {
	n := 0
	for len(text) > 1 {
		if text[0] == typ && text[1] == '=' {
			n++
		}
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			break
		}
		text = text[i+1:]
	}
	return n
}

// grow returns a copy of the full slice s with room for need more, in one
// allocation.
func grow[T any](s []T, need int) []T {
	return append(make([]T, 0, len(s)+need), s...)
}

// trimLineEnd is strings.TrimRight(line, " \t\r").
func trimLineEnd(line string) string {
	n := len(line)
	for n > 0 && (line[n-1] == ' ' || line[n-1] == '\t' || line[n-1] == '\r') {
		n--
	}
	return line[:n]
}

// parseInto parses text into blk, whose Session is zero.
func parseInto(text string, blk *sessionBlock) (*Session, error) {
	return parseWith(text, blk, false)
}

// parseWith is parseInto, with the fast paths for the usual line shapes
// turned off when general is true.
func parseWith(text string, blk *sessionBlock, general bool) (*Session, error) {
	s := &blk.s
	p := parser{blk: blk, s: s, general: general}
	// The attributes and the media sections start in the block; past it
	// they move once to the heap, sized by the lines left (grow). A run of
	// attributes handed out before the move keeps the block's entries.
	p.attrs = blk.attrs[:0]
	s.Media = blk.media[:0]
	for len(text) > 0 {
		var line string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, ""
		}
		p.rest = text
		p.lineNo++
		line = trimLineEnd(line)
		if line == "" {
			continue
		}
		if len(line) < 2 || line[1] != '=' {
			p.errorf("not a type=value line")
			continue
		}
		p.line(line[0], line[2:])
	}
	p.endMedia()
	if len(s.Media) == 0 {
		s.Attrs = p.run()
		s.Media = nil
	}
	if !p.sawV {
		p.lineNo = 0
		p.errorf("missing v= line")
	}
	if !p.sawV && len(s.Media) == 0 {
		return nil, ErrNotSDP
	}
	if !p.sawO {
		p.lineNo = 0
		p.errorf("missing o= line")
	}
	if !p.sawS {
		p.lineNo = 0
		p.errorf("missing s= line")
	}
	if !p.sawT {
		p.lineNo = 0
		p.errorf("missing t= line")
	}
	return s, nil
}

// run returns the attributes added since the current run started (nil when
// none, capacity cut so that an append cannot reach the next run) and
// starts the next run.
func (p *parser) run() []Attr {
	a := p.attrs[p.attrStart:len(p.attrs):len(p.attrs)]
	p.attrStart = len(p.attrs)
	if len(a) == 0 {
		return nil
	}
	return a
}

// fields is strings.Fields for the common case, without its allocation:
// the fields of ASCII v are returned in buf when they fit; otherwise (more
// fields, or a non-ASCII byte, where Unicode spaces count) it returns
// strings.Fields(v).
func fields(v string, buf []string) []string {
	out := buf[:0]
	for i := 0; i < len(v); {
		for i < len(v) && asciiSpace[v[i]] {
			i++
		}
		if i == len(v) {
			break
		}
		j := i
		for j < len(v) && !asciiSpace[v[j]] {
			if v[j] >= 0x80 {
				return strings.Fields(v)
			}
			j++
		}
		if len(out) == cap(out) {
			return strings.Fields(v)
		}
		out = append(out, v[i:j])
		i = j
	}
	return out
}

// asciiSpace is the ASCII white space strings.Fields splits at.
var asciiSpace = [256]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

func (p *parser) line(typ byte, v string) {
	s := p.s
	switch typ {
	case 'v':
		if p.sawV {
			p.errorf("duplicate v= line")
			return
		}
		p.sawV = true
		if p.lineNo != 1 && (p.sawO || p.sawS || len(s.Media) > 0) {
			p.errorf("v= line is not first")
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			p.errorf("bad v= version")
			return
		}
		s.Version = n
	case 'o':
		if p.cur != nil {
			p.errorf("o= line inside a media section")
			return
		}
		if p.sawO {
			p.errorf("duplicate o= line")
			return
		}
		p.sawO = true
		if !p.general && p.originFast(v) {
			return
		}
		var buf [8]string
		f := fields(v, buf[:])
		if len(f) != 6 {
			p.errorf("o= line has %d fields, want 6", len(f))
		}
		dst := []*string{&s.Origin.Username, &s.Origin.SessionID, &s.Origin.SessionVersion,
			&s.Origin.NetType, &s.Origin.AddrType, &s.Origin.Address}
		for i := 0; i < len(f) && i < len(dst); i++ {
			*dst[i] = f[i]
		}
		s.HasOrigin = true
	case 's':
		if p.cur != nil {
			p.errorf("s= line inside a media section")
			return
		}
		if p.sawS {
			p.errorf("duplicate s= line")
			return
		}
		p.sawS = true
		s.Name = v
	case 't':
		if p.cur != nil {
			p.errorf("t= line inside a media section")
			return
		}
		if !p.sawT && !p.general && spacedTokens(v) {
			s.Timing = v // the usual "0 0"
		} else if !p.sawT {
			var buf [4]string
			s.Timing = joinFields(fields(v, buf[:]), v)
			if s.Timing == "" {
				p.errorf("empty t= line")
			}
		}
		p.sawT = true
	case 'c':
		addr, typ, ok := "", "", false
		if !p.general {
			addr, typ, ok = connFast(v)
		}
		if !ok {
			addr, typ, ok = parseConn(v)
		}
		if !ok {
			p.errorf("bad c= line")
			return
		}
		if p.cur == nil {
			if s.Conn != "" {
				p.errorf("duplicate session c= line")
				return
			}
			s.Conn, s.ConnAddrType = addr, typ
			return
		}
		if p.curConn {
			return // further addresses (layered multicast): first wins
		}
		p.curConn = true
		p.cur.Conn, p.cur.ConnAddrType = addr, typ
	case 'm':
		p.endMedia()
		if p.cur == nil && len(s.Media) == 0 {
			s.Attrs = p.run() // the session's run ends at the first m=
		}
		if p.general || !p.mediaFast(v) {
			p.media(v)
		}
	case 'a':
		a, ok := Attr{}, false
		if !p.general {
			a, ok = attrFast(v)
		}
		if !ok {
			a = parseAttr(v)
		}
		if len(p.attrs) == cap(p.attrs) {
			p.attrs = grow(p.attrs, 1+linesLeft(p.rest, 'a'))
		}
		p.attrs = append(p.attrs, a)
		if p.cur == nil {
			if d, ok := direction(a.Key); ok && a.Value == "" {
				s.Direction = d
			}
		}
	case 'i', 'u', 'e', 'p', 'b', 'z', 'k', 'r':
		// Known types this model does not keep.
	default:
		p.errorf("unknown line type %q", string(typ))
	}
}

// joinFields is strings.Join(f, " ") of v's fields, v itself when it is
// already written that way.
func joinFields(f []string, v string) string {
	n := len(f) - 1
	for _, x := range f {
		n += len(x)
	}
	if n != len(v) {
		return strings.Join(f, " ")
	}
	pos := 0 // v is the fields in order with one blank between: is it a space?
	for i, x := range f {
		if i > 0 {
			if v[pos] != ' ' {
				return strings.Join(f, " ")
			}
			pos++
		}
		pos += len(x)
	}
	return v
}

// clip shortens a value quoted in an error message to 64 bytes.
func clip(v string) string {
	if len(v) <= 64 {
		return v
	}
	return v[:64] + "..."
}

// parseAttr splits an a= line at its first colon. The name is a token
// (RFC 4566 att-field): blanks around it are dropped, so "a= sendonly" is a
// direction and a name never ends in a blank that a written line would lose.
func parseAttr(v string) Attr {
	if i := strings.IndexByte(v, ':'); i >= 0 {
		return Attr{Key: strings.TrimSpace(v[:i]), Value: v[i+1:]}
	}
	return Attr{Key: strings.TrimSpace(v)}
}

func direction(key string) (Direction, bool) {
	switch key {
	case "sendrecv":
		return SendRecv, true
	case "sendonly":
		return SendOnly, true
	case "recvonly":
		return RecvOnly, true
	case "inactive":
		return Inactive, true
	}
	return "", false
}

// parseConn parses "IN IP4 addr[/ttl[/n]]" into the address (suffixes
// dropped) and the address type.
func parseConn(v string) (addr, typ string, ok bool) {
	var buf [4]string
	f := fields(v, buf[:])
	if len(f) != 3 || f[0] != "IN" {
		return "", "", false
	}
	addr = f[2]
	if i := strings.IndexByte(addr, '/'); i >= 0 {
		addr = addr[:i]
	}
	if addr == "" {
		return "", "", false
	}
	return addr, f[1], true
}

// newMedia starts a media section and returns it.
func (p *parser) newMedia() *Media {
	if len(p.s.Media) == cap(p.s.Media) {
		p.s.Media = grow(p.s.Media, 1+linesLeft(p.rest, 'm'))
	}
	p.s.Media = append(p.s.Media, Media{})
	p.cur = &p.s.Media[len(p.s.Media)-1]
	p.curConn = false
	return p.cur
}

// formats returns the empty Formats of the current section, with room for
// n formats: the first section's few in the block.
func (p *parser) formats(n int) []Format {
	if b := p.blk; b != nil && n <= len(b.formats) && len(p.s.Media) == 1 {
		return b.formats[:0:n]
	}
	return make([]Format, 0, n)
}

func (p *parser) media(v string) {
	m := p.newMedia()
	var buf [16]string
	f := fields(v, buf[:])
	if len(f) < 3 {
		p.errorf("m= line has %d fields, want at least 4", len(f))
	}
	if len(f) > 0 {
		m.Type = f[0]
	}
	if len(f) > 1 {
		port, nports := f[1], ""
		if i := strings.IndexByte(port, '/'); i >= 0 {
			port, nports = port[:i], port[i+1:]
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 0 || n > 65535 {
			p.errorf("bad m= port")
		} else {
			m.Port = n
		}
		if nports != "" {
			k, err := strconv.Atoi(nports)
			if err != nil || k < 1 || k > 65535 {
				p.errorf("bad m= port count")
			} else {
				m.NumPorts = k
			}
		}
	}
	if len(f) > 2 {
		m.Proto = f[2]
	}
	if len(f) == 3 {
		p.errorf("m= line has no formats")
	}
	if n := len(f) - 3; n > 0 {
		m.Formats = p.formats(n)
	}
	for _, t := range f[min(3, len(f)):] {
		pt := -1
		if n, err := strconv.Atoi(t); err == nil && n >= 0 && n <= 127 && t[0] != '+' && t[0] != '-' {
			pt = n
		}
		m.Formats = append(m.Formats, Format{PayloadType: pt, Fmt: t})
	}
}

// endMedia resolves the current media section's attributes into its typed
// fields and applies session-level inheritance.
func (p *parser) endMedia() {
	m := p.cur
	if m == nil {
		return
	}
	m.Attrs = p.run()
	s := p.s
	if !p.curConn {
		m.Conn, m.ConnAddrType = s.Conn, s.ConnAddrType
	}
	// RTP/AVP, RTP/SAVP, RTP/AVPF...: the usual protocols need no case fold.
	isRTP := strings.HasPrefix(m.Proto, "RTP/") || strings.Contains(strings.ToUpper(m.Proto), "RTP")
	if len(m.Formats) <= linearFormats {
		p.resolveAttrs(m, nil)
	} else {
		// byPT indexes the first format of each payload type (+1; 0 =
		// none), so attributes resolve in constant time whatever the
		// number of formats.
		var byPT [128]int32
		for i := range m.Formats {
			if pt := m.Formats[i].PayloadType; pt >= 0 && byPT[pt] == 0 {
				byPT[pt] = int32(i + 1)
			}
		}
		p.resolveAttrs(m, &byPT)
	}
	if m.Direction == "" {
		m.Direction = s.Direction
	}
	if m.Direction == "" {
		m.Direction = SendRecv
	}
	if isRTP {
		for i := range m.Formats {
			f := &m.Formats[i]
			if f.Encoding == "" && f.PayloadType >= 0 {
				if enc, clock, ok := StaticPayload(f.PayloadType); ok {
					f.Encoding, f.ClockRate, f.Channels, f.Static = enc, clock, StaticChannels(f.PayloadType), true
				}
			}
		}
	}
	p.cur = nil
}

// linearFormats is the most formats a section's attributes look up by a
// scan of the m= line's formats; past it, through an index by payload type
// (which costs clearing 512 bytes per section).
const linearFormats = 16

// ptSet is a set of payload types 0..127.
type ptSet [2]uint64

// add adds pt and reports whether it was already there.
func (s *ptSet) add(pt int) (had bool) {
	w, b := pt>>6, uint64(1)<<(pt&63)
	had = s[w]&b != 0
	s[w] |= b
	return had
}

// resolveAttrs reads the section's attributes into its typed fields.
// byPT, when not nil, indexes the first format of each payload type (+1;
// 0 = none); otherwise a payload type's format is found by a scan, first
// one first, as the index would give.
func (p *parser) resolveAttrs(m *Media, byPT *[128]int32) {
	format := func(pt int) *Format {
		if pt < 0 || pt > 127 {
			return nil
		}
		if byPT == nil {
			return m.format(pt)
		}
		if byPT[pt] == 0 {
			return nil
		}
		return &m.Formats[byPT[pt]-1]
	}
	var seenMap, seenFmtp ptSet
	for _, a := range m.Attrs {
		switch a.Key {
		case "rtpmap":
			if !p.general {
				if pt, r, ok := rtpmapFast(a.Value); ok {
					if f := format(pt); f != nil && !seenMap.add(pt) {
						f.Encoding, f.ClockRate, f.Channels = r.enc, r.clock, r.channels
					}
					continue
				}
			}
			pt, rest, ok := ptAndRest(a.Value)
			if !ok {
				p.errorf("bad rtpmap %q", clip(a.Value))
				continue
			}
			f := format(pt)
			if f == nil || seenMap.add(pt) {
				continue
			}
			enc, rest, hasClock := strings.Cut(rest, "/")
			clock, chans, hasChans := strings.Cut(rest, "/")
			if hasChans {
				// only the third part counts, as strings.Split's parts[2] did
				chans, _, _ = strings.Cut(chans, "/")
			}
			f.Encoding = strings.TrimSpace(enc)
			if hasClock {
				if n, err := strconv.Atoi(strings.TrimSpace(clock)); err == nil && n > 0 {
					f.ClockRate = n
				} else {
					p.errorf("bad rtpmap clock rate %q", clip(a.Value))
				}
			} else {
				p.errorf("rtpmap without clock rate %q", clip(a.Value))
			}
			if hasChans {
				if n, err := strconv.Atoi(strings.TrimSpace(chans)); err == nil && n > 0 {
					f.Channels = n
				} else {
					p.errorf("bad rtpmap channels %q", clip(a.Value))
				}
			}
		case "fmtp":
			pt, rest, ok := 0, "", false
			if !p.general {
				pt, rest, ok = ptAndRestFast(a.Value)
			}
			if !ok {
				pt, rest, ok = ptAndRest(a.Value)
			}
			if !ok {
				continue // non-RTP fmtp (a=fmtp:t38 ..., a=fmtp:* ...)
			}
			if f := format(pt); f != nil && !seenFmtp.add(pt) {
				f.Fmtp = rest
			}
		case "ptime":
			if n, ok := digits(a.Value, 6); ok && !p.general {
				m.Ptime = n // the usual "20"
			} else if n, ok := atoiPrefix(a.Value); ok {
				m.Ptime = n
			} else {
				p.errorf("bad ptime %q", clip(a.Value))
			}
		case "maxptime":
			if n, ok := atoiPrefix(a.Value); ok {
				m.MaxPtime = n
			} else {
				p.errorf("bad maxptime %q", clip(a.Value))
			}
		case "sendrecv", "sendonly", "recvonly", "inactive":
			if a.Value == "" {
				m.Direction, _ = direction(a.Key)
			}
		case "rtcp":
			var buf [4]string
			f := fields(a.Value, buf[:])
			if len(f) == 0 {
				p.errorf("bad rtcp %q", clip(a.Value))
				continue
			}
			n, err := strconv.Atoi(f[0])
			if err != nil || n < 0 || n > 65535 {
				p.errorf("bad rtcp port %q", clip(a.Value))
				continue
			}
			m.RTCPPort = n
			if len(f) >= 4 && f[0] != "" {
				m.RTCPAddr = f[3]
			}
		case "rtcp-mux":
			m.RTCPMux = true
		case "crypto":
			m.Crypto = append(m.Crypto, a.Value)
		case "label":
			if m.Label == "" {
				m.Label = a.Value
			}
		}
	}
}

// format returns the media's format with payload type pt, or nil.
func (m *Media) format(pt int) *Format {
	for i := range m.Formats {
		if m.Formats[i].PayloadType == pt {
			return &m.Formats[i]
		}
	}
	return nil
}

// ptAndRest splits "96 opus/48000/2" into 96 and "opus/48000/2".
func ptAndRest(v string) (int, string, bool) {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 0 || i > 3 {
		return 0, "", false
	}
	n, _ := strconv.Atoi(v[:i])
	if n > 127 {
		return 0, "", false
	}
	rest := v[i:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0, "", false
	}
	return n, strings.TrimSpace(rest), true
}

// atoiPrefix parses the leading integer of "20" or "20.0" (ptime values are
// sometimes written with decimals).
func atoiPrefix(v string) (int, bool) {
	v = strings.TrimSpace(v)
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 0 || i > 6 {
		return 0, false
	}
	if i < len(v) && v[i] != '.' {
		return 0, false
	}
	n, _ := strconv.Atoi(v[:i])
	return n, true
}

// Format returns the media's format with the given payload type.
func (m *Media) Format(pt int) (Format, bool) {
	if f := m.format(pt); f != nil {
		return *f, true
	}
	return Format{}, false
}

// IsT38 reports whether the section is T.38 fax (m=image ... udptl t38).
func (m *Media) IsT38() bool {
	if !strings.EqualFold(m.Type, "image") || !strings.Contains(strings.ToLower(m.Proto), "udptl") {
		return false
	}
	for _, f := range m.Formats {
		if strings.EqualFold(f.Fmt, "t38") {
			return true
		}
	}
	return false
}

// Attr returns the value of the first attribute with the given key in the
// section and whether it is present.
func (m *Media) Attr(key string) (string, bool) {
	for _, a := range m.Attrs {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// FmtpParam returns one parameter of the format's fmtp ("mode-set",
// "octet-align", "interleaving", ...), by case-insensitive name. Parameters
// are separated by ';' (whitespace tolerated); a parameter without '=' is
// present with value "".
func (f Format) FmtpParam(name string) (string, bool) {
	for _, p := range strings.Split(f.Fmtp, ";") {
		p = strings.TrimSpace(p)
		k, v := p, ""
		if i := strings.IndexByte(p, '='); i >= 0 {
			k, v = strings.TrimSpace(p[:i]), strings.TrimSpace(p[i+1:])
		}
		if k != "" && strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// FromBody parses the SDP of a SIP body: contentType is the full
// Content-Type header value (parameters included, needed for a multipart
// boundary). It handles application/sdp and multipart bodies carrying an
// application/sdp part. ok is false when there is no SDP or it does not
// parse.
func FromBody(contentType string, body []byte) (*Session, bool) {
	b, _, ok := sip.FindBodyPart(contentType, body, "application/sdp")
	if !ok || len(b) == 0 {
		return nil, false
	}
	s, err := Parse(b)
	if err != nil {
		return nil, false
	}
	return s, true
}
