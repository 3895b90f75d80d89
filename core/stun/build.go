package stun

import (
	"encoding/binary"
	"net/netip"
)

// Builder writes STUN messages (RFC 8489 §5, §14): sipnab's tests and its
// capture generator use it to make traffic the parser then reads. Start a
// message with Begin, add attributes, and End it (optionally with a
// FINGERPRINT). The zero value is ready.
type Builder struct {
	b    []byte
	txID [12]byte
}

// Begin starts a message of class c and method m with transaction ID tx.
func (w *Builder) Begin(c Class, m Method, tx [12]byte) *Builder {
	t := uint16(m)&0x000f | (uint16(m)&0x0070)<<1 | (uint16(m)&0x0f80)<<2 |
		uint16(c&1)<<4 | uint16(c&2)<<7
	w.b = binary.BigEndian.AppendUint16(w.b[:0], t)
	w.b = append(w.b, 0, 0)
	w.b = binary.BigEndian.AppendUint32(w.b, MagicCookie)
	w.b = append(w.b, tx[:]...)
	w.txID = tx
	return w
}

// Attr appends an attribute with its padding to a multiple of 4.
func (w *Builder) Attr(t uint16, v []byte) *Builder {
	w.b = binary.BigEndian.AppendUint16(w.b, t)
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(len(v)))
	w.b = append(w.b, v...)
	for len(w.b)%4 != 0 {
		w.b = append(w.b, 0)
	}
	w.setLen()
	return w
}

// U32 appends a 4-byte attribute.
func (w *Builder) U32(t uint16, v uint32) *Builder {
	return w.Attr(t, binary.BigEndian.AppendUint32(nil, v))
}

// U64 appends an 8-byte attribute (ICE-CONTROLLING, ICE-CONTROLLED).
func (w *Builder) U64(t uint16, v uint64) *Builder {
	return w.Attr(t, binary.BigEndian.AppendUint64(nil, v))
}

// Address appends an address attribute, XORed when xor (RFC 8489 §14.2).
func (w *Builder) Address(t uint16, a netip.AddrPort, xor bool) *Builder {
	port := a.Port()
	ip := a.Addr().Unmap()
	v := []byte{0, 1, 0, 0}
	if ip.Is6() {
		v[1] = 2
	}
	if xor {
		port ^= MagicCookie >> 16
	}
	binary.BigEndian.PutUint16(v[2:], port)
	raw := ip.AsSlice()
	if xor {
		var k [16]byte
		binary.BigEndian.PutUint32(k[:4], MagicCookie)
		copy(k[4:], w.txID[:])
		for i := range raw {
			raw[i] ^= k[i]
		}
	}
	return w.Attr(t, append(v, raw...))
}

// ErrorCode appends an ERROR-CODE attribute (RFC 8489 §14.8).
func (w *Builder) ErrorCode(code int, reason string) *Builder {
	v := []byte{0, 0, byte(code / 100), byte(code % 100)}
	return w.Attr(AttrErrorCode, append(v, reason...))
}

// End finishes the message, adding a FINGERPRINT when fingerprint, and
// returns its bytes (valid until the next Begin).
func (w *Builder) End(fingerprint bool) []byte {
	if fingerprint {
		w.Attr(AttrFingerprint, []byte{0, 0, 0, 0})
		n := len(w.b) - 8
		binary.BigEndian.PutUint32(w.b[n+4:], fingerprintOf(w.b[:n]))
	}
	return w.b
}

func (w *Builder) setLen() {
	binary.BigEndian.PutUint16(w.b[2:4], uint16(len(w.b)-HeaderLen))
}

// AppendChannelData appends a ChannelData message (RFC 8656 §12.4) carrying
// data on channel ch, padded to a multiple of 4 when pad (required over
// TCP, optional over UDP, RFC 8656 §12.5).
func AppendChannelData(dst []byte, ch uint16, data []byte, pad bool) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, ch)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(data)))
	dst = append(dst, data...)
	for pad && (len(dst)-start)%4 != 0 {
		dst = append(dst, 0)
	}
	return dst
}
