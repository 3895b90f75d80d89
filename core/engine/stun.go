package engine

// STUN, TURN and ICE on the router (engine.md §2, core/stun). A UDP payload
// whose first byte is 0-3 and that carries the magic cookie is STUN; one
// whose first byte is 64-79 and whose length field fits the datagram is a
// TURN ChannelData message (RFC 7983 §7). Both are read on the router
// goroutine, the single writer of the tracker. A ChannelData message (or a
// Send/Data indication) whose allocation and channel binding were seen is
// unwrapped and its data routed again as the relayed packet it stands for,
// with the addresses RFC 8656 gives it (from the client: relayed address →
// peer; from the server: peer → relayed address), so relayed RTP reaches
// the stream store under the addresses the SDP announced. Unwrapping is one
// level deep: ChannelData inside ChannelData is counted, not unwrapped.

import (
	"encoding/binary"
	"net/netip"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/stun"
)

// maybeSTUN is the router's cheap test for the two TURN/STUN shapes:
// first byte 0-3 with the magic cookie, or 64-127 (RFC 7983's 64-79 and the
// RFC 5766 channels coturn still uses) with a ChannelData length that fits
// (RFC 8656 §12.5: at most 3 bytes of padding).
func maybeSTUN(b []byte) action {
	switch c := b[0]; {
	case c < 4:
		if len(b) >= stun.HeaderLen && binary.BigEndian.Uint32(b[4:8]) == stun.MagicCookie {
			return actSTUN
		}
	case c&0xc0 == 0x40: // 64-127: RFC 5766's channels 0x4000-0x7FFF
		if len(b) >= 4 {
			n := int(binary.BigEndian.Uint16(b[2:4]))
			if n <= len(b)-4 && len(b)-4-n <= 3 {
				return actChannelData
			}
		}
	}
	return actOther
}

// STUN returns the capture's STUN/TURN/ICE evidence.
func (c *Capture) STUN() *stun.Tracker { return c.stun }

// routeSTUN reads one STUN message and records it; a Send or Data
// indication of a known allocation has its data routed as the relayed
// packet.
func (c *Capture) routeSTUN(p *packet.Packet) {
	c.pend.stun++
	m := &c.stunMsg
	if err := stun.Parse(p.Payload, m); err != nil {
		c.stun.NoteMalformed()
		return
	}
	src, dst, ok := c.stun.Observe(stun.Obs{TS: p.TS, Src: p.Src, Dst: p.Dst, Frame: p.Frame}, m)
	if ok && p.Origin != packet.OriginRelayed {
		c.routeRelayed(p, src, dst, m.Data)
	}
}

// routeChannelData unwraps a ChannelData message whose channel binding is
// known.
func (c *Capture) routeChannelData(p *packet.Packet) {
	c.pend.stun++
	if p.Origin == packet.OriginRelayed {
		c.pend.other++ // ChannelData inside ChannelData is not unwrapped twice
		return
	}
	cd, err := stun.ParseChannelData(p.Payload)
	if err != nil {
		c.pend.other++
		return
	}
	src, dst, known, ok := c.stun.Channel(stun.Obs{TS: p.TS, Src: p.Src, Dst: p.Dst, Frame: p.Frame}, cd.Channel)
	switch {
	case !known:
		// shaped like ChannelData, between addresses no TURN evidence
		// names: an ordinary datagram, offered to the stream store
		c.pend.stun--
		if c.media != nil {
			c.routeMedia(p)
		} else {
			c.pend.other++
		}
		return
	case !ok:
		return // counted by the tracker (relayed_unbound)
	}
	c.routeRelayed(p, src, dst, cd.Data)
}

// routeRelayed routes the data a TURN server relays as a packet of its
// own: STUN (ICE checks through the relay), SIP, or media.
func (c *Capture) routeRelayed(p *packet.Packet, src, dst netip.AddrPort, data []byte) {
	if len(data) == 0 {
		return
	}
	in := &c.relayed
	*in = *p
	in.Src, in.Dst, in.Payload, in.Origin = src, dst, data, packet.OriginRelayed
	c.pend.packets++
	switch c.classify(in) {
	case actSTUN:
		c.routeSTUN(in)
	case actSIP:
		// SIP relayed through TURN keeps its wire origin (the message
		// views' input_origin names how the capture got it)
		in.Origin = p.Origin
		c.routeSIP(in, in.Payload)
	case actMedia:
		c.routeMedia(in)
	default:
		c.pend.other++
	}
}
