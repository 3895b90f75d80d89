package decode

import (
	"github.com/gopacket/gopacket/layers"
)

// The fast path decodes the frame shape that carries almost every RTP and
// SIP packet, Ethernet (or bare IP) / IPv4 / UDP, by calling the same
// preallocated gopacket layers the DecodingLayerParser holds, in the same
// order, without the parser's generic per-layer dispatch (container lookup,
// budget charge and next-layer interface calls). The parser would take
// exactly these steps for this shape: no layer is charged to the nesting
// budget, nothing is counted, and UDP never names a layer the parser holds
// (TestUDPPortsNameNoParsedLayer), so the parser stops after UDP just as the
// fast path does. Anything else (another EtherType or protocol, IP options
// the parser rejects, a fragment, a truncated or malformed header, a panic in
// a layer) makes the fast path give up before it has changed any state
// beyond the layer values, and the frame is decoded again from its first
// byte by the parser.

// fastFeedback is the gopacket.DecodeFeedback of the fast path: it only
// notes truncation (the fast path then gives up).
type fastFeedback struct{ truncated bool }

func (f *fastFeedback) SetTruncated() { f.truncated = true }

// fastEthernet decodes an Ethernet/IPv4/UDP frame. ok is false when the
// frame is of another shape; nothing has been counted then.
func (d *Decoder) fastEthernet(data []byte) (r reason, ok bool) {
	if d.noFast || len(data) < 14+20+8 || data[12] != 0x08 || data[13] != 0x00 {
		return reasonNone, false
	}
	d.fast.truncated = false
	if d.eth.DecodeFromBytes(data, &d.fast) != nil || d.fast.truncated || len(d.eth.Payload) == 0 {
		return reasonNone, false
	}
	return d.fastIPv4(d.eth.Payload)
}

// fastIPv4 decodes an unfragmented IPv4/UDP packet. ok is false when the
// packet is of another shape; nothing has been counted then.
func (d *Decoder) fastIPv4(data []byte) (r reason, ok bool) {
	if d.noFast || len(data) < 20+8 || data[0]>>4 != 4 || data[9] != 17 || d.depth != 0 || d.ipSeen || !d.fastIPv4UDP(data) {
		return reasonNone, false
	}
	// The state the parser leaves after Ethernet/IPv4/UDP.
	d.ipSeen = true
	d.prevType = layers.LayerTypeUDP
	d.netLayer = layers.LayerTypeIPv4
	return d.afterUDP(), true
}

// fastIPv4UDP decodes the IPv4 and UDP headers, reporting whether both
// decoded whole into an unfragmented UDP datagram. A layer that panics
// counts as not decoded (the parser then turns the panic into an error).
func (d *Decoder) fastIPv4UDP(data []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	d.fast.truncated = false
	ip := &d.ip4
	if ip.DecodeFromBytes(data, &d.fast) != nil || d.fast.truncated || len(ip.Payload) == 0 ||
		ip.Protocol != layers.IPProtocolUDP || ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0 {
		return false
	}
	return d.udp.DecodeFromBytes(ip.Payload, &d.fast) == nil && !d.fast.truncated
}
