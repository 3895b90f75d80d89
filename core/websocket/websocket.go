// Package websocket reads WebSocket framing (RFC 6455) as it appears on the
// wire, for SIP over WebSocket (RFC 7118): frame headers, payload unmasking,
// message assembly from fragments, and recognition of the HTTP Upgrade
// handshake. It never allocates from a length it has not checked against
// its caller's limit.
package websocket

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Opcode is a WebSocket frame opcode.
type Opcode uint8

// Frame opcodes (RFC 6455 section 5.2).
const (
	OpContinuation Opcode = 0x0
	OpText         Opcode = 0x1
	OpBinary       Opcode = 0x2
	OpClose        Opcode = 0x8
	OpPing         Opcode = 0x9
	OpPong         Opcode = 0xA
)

// IsControl reports whether the opcode is a control frame (close, ping, pong
// or a reserved control opcode).
func (o Opcode) IsControl() bool { return o&0x8 != 0 }

// IsKnown reports whether the opcode is defined by RFC 6455.
func (o Opcode) IsKnown() bool {
	switch o {
	case OpContinuation, OpText, OpBinary, OpClose, OpPing, OpPong:
		return true
	}
	return false
}

// MaxHeaderLen is the longest possible frame header: 2 bytes, an 8-byte
// extended length and a 4-byte masking key.
const MaxHeaderLen = 14

// Header is a decoded frame header.
type Header struct {
	Fin    bool   // this frame ends its message
	RSV    uint8  // the three reserved bits (RSV1..RSV3), 0 without extensions
	Opcode Opcode // frame opcode
	Masked bool   // the payload is masked (client-to-server frames)
	Key    [4]byte
	// Length is the payload length the header declares.
	Length uint64
	// HeaderLen is the number of bytes the header occupies (2 to 14).
	HeaderLen int
}

// FrameLen returns the full frame length (header plus payload), or false
// when it does not fit an int.
func (h Header) FrameLen() (int, bool) {
	const maxInt = int(^uint(0) >> 1)
	if h.Length > uint64(maxInt-h.HeaderLen) {
		return 0, false
	}
	return h.HeaderLen + int(h.Length), true
}

// Errors returned by ParseHeader.
var (
	// ErrShort means b holds only part of a frame header; read more bytes.
	ErrShort = errors.New("websocket: frame header incomplete")
	// ErrReservedBits means an RSV bit is set, which no SIP endpoint negotiates.
	ErrReservedBits = errors.New("websocket: reserved bits set")
	// ErrOpcode means the opcode is reserved.
	ErrOpcode = errors.New("websocket: reserved opcode")
	// ErrControl means a control frame is fragmented or longer than 125 bytes.
	ErrControl = errors.New("websocket: invalid control frame")
	// ErrLength means a 64-bit length has its most significant bit set.
	ErrLength = errors.New("websocket: invalid payload length")
)

// ParseHeader decodes the frame header at the start of b. It returns ErrShort
// when b is too short to hold the whole header, and a validation error when
// the header breaks RFC 6455 in a way that makes the stream unreadable
// (reserved bits or opcode, malformed control frame, 64-bit length with the
// top bit set). Non-minimal length encodings are accepted.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < 2 {
		return h, ErrShort
	}
	h.Fin = b[0]&0x80 != 0
	h.RSV = (b[0] >> 4) & 0x7
	h.Opcode = Opcode(b[0] & 0x0F)
	h.Masked = b[1]&0x80 != 0
	n := 2
	switch l7 := b[1] & 0x7F; l7 {
	case 126:
		if len(b) < 4 {
			return h, ErrShort
		}
		h.Length = uint64(binary.BigEndian.Uint16(b[2:4]))
		n = 4
	case 127:
		if len(b) < 10 {
			return h, ErrShort
		}
		h.Length = binary.BigEndian.Uint64(b[2:10])
		n = 10
		if h.Length>>63 != 0 {
			return h, ErrLength
		}
	default:
		h.Length = uint64(l7)
	}
	if h.Masked {
		if len(b) < n+4 {
			return h, ErrShort
		}
		copy(h.Key[:], b[n:n+4])
		n += 4
	}
	h.HeaderLen = n
	if h.RSV != 0 {
		return h, ErrReservedBits
	}
	if !h.Opcode.IsKnown() {
		return h, ErrOpcode
	}
	if h.Opcode.IsControl() && (!h.Fin || h.Length > 125) {
		return h, ErrControl
	}
	return h, nil
}

// Unmask XORs b in place with the masking key, starting at byte pos of the
// frame's payload (so a payload can be unmasked in pieces).
func Unmask(b []byte, key [4]byte, pos int) {
	for i := range b {
		b[i] ^= key[(pos+i)&3]
	}
}

// AppendFrame appends one frame carrying payload to dst. A non-nil key masks
// the payload (as a client does). It is meant for tests and tools.
func AppendFrame(dst []byte, fin bool, op Opcode, key *[4]byte, payload []byte) []byte {
	b0 := byte(op) & 0x0F
	if fin {
		b0 |= 0x80
	}
	var m byte
	if key != nil {
		m = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		dst = append(dst, b0, m|byte(n))
	case n <= 0xFFFF:
		dst = append(dst, b0, m|126, byte(n>>8), byte(n))
	default:
		dst = append(dst, b0, m|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	if key == nil {
		return append(dst, payload...)
	}
	dst = append(dst, key[:]...)
	start := len(dst)
	dst = append(dst, payload...)
	Unmask(dst[start:], *key, 0)
	return dst
}

// Assembler joins the data frames of one direction of a connection into
// messages, bounded by Max bytes per message. Control frames are not part
// of any message and must not be passed to Add.
type Assembler struct {
	// Max is the largest message accepted, in bytes (required, > 0).
	Max int

	buf    []byte
	frames int
	active bool
}

// Assembly errors.
var (
	// ErrTooLarge means the message would exceed Max; it was discarded.
	ErrTooLarge = errors.New("websocket: message exceeds the size limit")
	// ErrUnexpectedContinuation means a continuation frame arrived with no
	// message in progress; it was discarded.
	ErrUnexpectedContinuation = errors.New("websocket: continuation frame without a message")
	// ErrInterrupted means a new data frame started while a fragmented
	// message was in progress; the partial message was discarded and the
	// new frame accepted.
	ErrInterrupted = errors.New("websocket: fragmented message interrupted")
)

// InProgress reports whether a fragmented message is being assembled.
func (a *Assembler) InProgress() bool { return a.active }

// Buffered returns the bytes of buffer the assembler holds.
func (a *Assembler) Buffered() int { return cap(a.buf) }

// Reset discards any partial message.
func (a *Assembler) Reset() {
	a.buf = nil
	a.frames = 0
	a.active = false
}

// Add accepts the payload of one data frame (already unmasked, complete). When
// the frame ends a message it returns the message and the number of frames it
// took; the returned slice is valid until the next call. A fragmented message
// is copied; a single unfragmented frame is returned without copying.
//
// An error says the frame was refused or a partial message was discarded;
// ErrInterrupted is returned together with the new frame's own result.
func (a *Assembler) Add(h Header, payload []byte) (msg []byte, frames int, done bool, err error) {
	if h.Opcode.IsControl() {
		return nil, 0, false, ErrControl
	}
	if h.Opcode == OpContinuation {
		if !a.active {
			return nil, 0, false, ErrUnexpectedContinuation
		}
		if len(a.buf)+len(payload) > a.Max {
			a.Reset()
			return nil, 0, false, ErrTooLarge
		}
		a.buf = append(a.buf, payload...)
		a.frames++
		if !h.Fin {
			return nil, 0, false, nil
		}
		msg, frames = a.buf, a.frames
		a.active = false
		a.buf = a.buf[:0]
		a.frames = 0
		return msg, frames, true, nil
	}
	if a.active {
		a.Reset()
		err = ErrInterrupted
	}
	if len(payload) > a.Max {
		return nil, 0, false, ErrTooLarge
	}
	if h.Fin {
		return payload, 1, true, err
	}
	a.buf = append(a.buf[:0], payload...)
	a.frames = 1
	a.active = true
	return nil, 0, false, err
}

// IsUpgradeRequest reports whether head, the header section of an HTTP
// request (request line and header fields, up to the blank line), asks to
// switch the connection to WebSocket: a GET request with an
// `Upgrade: websocket` header field.
func IsUpgradeRequest(head []byte) bool {
	if !bytes.HasPrefix(head, []byte("GET ")) {
		return false
	}
	return hasUpgradeWebSocket(head)
}

// IsUpgradeResponse reports whether head, the header section of an HTTP
// response, accepts a WebSocket upgrade: status 101 with an
// `Upgrade: websocket` header field.
func IsUpgradeResponse(head []byte) bool {
	if len(head) < 12 || !bytes.HasPrefix(head, []byte("HTTP/1.")) || string(head[8:12]) != " 101" {
		return false
	}
	return hasUpgradeWebSocket(head)
}

// hasUpgradeWebSocket looks for an Upgrade header field whose value names
// websocket (case-insensitive, possibly in a comma-separated list).
func hasUpgradeWebSocket(head []byte) bool {
	for len(head) > 0 {
		var line []byte
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			line, head = head, nil
		}
		line = bytes.TrimRight(line, "\r")
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		name := bytes.TrimSpace(line[:colon])
		if !bytes.EqualFold(name, []byte("upgrade")) {
			continue
		}
		for v := range bytes.SplitSeq(line[colon+1:], []byte(",")) {
			if bytes.EqualFold(bytes.TrimSpace(v), []byte("websocket")) {
				return true
			}
		}
	}
	return false
}
