package decode

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// ICMPError is an ICMP or ICMPv6 error message and the packet it quotes.
type ICMPError struct {
	// TS is the capture time of the frame carrying the error.
	TS time.Time
	// Frame is the frame carrying the error (borrowed for the callback).
	Frame *packet.Frame
	// Reporter is the address that sent the error.
	Reporter netip.Addr
	// V6 says the error is ICMPv6.
	V6 bool
	// Type and Code are the ICMP type and code (e.g. 3/3 port unreachable,
	// or ICMPv6 1/4).
	Type, Code uint8
	// Quoted says the quoted IP header was read; Protocol, Src and Dst are
	// then the transport protocol and addressing of the packet that caused
	// the error, as it was sent.
	Quoted   bool
	Protocol uint8
	Src, Dst netip.AddrPort
	// HasPorts says the quoted packet's ports were present.
	HasPorts bool
	// Payload is the quoted packet's transport payload as far as the
	// error quotes it (the SIP bytes of a quoted UDP datagram, or of a TCP
	// segment whose header is whole); nil when the quote ends before it.
	// Borrowed for the callback, like Frame.
	Payload []byte
	// QuoteTruncated says the error quotes fewer bytes than the quoted
	// IP header says the packet had: RFC 792 asks for the IP header and
	// 8 bytes, RFC 1812 §4.3.2.3 as much as fits in 576 bytes, RFC 4443
	// §2.4 as much as fits in the minimum IPv6 MTU (1280).
	QuoteTruncated bool
	// MTU is the next-hop MTU a fragmentation-needed error (ICMP 3/4,
	// RFC 1191) or a packet-too-big error (ICMPv6 2, RFC 4443 §3.2)
	// names; 0 when the error names none.
	MTU uint32
}

// icmpError handles an ICMP (proto 1) or ICMPv6 (58) message: errors are
// counted and offered to Config.OnICMPError; anything else yields nothing
// and is reported as an IP protocol without a transport decoder.
func (d *Decoder) icmpError(proto uint8, b []byte) reason {
	if len(b) < 8 {
		if d.truncated || d.frame.Snapped() {
			return reasonTruncated
		}
		return reasonMalformed
	}
	typ, code := b[0], b[1]
	var isErr bool
	if proto == 1 {
		isErr = typ == 3 || typ == 4 || typ == 5 || typ == 11 || typ == 12
	} else {
		isErr = typ >= 1 && typ <= 4
	}
	if !isErr {
		return reasonIPProtocol(proto)
	}
	d.st.ICMPErrors++
	if d.cfg.OnICMPError == nil {
		return reasonNone
	}
	e := &d.icmp
	rep, _ := d.addrs()
	*e = ICMPError{TS: d.frame.TS, Frame: d.frame, Reporter: rep, V6: proto == 58, Type: typ, Code: code}
	switch {
	case proto == 1 && typ == 3 && code == 4:
		e.MTU = uint32(binary.BigEndian.Uint16(b[6:8]))
	case proto == 58 && typ == 2:
		e.MTU = binary.BigEndian.Uint32(b[4:8])
	}
	quoteTuple(e, b[8:])
	d.cfg.OnICMPError(e)
	return reasonNone
}

// quoteTuple reads the IP header and the first transport bytes an ICMP error
// quotes.
func quoteTuple(e *ICMPError, q []byte) {
	var src, dst netip.Addr
	var proto uint8
	var l4 []byte
	sent := 0 // the quoted packet's length, as its IP header says
	switch {
	case len(q) >= 20 && q[0]>>4 == 4:
		ihl := int(q[0]&0x0F) * 4
		if ihl < 20 || len(q) < ihl {
			return
		}
		sent = int(binary.BigEndian.Uint16(q[2:4]))
		proto = q[9]
		src, dst = netip.AddrFrom4([4]byte(q[12:16])), netip.AddrFrom4([4]byte(q[16:20]))
		if binary.BigEndian.Uint16(q[6:8])&0x1FFF == 0 {
			l4 = q[ihl:]
		}
	case len(q) >= 40 && q[0]>>4 == 6:
		sent = 40 + int(binary.BigEndian.Uint16(q[4:6]))
		proto = q[6]
		src, dst = netip.AddrFrom16([16]byte(q[8:24])), netip.AddrFrom16([16]byte(q[24:40]))
		l4 = q[40:]
		// Walk hop-by-hop, routing and destination options headers.
		for i := 0; i < 4 && (proto == 0 || proto == 43 || proto == 60); i++ {
			if len(l4) < 8 {
				l4 = nil
				break
			}
			n := (int(l4[1]) + 1) * 8
			if len(l4) < n {
				l4 = nil
				break
			}
			proto, l4 = l4[0], l4[n:]
		}
	default:
		return
	}
	e.Quoted, e.Protocol = true, proto
	e.QuoteTruncated = len(q) < sent
	if trail := len(q) - sent; trail > 0 && trail <= len(l4) {
		// bytes past the quoted packet's own length (padding) are not
		// part of it
		l4 = l4[:len(l4)-trail]
	}
	e.Src, e.Dst = netip.AddrPortFrom(src, 0), netip.AddrPortFrom(dst, 0)
	if (proto == 6 || proto == 17 || proto == 132) && len(l4) >= 4 {
		e.Src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(l4[0:2]))
		e.Dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(l4[2:4]))
		e.HasPorts = true
	}
	switch {
	case proto == 17 && len(l4) > 8:
		e.Payload = l4[8:]
	case proto == 6 && len(l4) >= 20:
		if off := int(l4[12]>>4) * 4; off >= 20 && off < len(l4) {
			e.Payload = l4[off:]
		}
	}
}
