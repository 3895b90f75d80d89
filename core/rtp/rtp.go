// Package rtp parses RTP (RFC 3550) headers, RTCP compound packets (RFC 3550
// SR/RR/SDES/BYE, RFC 3611 XR) and RFC 4733 telephone-events, zero-copy over
// a borrowed payload. Every parser returns an error on malformed input and
// never panics or allocates from a length it did not check against the slice.
package rtp

import "errors"

// HeaderLen is the size of the fixed RTP header.
const HeaderLen = 12

// Header is the fixed RTP header plus where the payload starts. It holds no
// reference to the parsed bytes.
type Header struct {
	Version     uint8
	Padding     bool
	Extension   bool
	CSRCCount   uint8
	Marker      bool
	PayloadType uint8
	Seq         uint16
	Timestamp   uint32
	SSRC        uint32
	// PayloadOffset is where the payload starts (after CSRCs and the
	// header extension); PayloadLen is its length without padding.
	PayloadOffset int
	PayloadLen    int
}

var (
	errShort     = errors.New("rtp: packet shorter than the fixed header")
	errVersion   = errors.New("rtp: version is not 2")
	errCSRC      = errors.New("rtp: csrc list runs past the packet")
	errExtension = errors.New("rtp: header extension runs past the packet")
	errPadding   = errors.New("rtp: padding runs past the payload")
	errRTCPRange = errors.New("rtp: payload type is in the rtcp range")
)

// Parse reads the RTP header of b. It rejects a version other than 2, a
// CSRC list, extension or padding that runs past b, and a second byte in the
// RTCP packet-type range 192-223 (RFC 5761 §4), which a multiplexed RTCP
// packet would otherwise be mistaken for.
func Parse(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderLen {
		return h, errShort
	}
	h.Version = b[0] >> 6
	if h.Version != 2 {
		return h, errVersion
	}
	if b[1] >= 192 && b[1] <= 223 {
		return h, errRTCPRange
	}
	h.Padding = b[0]&0x20 != 0
	h.Extension = b[0]&0x10 != 0
	h.CSRCCount = b[0] & 0x0f
	h.Marker = b[1]&0x80 != 0
	h.PayloadType = b[1] & 0x7f
	h.Seq = uint16(b[2])<<8 | uint16(b[3])
	h.Timestamp = be32(b[4:])
	h.SSRC = be32(b[8:])
	off := HeaderLen + 4*int(h.CSRCCount)
	if off > len(b) {
		return h, errCSRC
	}
	if h.Extension {
		if off+4 > len(b) {
			return h, errExtension
		}
		words := int(b[off+2])<<8 | int(b[off+3])
		off += 4 + 4*words
		if off > len(b) {
			return h, errExtension
		}
	}
	end := len(b)
	if h.Padding {
		pad := int(b[len(b)-1])
		if pad == 0 || end-pad < off {
			return h, errPadding
		}
		end -= pad
	}
	h.PayloadOffset = off
	h.PayloadLen = end - off
	return h, nil
}

// PlausiblePayloadType reports whether pt can be a media payload type in a
// heuristically found stream: not one of the values RFC 3551 reserves for
// RTCP conflict avoidance (72-76) and not the reserved or unassigned static
// values no endpoint sends (1, 2, 20-24, 35-71, 77-95). 19 stays: old
// endpoints sent comfort noise on it.
func PlausiblePayloadType(pt uint8) bool {
	switch {
	case pt == 1 || pt == 2:
		return false
	case pt >= 20 && pt <= 24:
		return false
	case pt >= 35 && pt <= 95:
		return false
	}
	return pt <= 127
}

// LooksLikeRTCP reports whether b starts like an RTCP packet: version 2 and
// a packet type in 200-207 (SR, RR, SDES, BYE, APP, RTPFB, PSFB, XR) with a
// length field that fits the datagram.
func LooksLikeRTCP(b []byte) bool {
	if len(b) < 8 || b[0]>>6 != 2 {
		return false
	}
	if b[1] < 200 || b[1] > 207 {
		return false
	}
	n := (int(b[2])<<8 | int(b[3]) + 1) * 4
	return n <= len(b)
}

func be32(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func be16(b []byte) uint16 {
	_ = b[1]
	return uint16(b[0])<<8 | uint16(b[1])
}
