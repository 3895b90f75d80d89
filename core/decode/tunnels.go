package decode

// UDP tunnels (engine.md §2): VXLAN (RFC 7348) on 4789, GTP-U (3GPP TS
// 29.281) on 2152 and GENEVE (RFC 8926) on 6081, recognised by their
// destination port and unwrapped only when the header validates, so RTP
// that merely uses one of these ports stays RTP (an RTP version 2 header
// sets the first byte's top bits, which every one of these headers
// forbids). Each tunnel spends one unit of the frame's nesting budget
// (Config.MaxNesting) and is counted in Stats (vxlan, gtpu, geneve). A
// header that validates over an inner packet that does not decode leaves
// the datagram as a plain UDP payload, uncounted.

import (
	"encoding/binary"
	"net/netip"

	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/packet"
)

// The UDP tunnels' destination ports.
const (
	vxlanPort  = 4789
	gtpuPort   = 2152
	genevePort = 6081
)

// TunnelPort reports whether a UDP destination port is one whose
// datagrams the decoder may unwrap (VXLAN, GTP-U, GENEVE): a caller that
// decodes UDP frames apart from the decoder (the multi-core media path)
// must leave these to it.
func TunnelPort(port uint16) bool {
	return port == vxlanPort || port == gtpuPort || port == genevePort
}

// maxGTPExtensions bounds a GTP-U extension header chain.
const maxGTPExtensions = 16

// udpTunnel unwraps the tunnel of a datagram to port. ok is false when the
// header does not validate or the inner packet did not decode: the caller
// emits the datagram as a plain UDP payload.
func (d *Decoder) udpTunnel(port uint16, src, dst netip.AddrPort, payload []byte) (reason, bool) {
	var inner []byte
	var ctr *uint64
	var ipv int // the inner packet: an IP version, or 0 for Ethernet
	switch port {
	case vxlanPort:
		if !looksVXLAN(payload) {
			return reasonNone, false
		}
		inner, ctr = payload[8:], &d.st.VXLAN
	case gtpuPort:
		b, ok := gtpuTPDU(payload, d.frame != nil && d.frame.Snapped())
		if !ok {
			return reasonNone, false
		}
		inner, ctr, ipv = b, &d.st.GTPU, int(b[0]>>4)
	case genevePort:
		proto, b, ok := geneveInner(payload)
		if !ok {
			return reasonNone, false
		}
		inner, ctr = b, &d.st.GENEVE
		switch proto {
		case 0x0800:
			ipv = 4
		case 0x86DD:
			ipv = 6
		}
	default:
		return reasonNone, false
	}
	ds, has := d.dscp()
	id, hasID := d.ipID(packet.TransportUDP)
	if !d.charge(1) {
		return reasonNesting, true
	}
	*ctr++
	d.ipSeen = false
	var r reason
	if ipv == 0 {
		r = d.run(layers.LayerTypeEthernet, inner)
	} else {
		r = d.ipByVersion(inner, ipv)
	}
	if r.isZero() || d.emitted > 0 || r == reasonNesting {
		return r, true
	}
	// The inner packet did not decode: keep the datagram as plain UDP.
	*ctr--
	d.emitWith(src, dst, packet.TransportUDP, payload, false, ds, has, id, hasID)
	return reasonNone, true
}

// looksVXLAN validates a VXLAN header (RFC 7348, and the group policy
// extension): the I flag set, reserved bits clear, and room for an inner
// Ethernet header whose EtherType is one that carries IP. RTP (version 2
// sets the top bits of the first byte) never passes.
func looksVXLAN(b []byte) bool {
	if len(b) < 8+14 {
		return false
	}
	switch b[0] {
	case 0x08: // I
		if b[1] != 0 || b[2] != 0 || b[3] != 0 {
			return false
		}
	case 0x88: // G|I: group policy extension, policy id in bytes 2-3
		if b[1]&0xB6 != 0 {
			return false
		}
	default:
		return false
	}
	if b[7] != 0 {
		return false
	}
	switch binary.BigEndian.Uint16(b[8+12:]) {
	case 0x0800, 0x86DD, 0x8100, 0x88A8, 0x0806:
		return true
	}
	return false
}

// gtpuTPDU validates the GTP-U header of a G-PDU (3GPP TS 29.281 §5.1,
// §5.2) and returns the T-PDU it carries: version 1, protocol type 1
// (GTP), the spare bit clear, message type 255 (G-PDU; echo, error
// indication and end marker carry no user packet), a length (of everything
// after the first 8 bytes) the datagram holds, the optional sequence
// number, N-PDU number and next extension header type present when any of
// E, S or PN is set, an extension header chain (each a length in 4-byte
// units, never 0, ending with the next type) of at most maxGTPExtensions
// inside the length, and a T-PDU that starts like IPv4 or IPv6. snapped
// allows a length past the captured bytes.
func gtpuTPDU(b []byte, snapped bool) ([]byte, bool) {
	if len(b) < 8 || b[0]&0xF8 != 0x30 || b[1] != 0xFF {
		return nil, false
	}
	n := int(binary.BigEndian.Uint16(b[2:4]))
	body := b[8:]
	switch {
	case n <= len(body):
		body = body[:n]
	case !snapped:
		return nil, false
	}
	if b[0]&0x07 != 0 {
		if len(body) < 4 {
			return nil, false
		}
		next := body[3]
		if b[0]&0x04 == 0 {
			next = 0 // the field is meaningful only when E is set
		}
		body = body[4:]
		for i := 0; next != 0; i++ {
			if i == maxGTPExtensions || len(body) < 4 {
				return nil, false
			}
			l := int(body[0]) * 4
			if l == 0 || l > len(body) {
				return nil, false
			}
			next, body = body[l-1], body[l:]
		}
	}
	if len(body) == 0 || (body[0]>>4 != 4 && body[0]>>4 != 6) {
		return nil, false
	}
	return body, true
}

// geneveInner validates a GENEVE header (RFC 8926 §3.4) and returns the
// protocol type and the packet it carries: version 0, not a control
// message (O clear: its payload is not forwarded, §3.4), a protocol type
// of Ethernet (0x6558), IPv4 or IPv6, options (Opt Len, 4-byte units) the
// datagram holds and that their own lengths fill exactly (§3.5), and an
// inner packet of that type: an Ethernet header's 14 bytes, or an IP header
// of the named version. The reserved fields are ignored on receipt, as
// §3.4 asks.
func geneveInner(b []byte) (uint16, []byte, bool) {
	if len(b) < 8 || b[0]>>6 != 0 || b[1]&0x80 != 0 {
		return 0, nil, false
	}
	proto := binary.BigEndian.Uint16(b[2:4])
	opt := int(b[0]&0x3F) * 4
	if 8+opt > len(b) {
		return 0, nil, false
	}
	for o := b[8 : 8+opt]; len(o) > 0; {
		if len(o) < 4 {
			return 0, nil, false
		}
		l := 4 + int(o[3]&0x1F)*4
		if l > len(o) {
			return 0, nil, false
		}
		o = o[l:]
	}
	inner := b[8+opt:]
	switch {
	case proto == 0x6558 && len(inner) >= 14:
	case proto == 0x0800 && len(inner) > 0 && inner[0]>>4 == 4:
	case proto == 0x86DD && len(inner) > 0 && inner[0]>>4 == 6:
	default:
		return 0, nil, false
	}
	return proto, inner, true
}
