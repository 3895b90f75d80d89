// Package hep reads and writes HEP (Homer Encapsulation Protocol, also called
// EEP) envelopes: version 3 with its typed chunks, and the older fixed-layout
// versions 1 and 2. A HEP envelope carries one captured payload (usually a
// SIP message) together with the addressing and timestamp it was captured
// with.
//
// Decoding never trusts a length it has not checked against the bytes it was
// given, and inflating a compressed payload is bounded.
package hep

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"
)

// Chunk types of HEP version 3 (vendor 0x0000).
const (
	ChunkIPFamily      = 0x0001 // uint8: 2 IPv4, 10 IPv6
	ChunkIPProto       = 0x0002 // uint8: IP protocol number (17 UDP, 6 TCP, 132 SCTP)
	ChunkIPv4Src       = 0x0003 // 4 bytes
	ChunkIPv4Dst       = 0x0004 // 4 bytes
	ChunkIPv6Src       = 0x0005 // 16 bytes
	ChunkIPv6Dst       = 0x0006 // 16 bytes
	ChunkSrcPort       = 0x0007 // uint16
	ChunkDstPort       = 0x0008 // uint16
	ChunkTimeSec       = 0x0009 // uint32 seconds since the epoch
	ChunkTimeUsec      = 0x000a // uint32 microseconds offset
	ChunkProtoType     = 0x000b // uint8: what the payload is (see Proto*)
	ChunkAgentID       = 0x000c // uint32 capture agent id
	ChunkKeepAlive     = 0x000d // uint16 keep-alive timer, seconds
	ChunkAuthKey       = 0x000e // octets: shared secret
	ChunkPayload       = 0x000f // octets: captured payload
	ChunkCompressed    = 0x0010 // octets: captured payload, zlib or gzip compressed
	ChunkCorrelationID = 0x0011 // octets: internal correlation id
	ChunkVLAN          = 0x0012 // uint16 VLAN id
	ChunkGroupID       = 0x0013 // octets: capture group / node name
	ChunkIPTOS         = 0x0018 // uint8 IP TOS byte
)

// Payload types carried in ChunkProtoType (HEP3 specification).
const (
	ProtoSIP    = 1
	ProtoXMPP   = 2
	ProtoSDP    = 3
	ProtoRTP    = 4
	ProtoRTCP   = 5
	ProtoMGCP   = 6
	ProtoMEGACO = 7
	ProtoM2UA   = 8
	ProtoM3UA   = 9
	ProtoIAX    = 10
	ProtoH3222  = 11
	ProtoH321   = 12
	ProtoM2PA   = 13
	// ProtoRTPAlt is a payload type some agents send for raw RTP; the
	// engine treats it like ProtoRTP.
	ProtoRTPAlt  = 32
	ProtoMOS     = 34
	ProtoRTCPXR  = 35
	ProtoSIPJSON = 50
	ProtoDNSJSON = 53
	ProtoLog     = 100
)

// Address families used by HEP.
const (
	FamilyIPv4 = 2
	FamilyIPv6 = 10
)

// Limits.
const (
	// MaxLen is the largest HEP3 envelope (its length field is 16 bits).
	MaxLen = 0xFFFF
	// DefaultMaxInflated bounds the size of an inflated compressed payload.
	DefaultMaxInflated = 256 << 10
)

// Message is one decoded HEP envelope. Byte slices point into the decoded
// buffer (or, for an inflated payload, into the decoder's scratch space):
// copy what must outlive the next decode.
type Message struct {
	// Version is the HEP version: 1, 2 or 3.
	Version int
	// Family is the captured packet's address family (2 IPv4, 10 IPv6).
	Family uint8
	// Protocol is the captured packet's IP protocol (17 UDP, 6 TCP, 132 SCTP).
	Protocol uint8
	// Src and Dst are the captured packet's addressing. An address or port
	// the envelope did not carry is left zero (Addr().IsValid() is false).
	Src, Dst netip.AddrPort
	// TS is the capture time; HasTS says the envelope carried one.
	TS    time.Time
	HasTS bool
	// ProtoType says what the payload is (ProtoSIP, ProtoRTCP, ...);
	// HasProtoType says the envelope carried it. Versions 1 and 2 carry SIP
	// only: ProtoType is ProtoSIP and HasProtoType false.
	ProtoType    uint8
	HasProtoType bool
	// AgentID is the capture agent id (chunk 0x000c read as the big-endian
	// uint32 the specification defines, or the version 2 capture id);
	// HasAgentID says it was present. Agents built on the hep-c reference
	// code (captagent, sngrep) write a 16-bit id into the top half of the
	// field: see LegacyAgentID.
	AgentID    uint32
	HasAgentID bool
	// KeepAlive is the keep-alive timer in seconds (0 when absent).
	KeepAlive uint16
	// AuthKey is the shared secret the sender presented (nil when absent).
	AuthKey []byte
	// Payload is the captured payload; nil for a keep-alive envelope.
	Payload []byte
	// Compressed says the payload arrived compressed (chunk 0x0010) and was
	// inflated.
	Compressed bool
	// CorrelationID is the internal correlation id (nil when absent).
	CorrelationID []byte
	// VLAN is the captured packet's VLAN id; HasVLAN says it was present.
	VLAN    uint16
	HasVLAN bool
	// GroupID is the capture group or node name (nil when absent).
	GroupID []byte
	// TOS is the captured packet's IP TOS byte; HasTOS says it was present.
	TOS    uint8
	HasTOS bool
	// UnknownChunks counts chunks that were skipped: other vendors' chunks
	// and chunk types this package does not read.
	UnknownChunks int
}

// LegacyAgentID returns the agent id as agents built on the hep-c reference
// code mean it: they store htons(id) in the 32-bit chunk, so on the wire id
// 2002 reads as 0x07D20000. When the low 16 bits are zero the top 16 bits
// are returned; otherwise AgentID unchanged.
func (m *Message) LegacyAgentID() uint32 {
	if m.Version == 3 && m.AgentID&0xFFFF == 0 {
		return m.AgentID >> 16
	}
	return m.AgentID
}

// Errors.
var (
	ErrNotHEP    = errors.New("not a HEP envelope")
	ErrTruncated = errors.New("HEP envelope truncated")
)

// Looks reports cheaply whether b starts with a HEP envelope: the "HEP3"
// magic with a total length that fits b and a first chunk that fits the
// total, or a version 1/2 header whose length, family and protocol agree.
func Looks(b []byte) bool {
	if len(b) >= 6 && string(b[:4]) == "HEP3" {
		total := int(binary.BigEndian.Uint16(b[4:6]))
		if total < 6 || total > len(b) {
			return false
		}
		if total == 6 {
			return true
		}
		if total < 12 {
			return false
		}
		cl := int(binary.BigEndian.Uint16(b[10:12]))
		return cl >= 6 && cl <= total-6
	}
	_, ok := v2Layout(b)
	return ok
}

// FrameLen returns the total length of the HEP3 envelope at the start of b,
// for framing a byte stream. ok is false when b holds fewer than 6 bytes, does
// not start with the "HEP3" magic, or declares a length shorter than the
// header.
func FrameLen(b []byte) (n int, ok bool) {
	if len(b) < 6 || string(b[:4]) != "HEP3" {
		return 0, false
	}
	n = int(binary.BigEndian.Uint16(b[4:6]))
	if n < 6 {
		return 0, false
	}
	return n, true
}

// v2Layout validates a version 1/2 header and returns the offset of the
// payload. The header-length byte is not trusted: senders disagree on it
// (8, 16, even 1 are seen on the wire), so the layout follows the family.
func v2Layout(b []byte) (int, bool) {
	if len(b) < 16 {
		return 0, false
	}
	v, fam, proto := b[0], b[2], b[3]
	if v != 1 && v != 2 {
		return 0, false
	}
	// A STUN message (first byte 0 or 1) carries its magic cookie here.
	if binary.BigEndian.Uint32(b[4:8]) == 0x2112A442 {
		return 0, false
	}
	var off int
	switch {
	case fam == FamilyIPv4:
		off = 16
	case isFamily6(fam):
		off = 40
	default:
		return 0, false
	}
	switch proto {
	case 6, 17, 132:
	default:
		return 0, false
	}
	if v == 2 {
		off += 12
	}
	if len(b) < off {
		return 0, false
	}
	return off, true
}

// isFamily6 accepts AF_INET6 as Linux (10), the BSDs (24, 28) and Darwin
// (30) number it.
func isFamily6(f uint8) bool { return f == 10 || f == 24 || f == 28 || f == 30 }

// Decode decodes one HEP envelope (version 1, 2 or 3). A version 3 envelope
// may be followed by other bytes (the rest of a stream); only its own total
// length is read. The returned message's slices point into b, except an
// inflated payload, which is newly allocated.
func Decode(b []byte) (*Message, error) {
	var d Decoder
	m := new(Message)
	if err := d.DecodeInto(b, m); err != nil {
		return nil, err
	}
	if m.Compressed {
		m.Payload = bytes.Clone(m.Payload)
	}
	return m, nil
}

// Decoder decodes HEP envelopes reusing its scratch space, so that decoding
// an uncompressed envelope does not allocate. A Decoder is not safe for
// concurrent use.
type Decoder struct {
	// MaxInflated bounds an inflated payload in bytes (DefaultMaxInflated
	// when 0).
	MaxInflated int

	inflated bytes.Buffer
	src      bytes.Reader
}

// DecodeInto decodes one envelope into m, overwriting it. An inflated payload
// points into the decoder's scratch space, valid until the next call.
func (d *Decoder) DecodeInto(b []byte, m *Message) error {
	*m = Message{}
	if len(b) >= 4 && string(b[:4]) == "HEP3" {
		return d.decode3(b, m)
	}
	if len(b) > 0 && (b[0] == 1 || b[0] == 2) {
		return decode2(b, m)
	}
	return ErrNotHEP
}

func decode2(b []byte, m *Message) error {
	off, ok := v2Layout(b)
	if !ok {
		if len(b) < 16 {
			return fmt.Errorf("decoding HEP version %d: %w", b[0], ErrTruncated)
		}
		return fmt.Errorf("decoding HEP version %d: unknown family %d or protocol %d, or short header", b[0], b[2], b[3])
	}
	m.Version = int(b[0])
	m.Family = b[2]
	m.Protocol = b[3]
	sport := binary.BigEndian.Uint16(b[4:6])
	dport := binary.BigEndian.Uint16(b[6:8])
	var src, dst netip.Addr
	if m.Family == FamilyIPv4 {
		src = netip.AddrFrom4([4]byte(b[8:12]))
		dst = netip.AddrFrom4([4]byte(b[12:16]))
	} else {
		src = netip.AddrFrom16([16]byte(b[8:24]))
		dst = netip.AddrFrom16([16]byte(b[24:40]))
	}
	m.Src = netip.AddrPortFrom(src, sport)
	m.Dst = netip.AddrPortFrom(dst, dport)
	m.ProtoType = ProtoSIP
	if m.Version == 2 {
		// The time header is written in the sender's host order; every
		// known sender is little-endian, but a big-endian one is
		// recognized by a microseconds field that only fits that way.
		t := b[off-12 : off]
		sec, usec := binary.LittleEndian.Uint32(t[0:4]), binary.LittleEndian.Uint32(t[4:8])
		id := binary.LittleEndian.Uint16(t[8:10])
		if bs, bu := binary.BigEndian.Uint32(t[0:4]), binary.BigEndian.Uint32(t[4:8]); usec >= 1e6 && bu < 1e6 {
			sec, usec, id = bs, bu, binary.BigEndian.Uint16(t[8:10])
		}
		m.TS = time.Unix(int64(sec), int64(usec)*1000)
		m.HasTS = true
		m.AgentID = uint32(id)
		m.HasAgentID = true
	}
	m.Payload = b[off:]
	return nil
}

func (d *Decoder) decode3(b []byte, m *Message) error {
	if len(b) < 6 {
		return fmt.Errorf("decoding HEP3 header: %w", ErrTruncated)
	}
	total := int(binary.BigEndian.Uint16(b[4:6]))
	if total < 6 {
		return fmt.Errorf("decoding HEP3 header: total length %d shorter than the header", total)
	}
	if total > len(b) {
		return fmt.Errorf("decoding HEP3 header: total length %d, have %d bytes: %w", total, len(b), ErrTruncated)
	}
	m.Version = 3
	var (
		src4, dst4, src6, dst6 []byte
		sport, dport           uint16
		sec, usec              uint32
		haveSec                bool
		compressed             []byte
	)
	p := b[6:total]
	for len(p) > 0 {
		if len(p) < 6 {
			return fmt.Errorf("decoding HEP3 chunk header: %d bytes left, need 6: %w", len(p), ErrTruncated)
		}
		vendor := binary.BigEndian.Uint16(p[0:2])
		typ := binary.BigEndian.Uint16(p[2:4])
		cl := int(binary.BigEndian.Uint16(p[4:6]))
		if cl < 6 {
			return fmt.Errorf("decoding HEP3 chunk 0x%04x: length %d shorter than its header", typ, cl)
		}
		if cl > len(p) {
			return fmt.Errorf("decoding HEP3 chunk 0x%04x: length %d, %d bytes left: %w", typ, cl, len(p), ErrTruncated)
		}
		v := p[6:cl]
		p = p[cl:]
		if vendor != 0 {
			m.UnknownChunks++
			continue
		}
		if want := fixedSize(typ); want > 0 && len(v) != want {
			return fmt.Errorf("decoding HEP3 chunk 0x%04x: %d value bytes, want %d", typ, len(v), want)
		}
		switch typ {
		case ChunkIPFamily:
			m.Family = v[0]
		case ChunkIPProto:
			m.Protocol = v[0]
		case ChunkIPv4Src:
			src4 = v
		case ChunkIPv4Dst:
			dst4 = v
		case ChunkIPv6Src:
			src6 = v
		case ChunkIPv6Dst:
			dst6 = v
		case ChunkSrcPort:
			sport = binary.BigEndian.Uint16(v)
		case ChunkDstPort:
			dport = binary.BigEndian.Uint16(v)
		case ChunkTimeSec:
			sec, haveSec = binary.BigEndian.Uint32(v), true
		case ChunkTimeUsec:
			usec = binary.BigEndian.Uint32(v)
		case ChunkProtoType:
			m.ProtoType, m.HasProtoType = v[0], true
		case ChunkAgentID:
			m.AgentID, m.HasAgentID = binary.BigEndian.Uint32(v), true
		case ChunkKeepAlive:
			m.KeepAlive = binary.BigEndian.Uint16(v)
		case ChunkAuthKey:
			m.AuthKey = v
		case ChunkPayload:
			m.Payload = v
		case ChunkCompressed:
			compressed = v
		case ChunkCorrelationID:
			m.CorrelationID = v
		case ChunkVLAN:
			m.VLAN, m.HasVLAN = binary.BigEndian.Uint16(v), true
		case ChunkGroupID:
			m.GroupID = v
		case ChunkIPTOS:
			m.TOS, m.HasTOS = v[0], true
		default:
			m.UnknownChunks++
		}
	}
	var src, dst netip.Addr
	switch {
	case isFamily6(m.Family) || (m.Family == 0 && src6 != nil):
		if src6 != nil {
			src = netip.AddrFrom16([16]byte(src6))
		}
		if dst6 != nil {
			dst = netip.AddrFrom16([16]byte(dst6))
		}
	default:
		if src4 != nil {
			src = netip.AddrFrom4([4]byte(src4))
		}
		if dst4 != nil {
			dst = netip.AddrFrom4([4]byte(dst4))
		}
	}
	m.Src = netip.AddrPortFrom(src, sport)
	m.Dst = netip.AddrPortFrom(dst, dport)
	if haveSec {
		m.TS = time.Unix(int64(sec), int64(usec)*1000)
		m.HasTS = true
	}
	if compressed != nil && m.Payload == nil {
		out, err := d.inflate(compressed)
		if err != nil {
			return err
		}
		m.Payload = out
		m.Compressed = true
	}
	return nil
}

// fixedSize is the value size of a fixed-size chunk type, or 0.
func fixedSize(typ uint16) int {
	switch typ {
	case ChunkIPFamily, ChunkIPProto, ChunkProtoType, ChunkIPTOS:
		return 1
	case ChunkSrcPort, ChunkDstPort, ChunkKeepAlive, ChunkVLAN:
		return 2
	case ChunkIPv4Src, ChunkIPv4Dst, ChunkTimeSec, ChunkTimeUsec, ChunkAgentID:
		return 4
	case ChunkIPv6Src, ChunkIPv6Dst:
		return 16
	}
	return 0
}

// inflate decompresses a zlib (RFC 1950) or gzip (RFC 1952) payload into the
// decoder's scratch buffer, refusing output past MaxInflated.
func (d *Decoder) inflate(c []byte) ([]byte, error) {
	limit := d.MaxInflated
	if limit <= 0 {
		limit = DefaultMaxInflated
	}
	d.src.Reset(c)
	var r io.Reader
	switch {
	case len(c) >= 2 && c[0] == 0x1f && c[1] == 0x8b:
		zr, err := gzip.NewReader(&d.src)
		if err != nil {
			return nil, fmt.Errorf("inflating HEP3 payload: %w", err)
		}
		r = zr
	case len(c) >= 2 && c[0]&0x0f == 8 && (uint16(c[0])<<8|uint16(c[1]))%31 == 0:
		zr, err := zlib.NewReader(&d.src)
		if err != nil {
			return nil, fmt.Errorf("inflating HEP3 payload: %w", err)
		}
		r = zr
	default:
		return nil, errors.New("inflating HEP3 payload: neither zlib nor gzip data")
	}
	d.inflated.Reset()
	n, err := d.inflated.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("inflating HEP3 payload: %w", err)
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("inflating HEP3 payload: exceeds %d bytes", limit)
	}
	return d.inflated.Bytes(), nil
}

// Encode writes m as a HEP envelope of m.Version (3 when 0). Version 3 writes
// every field that is present; with m.Compressed the payload is
// zlib-compressed into chunk 0x0010. Versions 1 and 2 write the fixed layout
// (the version 2 time header in little-endian order, as x86 senders do). It
// is meant for tests and tools.
func Encode(m *Message) ([]byte, error) {
	switch m.Version {
	case 0, 3:
		return encode3(m)
	case 1, 2:
		return encode2(m)
	}
	return nil, fmt.Errorf("encoding HEP: unsupported version %d", m.Version)
}

func family(m *Message) uint8 {
	if m.Family != 0 {
		return m.Family
	}
	if m.Src.Addr().Is6() && !m.Src.Addr().Is4In6() {
		return FamilyIPv6
	}
	return FamilyIPv4
}

func encode2(m *Message) ([]byte, error) {
	fam := family(m)
	var b []byte
	hl := 16
	if fam == FamilyIPv6 {
		hl = 40
	}
	b = append(b, byte(m.Version), byte(hl), fam, m.Protocol)
	b = binary.BigEndian.AppendUint16(b, m.Src.Port())
	b = binary.BigEndian.AppendUint16(b, m.Dst.Port())
	if fam == FamilyIPv6 {
		s, d := m.Src.Addr().As16(), m.Dst.Addr().As16()
		b = append(append(b, s[:]...), d[:]...)
	} else {
		if !m.Src.Addr().Is4() || !m.Dst.Addr().Is4() {
			return nil, errors.New("encoding HEP version 2: IPv4 family needs IPv4 addresses")
		}
		s, d := m.Src.Addr().As4(), m.Dst.Addr().As4()
		b = append(append(b, s[:]...), d[:]...)
	}
	if m.Version == 2 {
		b = binary.LittleEndian.AppendUint32(b, uint32(m.TS.Unix()))
		b = binary.LittleEndian.AppendUint32(b, uint32(m.TS.Nanosecond()/1000))
		b = binary.LittleEndian.AppendUint16(b, uint16(m.AgentID))
		b = append(b, 0, 0)
	}
	return append(b, m.Payload...), nil
}

func encode3(m *Message) ([]byte, error) {
	b := []byte("HEP3\x00\x00")
	tooLong := false
	chunk := func(typ uint16, v []byte) {
		if len(v) > MaxLen-12 {
			tooLong = true
			return
		}
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint16(b, typ)
		b = binary.BigEndian.AppendUint16(b, uint16(6+len(v)))
		b = append(b, v...)
	}
	fam := family(m)
	chunk(ChunkIPFamily, []byte{fam})
	chunk(ChunkIPProto, []byte{m.Protocol})
	if fam == FamilyIPv6 {
		if m.Src.Addr().IsValid() {
			s := m.Src.Addr().As16()
			chunk(ChunkIPv6Src, s[:])
		}
		if m.Dst.Addr().IsValid() {
			d := m.Dst.Addr().As16()
			chunk(ChunkIPv6Dst, d[:])
		}
	} else {
		if a := m.Src.Addr(); a.Is4() {
			s := a.As4()
			chunk(ChunkIPv4Src, s[:])
		}
		if a := m.Dst.Addr(); a.Is4() {
			d := a.As4()
			chunk(ChunkIPv4Dst, d[:])
		}
	}
	chunk(ChunkSrcPort, binary.BigEndian.AppendUint16(nil, m.Src.Port()))
	chunk(ChunkDstPort, binary.BigEndian.AppendUint16(nil, m.Dst.Port()))
	if m.HasTS {
		chunk(ChunkTimeSec, binary.BigEndian.AppendUint32(nil, uint32(m.TS.Unix())))
		chunk(ChunkTimeUsec, binary.BigEndian.AppendUint32(nil, uint32(m.TS.Nanosecond()/1000)))
	}
	if m.HasProtoType || m.ProtoType != 0 {
		chunk(ChunkProtoType, []byte{m.ProtoType})
	}
	if m.HasAgentID {
		chunk(ChunkAgentID, binary.BigEndian.AppendUint32(nil, m.AgentID))
	}
	if m.KeepAlive != 0 {
		chunk(ChunkKeepAlive, binary.BigEndian.AppendUint16(nil, m.KeepAlive))
	}
	if m.AuthKey != nil {
		chunk(ChunkAuthKey, m.AuthKey)
	}
	if m.CorrelationID != nil {
		chunk(ChunkCorrelationID, m.CorrelationID)
	}
	if m.HasVLAN {
		chunk(ChunkVLAN, binary.BigEndian.AppendUint16(nil, m.VLAN))
	}
	if m.GroupID != nil {
		chunk(ChunkGroupID, m.GroupID)
	}
	if m.HasTOS {
		chunk(ChunkIPTOS, []byte{m.TOS})
	}
	if m.Payload != nil {
		if m.Compressed {
			var z bytes.Buffer
			w := zlib.NewWriter(&z)
			if _, err := w.Write(m.Payload); err != nil {
				return nil, fmt.Errorf("encoding HEP3: compressing payload: %w", err)
			}
			if err := w.Close(); err != nil {
				return nil, fmt.Errorf("encoding HEP3: compressing payload: %w", err)
			}
			if z.Len() > MaxLen-6 {
				return nil, errors.New("encoding HEP3: compressed payload too long")
			}
			chunk(ChunkCompressed, z.Bytes())
		} else {
			if len(m.Payload) > MaxLen-6 {
				return nil, errors.New("encoding HEP3: payload too long")
			}
			chunk(ChunkPayload, m.Payload)
		}
	}
	if tooLong {
		return nil, errors.New("encoding HEP3: a chunk is too long")
	}
	if len(b) > MaxLen {
		return nil, fmt.Errorf("encoding HEP3: envelope of %d bytes exceeds %d", len(b), MaxLen)
	}
	binary.BigEndian.PutUint16(b[4:6], uint16(len(b)))
	return b, nil
}

// AgentIDOf reads the capture agent id an envelope claims without decoding
// the rest: chunk 0x000c of a HEP3 envelope (vendor 0, four value bytes),
// or the version 2 header's capture id, read as Decode reads it. ok is
// false when the envelope carries none or is not one. It allocates nothing
// and reads only within b (and a HEP3 envelope's own total length).
func AgentIDOf(b []byte) (id uint32, ok bool) {
	if len(b) >= 6 && string(b[:4]) == "HEP3" {
		total := int(binary.BigEndian.Uint16(b[4:6]))
		if total > len(b) || total < 6 {
			return 0, false
		}
		p := b[6:total]
		for len(p) >= 6 {
			vendor := binary.BigEndian.Uint16(p[0:2])
			typ := binary.BigEndian.Uint16(p[2:4])
			cl := int(binary.BigEndian.Uint16(p[4:6]))
			if cl < 6 || cl > len(p) {
				return 0, false
			}
			if vendor == 0 && typ == ChunkAgentID && cl == 10 {
				return binary.BigEndian.Uint32(p[6:10]), true
			}
			p = p[cl:]
		}
		return 0, false
	}
	if len(b) > 0 && b[0] == 2 {
		var m Message
		if decode2(b, &m) == nil && m.HasAgentID {
			return m.AgentID, true
		}
	}
	return 0, false
}
