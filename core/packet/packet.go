// Package packet holds the types every stage of the data path shares: a
// captured frame, the transport payload decoded from it, and the pointer
// back to the bytes it came from.
//
// Sources (files, live interfaces, HEP listeners) produce Frames; the decoder
// turns a Frame into zero or more Packets (one per UDP datagram, SCTP DATA
// chunk, or framed message of a reassembled TCP/WebSocket stream); the router
// classifies each Packet as SIP, RTP, RTCP, HEP or other.
//
// Byte slices in Frame and Packet are borrowed: they are valid only for the
// duration of the callback that receives them. Copy what must outlive it.
package packet

import (
	"net/netip"
	"time"
)

// Frame is one captured link-layer frame.
type Frame struct {
	TS        time.Time
	LinkType  uint16 // LINKTYPE_* value from the capture file or socket
	Data      []byte // captured bytes (borrowed)
	OrigLen   int    // length on the wire; > len(Data) when the frame was snapped
	Source    string // short source name: file base name, interface name, "hep:<addr>"
	SourceID  uint16 // index of the source within this run
	Ordinal   uint64 // 1-based frame number within its source
	InvalidTS bool   // the capture timestamp was unusable and wall clock was substituted
}

// Snapped reports whether the frame was cut short by the capture's snaplen.
func (f *Frame) Snapped() bool { return f.OrigLen > len(f.Data) }

// Transport is the transport a payload travelled on.
type Transport uint8

const (
	TransportUnknown Transport = iota
	TransportUDP
	TransportTCP
	TransportSCTP
	TransportTLS
	TransportWS
	TransportWSS
)

var transportNames = [...]string{"", "UDP", "TCP", "SCTP", "TLS", "WS", "WSS"}

func (t Transport) String() string {
	if int(t) < len(transportNames) {
		return transportNames[t]
	}
	return ""
}

// Origin says how a packet reached sipnab.
type Origin uint8

const (
	OriginUnset  Origin = iota
	OriginWire          // read off a capture file or a live interface
	OriginHEP           // carried inside a HEP envelope
	OriginUprobe        // read from a TLS library through a uprobe
	// OriginRelayed: the data of a TURN ChannelData message or Send/Data
	// indication, addressed as the relayed packet (core/stun, RFC 8656).
	OriginRelayed
)

var originNames = [...]string{"", "wire", "hep", "uprobe", "turn"}

func (o Origin) String() string {
	if int(o) < len(originNames) {
		return originNames[o]
	}
	return ""
}

// Packet is one transport payload with its addressing.
type Packet struct {
	TS        time.Time
	Src, Dst  netip.AddrPort
	Transport Transport
	Payload   []byte // borrowed
	Origin    Origin

	DSCP    uint8
	HasDSCP bool // DSCP was read from an IP header
	// IPID is the IPv4 Identification of a UDP datagram (RFC 791); HasIPID
	// is false where there is none (IPv6, TCP, SCTP, a HEP payload). A
	// mirrored copy of a datagram carries its ID; a sender's second
	// datagram, a retransmission among them, mostly carries another
	// (core/dialog/dup.go).
	IPID    uint16
	HasIPID bool

	// Frame is the frame the payload came from. It is nil when the payload
	// was not read from a frame of this run (e.g. a HEP datagram's inner
	// packet still points at the outer frame; a synthesized packet has none).
	Frame *Frame
	// Reassembled is true when the payload spans several frames (IP
	// fragments, TCP segments); frame-relative byte ranges are then unknown.
	Reassembled bool
	// HEPAgentID is the capture agent id from a HEP envelope (0 when absent).
	HEPAgentID uint32
}

// Sink receives decoded packets.
type Sink interface {
	HandlePacket(p *Packet)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(p *Packet)

func (f SinkFunc) HandlePacket(p *Packet) { f(p) }

// FrameSink receives frames from a source.
type FrameSink interface {
	HandleFrame(f *Frame)
}

// FrameSinkFunc adapts a function to FrameSink.
type FrameSinkFunc func(f *Frame)

func (fn FrameSinkFunc) HandleFrame(f *Frame) { fn(f) }
