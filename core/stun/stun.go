// Package stun reads STUN (RFC 8489, formerly RFC 5389), its TURN usage
// (RFC 8656, formerly RFC 5766) and the ICE attributes (RFC 8445) off the
// wire, and keeps the evidence they leave about NAT traversal: transactions
// (answered, unanswered, retransmitted), the NAT mappings a server reported
// (XOR-MAPPED-ADDRESS), TURN allocations with their relayed addresses,
// lifetimes and channels, and ICE connectivity checks (nominated pairs,
// role conflicts).
//
// Parsing is zero-copy over the datagram: a Message's byte fields are views
// into the bytes given to Parse. Every length is checked against the bytes
// present before it is used; a malformed message is an error, never a
// panic. MESSAGE-INTEGRITY is noted, never evaluated (engine.md §2: sipnab
// holds no credentials); FINGERPRINT is verified (RFC 8489 §14.7).
//
// Demultiplexing follows RFC 7983 §7: on a port shared with media the first
// byte tells STUN (0-3), TURN ChannelData (64-79) and RTP/RTCP (128-191)
// apart.
package stun

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net/netip"
)

// MagicCookie is the fixed value in bytes 4-7 of every RFC 5389/8489
// message (RFC 8489 §5).
const MagicCookie = 0x2112A442

// fingerprintXOR is XORed into the CRC-32 of a FINGERPRINT attribute
// (RFC 8489 §14.7).
const fingerprintXOR = 0x5354554e

// HeaderLen is the length of the STUN header (RFC 8489 §5).
const HeaderLen = 20

// MaxPeers bounds the XOR-PEER-ADDRESS attributes a message's Peers keeps
// (a CreatePermission may carry several, RFC 8656 §9.1); more are counted
// in PeersDropped.
const MaxPeers = 4

// Class is a message's class (RFC 8489 §5).
type Class uint8

// The four classes.
const (
	ClassRequest    Class = 0
	ClassIndication Class = 1
	ClassSuccess    Class = 2
	ClassError      Class = 3
)

func (c Class) String() string {
	switch c {
	case ClassRequest:
		return "request"
	case ClassIndication:
		return "indication"
	case ClassSuccess:
		return "success_response"
	case ClassError:
		return "error_response"
	}
	return "unknown"
}

// Method is a message's method (12 bits).
type Method uint16

// Methods: Binding (RFC 8489 §18.2), the TURN methods (RFC 8656 §17) and
// the TCP relay methods (RFC 6062 §6.1).
const (
	MethodBinding           Method = 0x001
	MethodAllocate          Method = 0x003
	MethodRefresh           Method = 0x004
	MethodSend              Method = 0x006
	MethodData              Method = 0x007
	MethodCreatePermission  Method = 0x008
	MethodChannelBind       Method = 0x009
	MethodConnect           Method = 0x00a
	MethodConnectionBind    Method = 0x00b
	MethodConnectionAttempt Method = 0x00c
)

func (m Method) String() string {
	switch m {
	case MethodBinding:
		return "Binding"
	case MethodAllocate:
		return "Allocate"
	case MethodRefresh:
		return "Refresh"
	case MethodSend:
		return "Send"
	case MethodData:
		return "Data"
	case MethodCreatePermission:
		return "CreatePermission"
	case MethodChannelBind:
		return "ChannelBind"
	case MethodConnect:
		return "Connect"
	case MethodConnectionBind:
		return "ConnectionBind"
	case MethodConnectionAttempt:
		return "ConnectionAttempt"
	}
	return "unknown"
}

// Attribute types sipnab reads (RFC 8489 §18.3, RFC 8656 §18, RFC 8445
// §16.1, RFC 5780 §7).
const (
	AttrMappedAddress         = 0x0001
	AttrUsername              = 0x0006
	AttrMessageIntegrity      = 0x0008
	AttrErrorCode             = 0x0009
	AttrUnknownAttributes     = 0x000a
	AttrChannelNumber         = 0x000c
	AttrLifetime              = 0x000d
	AttrXORPeerAddress        = 0x0012
	AttrData                  = 0x0013
	AttrRealm                 = 0x0014
	AttrNonce                 = 0x0015
	AttrXORRelayedAddress     = 0x0016
	AttrRequestedFamily       = 0x0017
	AttrEvenPort              = 0x0018
	AttrRequestedTransport    = 0x0019
	AttrDontFragment          = 0x001a
	AttrMessageIntegritySHA   = 0x001c
	AttrPasswordAlgorithm     = 0x001d
	AttrUserhash              = 0x001e
	AttrXORMappedAddress      = 0x0020
	AttrReservationToken      = 0x0022
	AttrPriority              = 0x0024
	AttrUseCandidate          = 0x0025
	AttrPasswordAlgorithms    = 0x8002
	AttrAlternateDomain       = 0x8003
	AttrSoftware              = 0x8022
	AttrAlternateServer       = 0x8023
	AttrFingerprint           = 0x8028
	AttrICEControlled         = 0x8029
	AttrICEControlling        = 0x802a
	AttrResponseOrigin        = 0x802b
	AttrOtherAddress          = 0x802c
	attrXORMappedAddressOld   = 0x8020 // pre-RFC 5389 drafts; read as XOR-MAPPED-ADDRESS
	maxSoftware               = 128    // RFC 8489 §14.14: fewer than 128 characters
	maxReason                 = 128    // RFC 8489 §14.8: fewer than 128 characters
	errorRoleConflict         = 487    // RFC 8445 §7.2.5.1
	errorAllocationMismatch   = 437    // RFC 8656 §18
	errorStaleNonce           = 438    // RFC 8489 §14.8
	errorUnauthorized         = 401    // RFC 8489 §14.8
	errorInsufficientCapacity = 508    // RFC 8656 §18
)

// Errors Parse returns. A datagram that fails ErrNotSTUN is not STUN at all;
// the others are STUN-shaped messages that are malformed.
var (
	ErrNotSTUN     = errors.New("stun: not a STUN message")
	ErrLength      = errors.New("stun: message length disagrees with the datagram")
	ErrAttrLength  = errors.New("stun: attribute runs past the message")
	ErrAfterFinger = errors.New("stun: attribute after FINGERPRINT")
)

// Message is one parsed STUN message. Byte-slice fields are views into the
// datagram given to Parse: copy what outlives it. HasX flags tell an
// attribute that was absent from one whose value is zero.
type Message struct {
	Class  Class
	Method Method
	// Length is the header's message length (the attributes' bytes).
	Length int
	// TxID is the 96-bit transaction ID.
	TxID [12]byte

	// Attrs counts the attributes; Unknown counts those sipnab does not
	// read (comprehension-required ones, below 0x8000, among them in
	// UnknownRequired).
	Attrs, Unknown, UnknownRequired int

	XORMapped, Mapped, XORRelayed, AlternateServer, ResponseOrigin, OtherAddress netip.AddrPort
	HasXORMapped, HasMapped, HasXORRelayed, HasAlternateServer                   bool
	HasResponseOrigin, HasOtherAddress                                           bool

	// Peers are the XOR-PEER-ADDRESS attributes (at most MaxPeers; the
	// rest counted in PeersDropped).
	Peers        [MaxPeers]netip.AddrPort
	NPeers       int
	PeersDropped int

	Lifetime    uint32
	HasLifetime bool

	// ErrorCode is class*100+number (RFC 8489 §14.8); ErrorReason the
	// reason phrase as sent (a view, at most maxReason bytes).
	ErrorCode    int
	ErrorReason  []byte
	HasErrorCode bool

	// Software is the SOFTWARE value as sent (a view, at most maxSoftware
	// bytes).
	Software    []byte
	HasSoftware bool

	HasRealm, HasNonce, HasUsername  bool
	HasMessageIntegrity, HasMISHA256 bool

	// Fingerprint is the FINGERPRINT value; FingerprintOK says whether it
	// equals the CRC-32 of the message before it XOR 0x5354554e.
	Fingerprint    uint32
	HasFingerprint bool
	FingerprintOK  bool

	// ICE (RFC 8445 §7.1.1-§7.1.3).
	Priority       uint32
	HasPriority    bool
	UseCandidate   bool
	ICEControlling bool
	ICEControlled  bool
	TieBreaker     uint64

	ChannelNumber         uint16
	HasChannelNumber      bool
	RequestedTransport    uint8
	HasRequestedTransport bool

	// Data is the DATA attribute (a Send or Data indication's payload, a
	// view).
	Data    []byte
	HasData bool

	// Malformed names attribute values sipnab could not read (a bad
	// address family, a short fixed-size value); the message is still
	// used. Fixed strings, at most one per kind.
	Malformed []string
	malBuf    [4]string
}

// Kind is what the first byte of a UDP payload says it is (RFC 7983 §7).
type Kind uint8

// Kinds of a payload's first byte.
const (
	KindOther       Kind = iota
	KindSTUN             // 0-3
	KindChannelData      // 64-79 (RFC 5766 clients use up to 127: ParseChannelData)
	KindRTP              // 128-191 (RTP or RTCP)
)

// KindOf demultiplexes a payload by its first byte (RFC 7983 §7).
func KindOf(b []byte) Kind {
	if len(b) == 0 {
		return KindOther
	}
	switch c := b[0]; {
	case c <= 3:
		return KindSTUN
	case c >= 64 && c <= 79:
		return KindChannelData
	case c >= 128 && c <= 191:
		return KindRTP
	}
	return KindOther
}

// Looks reports whether b is shaped like one whole RFC 5389/8489 STUN
// message in a datagram: the two top bits zero, the magic cookie, a length
// that is a multiple of 4 and equals the bytes after the header. Cheap:
// the router asks it of payloads that are not SIP or HEP.
func Looks(b []byte) bool {
	if len(b) < HeaderLen || b[0]&0xc0 != 0 {
		return false
	}
	if binary.BigEndian.Uint32(b[4:8]) != MagicCookie {
		return false
	}
	n := int(binary.BigEndian.Uint16(b[2:4]))
	return n&3 == 0 && n+HeaderLen == len(b)
}

// Parse reads one STUN message from b (a whole datagram) into m, reusing
// m's storage. It returns ErrNotSTUN when b is not shaped as one (Looks),
// or an error for attributes that run past the message.
func Parse(b []byte, m *Message) error {
	*m = Message{}
	if !Looks(b) {
		if len(b) >= HeaderLen && b[0]&0xc0 == 0 && binary.BigEndian.Uint32(b[4:8]) == MagicCookie {
			return ErrLength
		}
		return ErrNotSTUN
	}
	t := binary.BigEndian.Uint16(b[0:2])
	// RFC 8489 §5: class bits C1 (bit 8) and C0 (bit 4); the method is the
	// remaining 12 bits M11..M0 around them.
	m.Class = Class((t>>7)&2 | (t>>4)&1)
	m.Method = Method(t&0x000f | (t>>1)&0x0070 | (t>>2)&0x0f80)
	m.Length = int(binary.BigEndian.Uint16(b[2:4]))
	copy(m.TxID[:], b[8:20])
	m.Malformed = m.malBuf[:0]
	off := HeaderLen
	for off < len(b) {
		if m.HasFingerprint {
			return ErrAfterFinger
		}
		if len(b)-off < 4 {
			return ErrAttrLength
		}
		at := binary.BigEndian.Uint16(b[off:])
		al := int(binary.BigEndian.Uint16(b[off+2:]))
		vs := off + 4
		if al > len(b)-vs {
			return ErrAttrLength
		}
		v := b[vs : vs+al]
		m.Attrs++
		m.attr(b, off, at, v)
		off = vs + (al+3)&^3
		if off > len(b) {
			return ErrAttrLength
		}
	}
	return nil
}

func (m *Message) malformed(s string) {
	for _, x := range m.Malformed {
		if x == s {
			return
		}
	}
	if len(m.Malformed) < cap(m.malBuf) {
		m.Malformed = append(m.Malformed, s)
	}
}

// attr reads one attribute whose header starts at off in b.
func (m *Message) attr(b []byte, off int, at uint16, v []byte) {
	switch at {
	case AttrMappedAddress:
		m.Mapped, m.HasMapped = m.addr(v, false, "MAPPED-ADDRESS")
	case AttrXORMappedAddress, attrXORMappedAddressOld:
		m.XORMapped, m.HasXORMapped = m.addr(v, true, "XOR-MAPPED-ADDRESS")
	case AttrXORRelayedAddress:
		m.XORRelayed, m.HasXORRelayed = m.addr(v, true, "XOR-RELAYED-ADDRESS")
	case AttrXORPeerAddress:
		if a, ok := m.addr(v, true, "XOR-PEER-ADDRESS"); ok {
			if m.NPeers < MaxPeers {
				m.Peers[m.NPeers] = a
				m.NPeers++
			} else {
				m.PeersDropped++
			}
		}
	case AttrAlternateServer:
		m.AlternateServer, m.HasAlternateServer = m.addr(v, false, "ALTERNATE-SERVER")
	case AttrResponseOrigin:
		m.ResponseOrigin, m.HasResponseOrigin = m.addr(v, false, "RESPONSE-ORIGIN")
	case AttrOtherAddress:
		m.OtherAddress, m.HasOtherAddress = m.addr(v, false, "OTHER-ADDRESS")
	case AttrLifetime:
		if len(v) != 4 {
			m.malformed("LIFETIME length")
			return
		}
		m.Lifetime, m.HasLifetime = binary.BigEndian.Uint32(v), true
	case AttrErrorCode:
		// RFC 8489 §14.8: 21 reserved bits, class (3 bits, 3-6), number
		// (0-99), then the reason phrase.
		if len(v) < 4 || v[2]&7 < 3 || v[2]&7 > 6 || v[3] > 99 {
			m.malformed("ERROR-CODE value")
			return
		}
		m.ErrorCode, m.HasErrorCode = int(v[2]&7)*100+int(v[3]), true
		m.ErrorReason = v[4:min(len(v), 4+maxReason)]
	case AttrSoftware:
		m.Software, m.HasSoftware = v[:min(len(v), maxSoftware)], true
	case AttrRealm:
		m.HasRealm = true
	case AttrNonce:
		m.HasNonce = true
	case AttrUsername, AttrUserhash:
		m.HasUsername = true
	case AttrMessageIntegrity:
		m.HasMessageIntegrity = true
	case AttrMessageIntegritySHA:
		m.HasMISHA256 = true
	case AttrFingerprint:
		if len(v) != 4 {
			m.malformed("FINGERPRINT length")
			return
		}
		m.Fingerprint, m.HasFingerprint = binary.BigEndian.Uint32(v), true
		m.FingerprintOK = fingerprintOf(b[:off]) == m.Fingerprint
	case AttrPriority:
		if len(v) != 4 {
			m.malformed("PRIORITY length")
			return
		}
		m.Priority, m.HasPriority = binary.BigEndian.Uint32(v), true
	case AttrUseCandidate:
		m.UseCandidate = true
	case AttrICEControlling, AttrICEControlled:
		if len(v) != 8 {
			m.malformed("ICE role length")
			return
		}
		m.TieBreaker = binary.BigEndian.Uint64(v)
		if at == AttrICEControlling {
			m.ICEControlling = true
		} else {
			m.ICEControlled = true
		}
	case AttrChannelNumber:
		if len(v) != 4 {
			m.malformed("CHANNEL-NUMBER length")
			return
		}
		m.ChannelNumber, m.HasChannelNumber = binary.BigEndian.Uint16(v), true
	case AttrRequestedTransport:
		if len(v) != 4 {
			m.malformed("REQUESTED-TRANSPORT length")
			return
		}
		m.RequestedTransport, m.HasRequestedTransport = v[0], true
	case AttrData:
		m.Data, m.HasData = v, true
	case AttrUnknownAttributes, AttrRequestedFamily, AttrEvenPort, AttrDontFragment,
		AttrPasswordAlgorithm, AttrPasswordAlgorithms, AttrAlternateDomain, AttrReservationToken:
		// known, not needed as evidence
	default:
		m.Unknown++
		if at < 0x8000 {
			m.UnknownRequired++
		}
	}
}

// fingerprintOf is the FINGERPRINT value of a message whose bytes before
// the FINGERPRINT attribute are b, the header's length already counting the
// attribute (RFC 8489 §14.7).
func fingerprintOf(b []byte) uint32 {
	return crc32.ChecksumIEEE(b) ^ fingerprintXOR
}

// addr reads a (XOR-)MAPPED-ADDRESS-shaped value (RFC 8489 §14.1, §14.2):
// a reserved byte, the family (1 IPv4, 2 IPv6), the port and the address,
// XORed with the magic cookie (and, for IPv6, the transaction ID) when xor.
func (m *Message) addr(v []byte, xor bool, name string) (netip.AddrPort, bool) {
	if len(v) < 4 {
		m.malformed(name + " length")
		return netip.AddrPort{}, false
	}
	port := binary.BigEndian.Uint16(v[2:4])
	if xor {
		port ^= MagicCookie >> 16
	}
	switch v[1] {
	case 1:
		if len(v) != 8 {
			m.malformed(name + " length")
			return netip.AddrPort{}, false
		}
		var a [4]byte
		copy(a[:], v[4:8])
		if xor {
			binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(a[:])^MagicCookie)
		}
		return netip.AddrPortFrom(netip.AddrFrom4(a), port), true
	case 2:
		if len(v) != 20 {
			m.malformed(name + " length")
			return netip.AddrPort{}, false
		}
		var a [16]byte
		copy(a[:], v[4:20])
		if xor {
			var k [16]byte
			binary.BigEndian.PutUint32(k[:4], MagicCookie)
			copy(k[4:], m.TxID[:])
			for i := range a {
				a[i] ^= k[i]
			}
		}
		return netip.AddrPortFrom(netip.AddrFrom16(a), port), true
	}
	m.malformed(name + " family")
	return netip.AddrPort{}, false
}

// IsICECheck reports whether a Binding request carries ICE's attributes:
// PRIORITY and a role (RFC 8445 §7.1.1, §7.1.3).
func (m *Message) IsICECheck() bool {
	return m.Method == MethodBinding && m.Class == ClassRequest && m.HasPriority && (m.ICEControlling || m.ICEControlled)
}

// ChannelData is one TURN ChannelData message (RFC 8656 §12.4): a channel
// number and the application data it carries (a view).
type ChannelData struct {
	Channel uint16
	Data    []byte
}

// ErrChannelData is returned for a payload that is not one ChannelData
// message.
var ErrChannelData = errors.New("stun: not a TURN ChannelData message")

// ParseChannelData reads a ChannelData message from a datagram (RFC 8656
// §12.4, §12.5): a channel number in 0x4000-0x7FFF (RFC 5766 §11's range,
// which coturn still uses; RFC 8656 narrowed it to 0x4000-0x4FFF), a length
// no longer than the bytes after the 4-byte header, and at most 3 bytes of
// padding after it (padding is optional over UDP).
func ParseChannelData(b []byte) (ChannelData, error) {
	if len(b) < 4 || b[0]&0xc0 != 0x40 {
		return ChannelData{}, ErrChannelData
	}
	n := int(binary.BigEndian.Uint16(b[2:4]))
	if n > len(b)-4 || len(b)-4-n > 3 {
		return ChannelData{}, ErrChannelData
	}
	return ChannelData{Channel: binary.BigEndian.Uint16(b[0:2]), Data: b[4 : 4+n]}, nil
}
