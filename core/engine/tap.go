package engine

import (
	"net/netip"

	"github.com/sipnab/sipnab/core/capture"
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
	// RTCP receives every UDP payload offered to the stream store that is
	// a whole plain RTCP compound packet (wholeRTCP): SRTCP, whose
	// encrypted part and trailer do not parse as RTCP, does not pass.
	RTCP(p *packet.Packet)
}

// NameTap is a Tap that also takes the host names a file gives (pcapng
// Name Resolution Blocks, core/capture.Name), before the frames they
// apply to: -O writes them back.
type NameTap interface {
	Tap
	Names(source string, names []capture.Name)
}

// HandleNames hands a file's names to the tap (capture.NameSink).
func (s *fileSink) HandleNames(source string, names []capture.Name) {
	if !s.held {
		s.c.wmu.Lock()
		s.held = true
	}
	if nt, ok := s.c.tap.(NameTap); ok {
		nt.Names(source, names)
	}
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

// sendAddr is where -H sends: the transport and the receiver's address.
type sendAddr struct {
	transport packet.Transport
	addr      netip.AddrPort
}

// matches reports whether a live packet is addressed to the receiver.
func (s sendAddr) matches(p *packet.Packet) bool {
	return p.Transport == s.transport && p.Dst.Port() == s.addr.Port() && p.Dst.Addr().Unmap() == s.addr.Addr()
}

// SkipLiveTo makes live sources skip (and count, Status.HEP.OwnSenderSkipped)
// the packets addressed to addr over tr: the HEP receiver -H sends to. A
// live capture on the interface the envelopes leave by sees them; routing
// them would unwrap each message a second time and, through the tap,
// forward it again, without end. Call it before the sources start.
func (c *Capture) SkipLiveTo(tr packet.Transport, addr netip.AddrPort) {
	c.wmu.Lock()
	c.sendTo = sendAddr{transport: tr, addr: netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())}
	c.wmu.Unlock()
}

// tapMedia offers a media payload to the tap (wmu held, c.tap non-nil).
func (c *Capture) tapMedia(p *packet.Packet) {
	if rtp.LooksLikeRTCP(p.Payload) && wholeRTCP(p.Payload) {
		c.tap.RTCP(p)
	}
}

// wholeRTCP reports whether b is exactly a compound of RTCP packets (RFC
// 3550 §6.1): each starts with version 2 and a packet type of 192-223 (RFC
// 5761 §4), and their lengths add up to len(b). An SRTCP packet (RFC 3711
// §3.4) fails: after its first packet's header come encrypted bytes, then
// the E flag, index and authentication tag, which are no RTCP packet.
func wholeRTCP(b []byte) bool {
	for n := 0; len(b) > 0; n++ {
		if n == 64 || len(b) < 4 || b[0]>>6 != 2 || b[1] < 192 || b[1] > 223 {
			return false
		}
		l := (int(b[2])<<8 | int(b[3]) + 1) * 4
		if l > len(b) {
			return false
		}
		b = b[l:]
	}
	return true
}
