package engine

import (
	"encoding/binary"
	"io"
	"net/netip"
	"sort"

	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/pcapout"
)

// SavedSIP is what WriteHeldSIP wrote.
type SavedSIP struct {
	// Dialogs and Messages count the Call-IDs and retained messages
	// written.
	Dialogs  int    `json:"dialogs"`
	Messages int    `json:"messages"`
	Frames   uint64 `json:"frames"`
	// Skipped counts messages no IP packet can hold (a UDP message over
	// 65,507 bytes): counted, not written.
	Skipped int `json:"skipped,omitempty"`
}

// heldSIPSource names the interface the saved frames carry.
const heldSIPSource = "sipnab:held-sip"

// maxSegment bounds the SIP bytes of one written TCP segment, so a frame
// stays within an IP packet and the pcapng snap length.
const maxSegment = 60000

// WriteHeldSIP writes the SIP messages the dialog store retains (every
// Call-ID held, every retained message) to w as one pcapng section of raw
// IP frames (LINKTYPE_RAW 101), in capture-time order: each message in a
// UDP datagram, or for TCP, TLS, WebSocket and SCTP in TCP segments with a
// running sequence number per direction (the plaintext sipnab read, so a
// TLS message is written as cleartext TCP). Addresses, ports and times are
// the message's own; IP and transport checksums are computed. It is what a
// live or HEP source holds when the server stops (shutdown_server save_to):
// RTP and the frames around the messages are not retained and not written.
// sipnab reads the file back to the same dialogs. app goes into the section
// header.
func (c *Capture) WriteHeldSIP(w io.Writer, app string) (SavedSIP, error) {
	return c.WriteHeldSIPOf(w, app, nil)
}

// WriteHeldSIPOf is WriteHeldSIP for the Call-IDs named (nil: every Call-ID
// held): their retained messages as one chronological run, so the
// interleaving of several calls stays as it was captured
// (build_evidence_package's signaling.pcapng).
func (c *Capture) WriteHeldSIPOf(w io.Writer, app string, callIDs []string) (SavedSIP, error) {
	st := c.dialogs
	var out SavedSIP
	var msgs []dialog.Message
	var only map[string]bool
	if callIDs != nil {
		only = make(map[string]bool, len(callIDs))
		for _, id := range callIDs {
			only[id] = true
		}
	}
	for _, rc := range st.RetainedCounts(nil) {
		if only != nil && !only[rc.CallID] {
			continue
		}
		n := 0
		for i := range rc.Retained {
			m, ok := st.MessageAt(rc.CallID, i)
			if !ok || m.Msg == nil {
				break
			}
			msgs = append(msgs, m)
			n++
		}
		if n > 0 {
			out.Dialogs++
		}
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TS.Before(msgs[j].TS) })
	s := pcapout.NewStream(w, app, "")
	seq := map[[2]netip.AddrPort]uint32{}
	var ord uint64
	for _, m := range msgs {
		m.Src, m.Dst = addressed(m.Src), addressed(m.Dst)
		raw := m.Msg.Raw
		if m.Transport == packet.TransportUDP || m.Transport == 0 {
			if len(raw) > 65507 {
				out.Skipped++
				continue
			}
			ord++
			if err := s.WriteFrame(heldFrame(m, ipPacket(m.Src, m.Dst, 17, udpSegment(m.Src, m.Dst, raw)), ord)); err != nil {
				return out, err
			}
			out.Messages++
			continue
		}
		k := [2]netip.AddrPort{m.Src, m.Dst}
		if _, ok := seq[k]; !ok {
			seq[k] = 1
		}
		for off := 0; off < len(raw) || off == 0; off += maxSegment {
			part := raw[off:min(off+maxSegment, len(raw))]
			ord++
			if err := s.WriteFrame(heldFrame(m, ipPacket(m.Src, m.Dst, 6, tcpSegment(m.Src, m.Dst, seq[k], part)), ord)); err != nil {
				return out, err
			}
			seq[k] += uint32(len(part))
			if len(raw) == 0 {
				break
			}
		}
		out.Messages++
	}
	out.Frames = s.Frames()
	return out, s.Flush()
}

// addressed gives a message without an address (a TLS uprobe's, read off
// no wire) the unspecified IPv4 address, so its frame still parses.
func addressed(a netip.AddrPort) netip.AddrPort {
	if a.Addr().IsValid() {
		return a
	}
	return netip.AddrPortFrom(netip.IPv4Unspecified(), a.Port())
}

func heldFrame(m dialog.Message, data []byte, ord uint64) *packet.Frame {
	return &packet.Frame{TS: m.TS, Data: data, OrigLen: len(data), LinkType: decode.LinkRawIP, Source: heldSIPSource, Ordinal: ord}
}

// udpSegment is a UDP header (RFC 768) with its checksum, then payload.
func udpSegment(src, dst netip.AddrPort, payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(b[0:], src.Port())
	binary.BigEndian.PutUint16(b[2:], dst.Port())
	binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
	b = append(b, payload...)
	sum := checksum(pseudoHeader(src.Addr(), dst.Addr(), 17, len(b)), b)
	if sum == 0 {
		sum = 0xffff // RFC 768: a computed 0 is sent as all ones
	}
	binary.BigEndian.PutUint16(b[6:], sum)
	return b
}

// tcpSegment is a TCP header (RFC 9293: 20 bytes, PSH|ACK) with its
// checksum, then payload.
func tcpSegment(src, dst netip.AddrPort, seq uint32, payload []byte) []byte {
	b := make([]byte, 20, 20+len(payload))
	binary.BigEndian.PutUint16(b[0:], src.Port())
	binary.BigEndian.PutUint16(b[2:], dst.Port())
	binary.BigEndian.PutUint32(b[4:], seq)
	b[12] = 5 << 4
	b[13] = 0x18 // PSH, ACK
	binary.BigEndian.PutUint16(b[14:], 65535)
	b = append(b, payload...)
	binary.BigEndian.PutUint16(b[16:], checksum(pseudoHeader(src.Addr(), dst.Addr(), 6, len(b)), b))
	return b
}

// ipPacket wraps a transport segment in an IPv4 (RFC 791) or IPv6 (RFC
// 8200) header of protocol proto.
func ipPacket(src, dst netip.AddrPort, proto uint8, seg []byte) []byte {
	s, d := src.Addr().Unmap(), dst.Addr().Unmap()
	if s.Is4() && d.Is4() {
		h := make([]byte, 20, 20+len(seg))
		h[0], h[8], h[9] = 0x45, 64, proto
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(seg)))
		s4, d4 := s.As4(), d.As4()
		copy(h[12:16], s4[:])
		copy(h[16:20], d4[:])
		binary.BigEndian.PutUint16(h[10:], checksum(nil, h))
		return append(h, seg...)
	}
	h := make([]byte, 40, 40+len(seg))
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(seg)))
	h[6], h[7] = proto, 64
	s16, d16 := s.As16(), d.As16()
	copy(h[8:24], s16[:])
	copy(h[24:40], d16[:])
	return append(h, seg...)
}

// pseudoHeader is the transport checksum's pseudo-header (RFC 768, RFC
// 9293 §3.1, RFC 8200 §8.1).
func pseudoHeader(src, dst netip.Addr, proto uint8, n int) []byte {
	src, dst = src.Unmap(), dst.Unmap()
	if src.Is4() && dst.Is4() {
		s, d := src.As4(), dst.As4()
		b := append(append(make([]byte, 0, 12), s[:]...), d[:]...)
		return append(b, 0, proto, byte(n>>8), byte(n))
	}
	s, d := src.As16(), dst.As16()
	b := append(append(make([]byte, 0, 40), s[:]...), d[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return append(b, 0, 0, 0, proto)
}

// checksum is the Internet checksum (RFC 1071) over a then b.
func checksum(a, b []byte) uint16 {
	var sum uint32
	add := func(p []byte) {
		for len(p) >= 2 {
			sum += uint32(binary.BigEndian.Uint16(p))
			p = p[2:]
		}
		if len(p) == 1 {
			sum += uint32(p[0]) << 8
		}
	}
	add(a) // a is always of even length
	add(b)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
