package engine

import (
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/rtp"
)

// Tap sees what the router reads, for re-emission: -O writes the frames
// back to a capture file (core/pcapout), -H forwards the SIP and RTCP to a
// HEP receiver (core/hepsend). Its methods run on the router's goroutine
// with the writer lock held: they must copy what they keep and return
// quickly. Byte slices are borrowed.
type Tap interface {
	// Frame receives every link-layer frame a file or live source reads,
	// before it is decoded (HEP listener datagrams are not link-layer
	// frames and do not pass here).
	Frame(f *packet.Frame)
	// SIP receives every SIP message the router parses (retransmissions
	// and duplicates included, as an agent on the wire sees them): raw is
	// the message's bytes, p its transport addressing.
	SIP(p *packet.Packet, raw []byte)
	// RTCP receives every UDP payload offered to the stream store that
	// looks like RTCP (core/rtp.LooksLikeRTCP).
	RTCP(p *packet.Packet)
}

// SetTap installs the tap (nil removes it). Call it before the sources
// start. With a tap a multi-core file load decodes every frame on the
// router's goroutine (no frame is handed to a media worker undecoded), so
// the tap sees every RTCP packet; the workers still do the media.
func (c *Capture) SetTap(t Tap) {
	c.wmu.Lock()
	c.tap = t
	c.wmu.Unlock()
}

// tapMedia offers a media payload to the tap (wmu held, c.tap non-nil).
func (c *Capture) tapMedia(p *packet.Packet) {
	if rtp.LooksLikeRTCP(p.Payload) {
		c.tap.RTCP(p)
	}
}
