package sdp

import (
	"strconv"
	"strings"
)

// Marshal writes the session as SDP text with CRLF line ends: v, o, s,
// session c, t, session attributes, then each media section (m, its own c=
// when it differs from the session's, its attributes). Derived fields
// (rtpmap, ptime, direction, rtcp, crypto...) are written through the Attrs
// they came from, so Parse(Marshal(s)) reproduces a Session that parsed
// without errors.
func (s *Session) Marshal() []byte {
	var b strings.Builder
	line := func(parts ...string) {
		for _, p := range parts {
			b.WriteString(p)
		}
		b.WriteString("\r\n")
	}
	line("v=", strconv.Itoa(s.Version))
	if s.HasOrigin {
		o := s.Origin
		line("o=", o.Username, " ", o.SessionID, " ", o.SessionVersion, " ", o.NetType, " ", o.AddrType, " ", o.Address)
	}
	line("s=", s.Name)
	if s.Conn != "" {
		line("c=IN ", orIP4(s.ConnAddrType), " ", s.Conn)
	}
	if s.Timing != "" {
		line("t=", s.Timing)
	} else {
		line("t=0 0")
	}
	for _, a := range s.Attrs {
		writeAttr(&b, a)
	}
	for i := range s.Media {
		m := &s.Media[i]
		b.WriteString("m=")
		b.WriteString(m.Type)
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(m.Port))
		if m.NumPorts > 0 {
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(m.NumPorts))
		}
		b.WriteByte(' ')
		b.WriteString(m.Proto)
		for _, f := range m.Formats {
			b.WriteByte(' ')
			if f.Fmt != "" {
				b.WriteString(f.Fmt)
			} else {
				b.WriteString(strconv.Itoa(f.PayloadType))
			}
		}
		b.WriteString("\r\n")
		if m.Conn != "" && (m.Conn != s.Conn || m.ConnAddrType != s.ConnAddrType) {
			line("c=IN ", orIP4(m.ConnAddrType), " ", m.Conn)
		}
		for _, a := range m.Attrs {
			writeAttr(&b, a)
		}
	}
	return []byte(b.String())
}

// String returns Marshal's text.
func (s *Session) String() string { return string(s.Marshal()) }

func writeAttr(b *strings.Builder, a Attr) {
	b.WriteString("a=")
	b.WriteString(a.Key)
	if a.Value != "" {
		b.WriteByte(':')
		b.WriteString(a.Value)
	}
	b.WriteString("\r\n")
}

func orIP4(t string) string {
	if t == "" {
		return "IP4"
	}
	return t
}
