// Package decode turns captured frames into transport payloads.
//
// A Decoder walks each frame's link layer, VLAN/MPLS/PPPoE tags, IP headers
// and tunnels (IP-in-IP, GRE, ERSPAN I/II/III, VXLAN, GTP-U, GENEVE;
// tunnels.go) down to UDP, TCP or
// SCTP, reassembles IP fragments and TCP byte streams, frames SIP messages,
// HEP3 envelopes and WebSocket messages out of TCP streams, and emits one
// packet.Packet per UDP datagram, SCTP DATA chunk or framed stream message.
// Every frame that yields nothing because it could not be decoded is counted
// under a named reason.
//
// Headers are read with gopacket's DecodingLayerParser over preallocated
// layers, without copying: an unfragmented UDP datagram is emitted without
// any allocation. A Decoder is not safe for concurrent use: one goroutine
// owns it.
package decode

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/packet"
)

// Link types read by the decoder (LINKTYPE_* values).
const (
	LinkNull      = 0   // BSD loopback, 4-byte family in host order
	LinkEthernet  = 1   // Ethernet
	LinkPPP       = 9   // PPP
	LinkRaw       = 12  // raw IP (some BSDs)
	LinkRawOBSD   = 14  // raw IP (OpenBSD)
	LinkPPPHDLC   = 50  // PPP in HDLC-like framing
	LinkPPPoE     = 51  // PPPoE session (PPP_ETHER)
	LinkRawIP     = 101 // raw IP
	LinkCHDLC     = 104 // Cisco HDLC
	LinkLoop      = 108 // OpenBSD loopback, family in network order
	LinkLinuxSLL  = 113 // Linux cooked capture v1
	LinkIPv4      = 228 // bare IPv4
	LinkIPv6      = 229 // bare IPv6
	LinkLinuxSLL2 = 276 // Linux cooked capture v2
)

// Defaults of Config.
const (
	DefaultMaxNesting         = 5
	DefaultMaxEntries         = 10000
	DefaultTTL                = 30 * time.Second
	DefaultMaxStreamBuffer    = 64 << 10
	MinStreamBuffer           = 8 << 10
	DefaultMaxWSPayload       = 64 << 10
	DefaultMaxReassemblyBytes = 64 << 20
	DefaultMaxDatagram        = 65535
	DefaultMaxFragments       = 256
)

// Config bounds the decoder. Zero values take the defaults.
type Config struct {
	// MaxNesting is the encapsulation budget per frame: each VLAN tag, MPLS
	// label stack, PPPoE header, IP-in-IP header, GRE header (ERSPAN
	// included) and VXLAN, GTP-U or GENEVE header spends one. A frame needing more is refused
	// and counted as nesting_limit_exceeded. Default 5.
	MaxNesting int
	// MaxEntries caps IP fragment reassembly entries and TCP stream
	// directions together. At the cap the oldest entry is evicted and
	// counted. Default 10000.
	MaxEntries int
	// TTL drops a fragment entry this long after its first fragment, and a
	// TCP direction this long after its last segment, in capture time.
	// Default 30s.
	TTL time.Duration
	// MaxStreamBuffer is the number of bytes buffered per TCP direction;
	// past it the buffer is emitted as one packet and framing restarts
	// (counted as tcp_overflow_flushes). Default 64 KiB, floor 8 KiB.
	MaxStreamBuffer int
	// MaxReassemblyBytes bounds the bytes held by all fragment and TCP
	// reassembly together; past it the oldest entries are evicted.
	// Default 64 MiB.
	MaxReassemblyBytes int
	// MaxDatagram is the largest IP datagram reassembled. Default 65535.
	MaxDatagram int
	// MaxFragments is the most fragments one datagram may have. Default 256.
	MaxFragments int
	// MaxWSPayload is the largest WebSocket message unwrapped; larger ones
	// are declined and counted. Default 64 KiB.
	MaxWSPayload int
	// NoIPReassembly leaves IP fragments unjoined (counted as
	// fragments_not_joined); a first fragment's transport payload is not
	// emitted either.
	NoIPReassembly bool
	// OnICMPError, when set, receives every ICMP/ICMPv6 error with the
	// transport tuple it quotes. The value is borrowed for the call.
	OnICMPError func(*ICMPError)
}

func (c Config) withDefaults() Config {
	if c.MaxNesting <= 0 {
		c.MaxNesting = DefaultMaxNesting
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.MaxStreamBuffer <= 0 {
		c.MaxStreamBuffer = DefaultMaxStreamBuffer
	}
	if c.MaxStreamBuffer < MinStreamBuffer {
		c.MaxStreamBuffer = MinStreamBuffer
	}
	if c.MaxReassemblyBytes <= 0 {
		c.MaxReassemblyBytes = DefaultMaxReassemblyBytes
	}
	if c.MaxDatagram <= 0 || c.MaxDatagram > DefaultMaxDatagram {
		c.MaxDatagram = DefaultMaxDatagram
	}
	if c.MaxFragments <= 0 {
		c.MaxFragments = DefaultMaxFragments
	}
	if c.MaxWSPayload <= 0 {
		c.MaxWSPayload = DefaultMaxWSPayload
	}
	return c
}

// Decoder decodes frames into packets. Create it with New.
type Decoder struct {
	cfg Config

	// Preallocated layers, shared by every parser.
	eth     layers.Ethernet
	dot1q   layers.Dot1Q
	sll     cooked
	sll2    cooked
	ip4     layers.IPv4
	ip6     layers.IPv6
	ip6ext  layers.IPv6ExtensionSkipper
	ip6frag layers.IPv6Fragment
	udp     layers.UDP
	tcp     layers.TCP
	sctp    layers.SCTP
	gre     layers.GRE

	container *budgetContainer
	parsers   map[gopacket.LayerType]*gopacket.DecodingLayerParser
	// parserAt indexes parsers by layer type for the small type numbers
	// every common start layer has (a slice index instead of a map lookup
	// per frame).
	parserAt [maxIndexedLayer]*gopacket.DecodingLayerParser
	decoded  []gopacket.LayerType
	fast     fastFeedback
	noFast   bool // tests: decode every frame with the parser

	// Per-frame state.
	frame       *packet.Frame
	active      bool // a frame is being decoded: the budget is charged
	depth       int
	overNested  bool
	ipSeen      bool // an IP header was decoded since the last tunnel charge
	prevType    gopacket.LayerType
	netLayer    gopacket.LayerType
	truncated   bool
	reassembled bool
	emitted     int

	pkt packet.Packet
	now time.Time

	// Reassembly state.
	frags    map[fragKey]*fragEntry
	fragList elist
	streams  map[tcpKey]*tcpDir
	tcpList  elist
	current  *tcpDir // the stream being fed, never evicted to make room for itself
	staleTS  time.Time
	held     int // bytes held by fragment and TCP reassembly
	fragBuf  []byte
	wsBuf    []byte
	icmp     ICMPError

	sink packet.Sink

	st      Stats
	reasons slotTable
	// other counts frames of traffic that is neither SIP nor media and was
	// never meant to be read (ARP, LLDP, STP, ICMP echo...), by kind: not
	// undecodable (stats.go, otherTraffic).
	other   slotTable
	wsPorts slotTable
}

// New returns a decoder bounded by cfg.
func New(cfg Config) *Decoder {
	d := &Decoder{
		cfg:     cfg.withDefaults(),
		sll2:    cooked{v2: true},
		decoded: make([]gopacket.LayerType, 0, 16),
		frags:   make(map[fragKey]*fragEntry),
		streams: make(map[tcpKey]*tcpDir),
		parsers: make(map[gopacket.LayerType]*gopacket.DecodingLayerParser),
	}
	c := &budgetContainer{d: d}
	for _, l := range []gopacket.DecodingLayer{
		&d.eth, &d.dot1q, &d.sll, &d.sll2, &d.ip4, &d.ip6, &d.ip6ext, &d.ip6frag,
		&d.udp, &d.tcp, &d.sctp, &d.gre,
	} {
		c.Put(l)
	}
	d.container = c
	for _, t := range []gopacket.LayerType{
		layers.LayerTypeEthernet, layers.LayerTypeLinuxSLL, layers.LayerTypeLinuxSLL2,
		layers.LayerTypeDot1Q, layers.LayerTypeIPv4, layers.LayerTypeIPv6,
		layers.LayerTypeUDP, layers.LayerTypeTCP, layers.LayerTypeSCTP, layers.LayerTypeGRE,
		layers.LayerTypeIPv6HopByHop, layers.LayerTypeIPv6Routing, layers.LayerTypeIPv6Destination,
		layers.LayerTypeIPv6Fragment,
	} {
		p := gopacket.NewDecodingLayerParser(t)
		p.SetDecodingLayerContainer(c)
		d.parsers[t] = p
		if t >= 0 && t < maxIndexedLayer {
			d.parserAt[t] = p
		}
	}
	return d
}

// maxIndexedLayer bounds the layer types found by index rather than by map.
const maxIndexedLayer = 512

// parser returns the parser that starts at layer type t (nil when none).
func (d *Decoder) parser(t gopacket.LayerType) *gopacket.DecodingLayerParser {
	if t >= 0 && t < maxIndexedLayer {
		return d.parserAt[t]
	}
	return d.parsers[t]
}

// budgetContainer hands gopacket's parser its layers and charges the
// per-frame nesting budget as the parser walks from one layer to the next.
type budgetContainer struct {
	d     *Decoder
	inner gopacket.DecodingLayerSparse
}

func (c *budgetContainer) Put(l gopacket.DecodingLayer) gopacket.DecodingLayerContainer {
	c.inner = c.inner.Put(l).(gopacket.DecodingLayerSparse)
	return c
}

func (c *budgetContainer) Decoder(t gopacket.LayerType) (gopacket.DecodingLayer, bool) {
	if !c.d.spend(t) {
		return nil, false
	}
	return c.inner.Decoder(t)
}

func (c *budgetContainer) LayersDecoder(first gopacket.LayerType, df gopacket.DecodeFeedback) gopacket.DecodingLayerFunc {
	return gopacket.LayersDecoder(c, first, df)
}

// spend charges the nesting budget for entering a layer of type t. It
// reports false (and marks the frame over-nested) when the budget is spent.
func (d *Decoder) spend(t gopacket.LayerType) bool {
	if !d.active {
		return true
	}
	prev := d.prevType
	d.prevType = t
	cost := 0
	switch t {
	case layers.LayerTypeEthernet:
		if prev == layers.LayerTypeGRE && d.gre.Protocol == layers.EthernetTypeERSPAN {
			d.st.ERSPAN++ // type I: the parser follows it by itself
		}
	case layers.LayerTypeDot1Q:
		cost = 1
		d.st.VLANTags++
	case layers.LayerTypeGRE:
		cost = 1
		d.ipSeen = false
		d.st.GRE++
	case layers.LayerTypeIPv4, layers.LayerTypeIPv6:
		if d.ipSeen {
			cost = 1
			d.st.IPinIP++
		}
		d.ipSeen = true
	}
	return d.charge(cost)
}

// charge spends cost units of the nesting budget.
func (d *Decoder) charge(cost int) bool {
	if cost == 0 {
		return true
	}
	d.depth += cost
	if d.depth > d.cfg.MaxNesting {
		d.overNested = true
		return false
	}
	return true
}

// Decode decodes one frame and hands each packet it yields to sink. Packets
// and their payloads are borrowed: valid only during the sink call.
func (d *Decoder) Decode(f *packet.Frame, sink packet.Sink) {
	d.st.Frames++
	if f.Snapped() {
		d.st.SnappedFrames++
	}
	d.tick(f, sink)
	d.frame = f
	d.active = true
	d.depth, d.overNested, d.ipSeen = 0, false, false
	d.prevType = gopacket.LayerTypeZero
	d.netLayer = gopacket.LayerTypeZero
	d.truncated, d.reassembled = false, false
	d.emitted = 0
	r := d.link(f)
	d.active = false
	if d.emitted == 0 && !r.isZero() {
		if r.otherTraffic() {
			d.st.OtherTrafficFrames++
			d.other.add(r.key())
		} else {
			d.st.UndecodableFrames++
			d.reasons.add(r.key())
		}
	}
	d.frame = nil
	d.sink = nil
}

// link dispatches on the frame's link type.
func (d *Decoder) link(f *packet.Frame) reason {
	data := f.Data
	switch f.LinkType {
	case LinkEthernet:
		if r, ok := d.fastEthernet(data); ok {
			return r
		}
		return d.run(layers.LayerTypeEthernet, data)
	case LinkLinuxSLL:
		return d.run(layers.LayerTypeLinuxSLL, data)
	case LinkLinuxSLL2:
		return d.run(layers.LayerTypeLinuxSLL2, data)
	case LinkNull, LinkLoop:
		return d.loopback(data)
	case LinkRaw, LinkRawOBSD, LinkRawIP:
		return d.ipByVersion(data, 0)
	case LinkIPv4:
		return d.ipByVersion(data, 4)
	case LinkIPv6:
		return d.ipByVersion(data, 6)
	case LinkPPP, LinkPPPHDLC:
		return d.ppp(data, true)
	case LinkCHDLC:
		return d.chdlc(data)
	case LinkPPPoE:
		return d.pppoe(data)
	}
	return reasonLinkType(f.LinkType)
}

// ipByVersion starts at an IP header chosen by its version nibble; want, when
// not 0, is the only version accepted.
func (d *Decoder) ipByVersion(data []byte, want int) reason {
	if len(data) == 0 {
		return reasonTruncated
	}
	v := int(data[0] >> 4)
	if want != 0 && v != want {
		return reasonMalformed
	}
	switch v {
	case 4:
		if r, ok := d.fastIPv4(data); ok {
			return r
		}
		return d.run(layers.LayerTypeIPv4, data)
	case 6:
		return d.run(layers.LayerTypeIPv6, data)
	}
	return reasonMalformed
}

// Address families found in NULL/LOOP headers.
func familyVersion(fam uint32) int {
	switch fam {
	case 2:
		return 4
	case 10, 23, 24, 28, 30:
		return 6
	}
	return 0
}

// loopback reads the 4-byte address family of a NULL or LOOP header. NULL is
// in the capturing host's order and LOOP in network order, but both are
// seen written either way, so both orders are tried.
func (d *Decoder) loopback(data []byte) reason {
	if len(data) < 4 {
		return reasonTruncated
	}
	le, be := binary.LittleEndian.Uint32(data), binary.BigEndian.Uint32(data)
	v := familyVersion(le)
	if v == 0 {
		v = familyVersion(be)
	}
	if v == 0 {
		fam := le
		if be < le {
			fam = be
		}
		return reasonEtherType(uint16(min(fam, 0xFFFF)))
	}
	return d.ipByVersion(data[4:], v)
}

// pppProtocol maps a PPP protocol number to an IP version.
func (d *Decoder) pppIP(proto uint16, data []byte) reason {
	switch proto {
	case 0x0021:
		return d.run(layers.LayerTypeIPv4, data)
	case 0x0057:
		return d.run(layers.LayerTypeIPv6, data)
	}
	return reasonEtherType(proto)
}

// ppp reads a PPP header (optionally with the HDLC address and control
// bytes, and a compressed 1-byte protocol field).
func (d *Decoder) ppp(data []byte, hdlcOK bool) reason {
	if hdlcOK && len(data) >= 2 && data[0] == 0xFF && data[1] == 0x03 {
		data = data[2:]
	} else if hdlcOK && len(data) >= 1 && (data[0] == 0x0F || data[0] == 0x8F) {
		return d.chdlc(data)
	}
	if len(data) < 1 {
		return reasonTruncated
	}
	if data[0]&1 == 1 {
		return d.pppIP(uint16(data[0]), data[1:])
	}
	if len(data) < 2 {
		return reasonTruncated
	}
	return d.pppIP(binary.BigEndian.Uint16(data), data[2:])
}

// chdlc reads a Cisco HDLC header: address, control, EtherType.
func (d *Decoder) chdlc(data []byte) reason {
	if len(data) < 4 {
		return reasonTruncated
	}
	return d.etherType(binary.BigEndian.Uint16(data[2:4]), data[4:])
}

// pppoe reads a PPPoE session header and the PPP protocol after it.
func (d *Decoder) pppoe(data []byte) reason {
	if !d.charge(1) {
		return reasonNesting
	}
	d.st.PPPoE++
	if len(data) < 8 {
		return reasonTruncated
	}
	if data[0] != 0x11 || data[1] != 0x00 {
		return reasonMalformed
	}
	n := int(binary.BigEndian.Uint16(data[4:6]))
	body := data[6:]
	if n < 2 {
		return reasonMalformed
	}
	if n < len(body) {
		body = body[:n]
	}
	return d.ppp(body, false)
}

// etherType continues after a link header that named an EtherType the
// parser does not follow by itself.
func (d *Decoder) etherType(et uint16, data []byte) reason {
	switch et {
	case 0x0800:
		return d.run(layers.LayerTypeIPv4, data)
	case 0x86DD:
		return d.run(layers.LayerTypeIPv6, data)
	case 0x8100, 0x88A8, 0x9100:
		return d.run(layers.LayerTypeDot1Q, data)
	case 0x8847, 0x8848:
		return d.mpls(data)
	case 0x8864:
		return d.pppoe(data)
	}
	return reasonEtherType(et)
}

// mpls pops an MPLS label stack and guesses what it carries from the first
// nibble: IPv4, IPv6, or a pseudowire control word followed by Ethernet.
func (d *Decoder) mpls(data []byte) reason {
	if !d.charge(1) {
		return reasonNesting
	}
	d.st.MPLSStacks++
	for i := 0; ; i++ {
		if len(data) < 4 {
			return reasonTruncated
		}
		bottom := data[2]&0x01 != 0
		data = data[4:]
		if bottom {
			break
		}
		if i == 15 {
			return reasonMalformed
		}
	}
	if len(data) == 0 {
		return reasonTruncated
	}
	switch data[0] >> 4 {
	case 4:
		return d.run(layers.LayerTypeIPv4, data)
	case 6:
		return d.run(layers.LayerTypeIPv6, data)
	case 0:
		if len(data) < 4 {
			return reasonTruncated
		}
		return d.run(layers.LayerTypeEthernet, data[4:])
	}
	return reasonMalformed
}

// minHeader is the smallest input each layer decodes without running out of
// bytes; an error on a shorter input is a truncation.
func minHeader(t gopacket.LayerType) int {
	switch t {
	case layers.LayerTypeEthernet:
		return 14
	case layers.LayerTypeDot1Q, layers.LayerTypeGRE:
		return 4
	case layers.LayerTypeLinuxSLL:
		return 16
	case layers.LayerTypeLinuxSLL2:
		return 20
	case layers.LayerTypeIPv4, layers.LayerTypeTCP:
		return 20
	case layers.LayerTypeIPv6:
		return 40
	case layers.LayerTypeUDP, layers.LayerTypeIPv6Fragment:
		return 8
	case layers.LayerTypeSCTP:
		return 12
	case layers.LayerTypeIPv6HopByHop, layers.LayerTypeIPv6Routing, layers.LayerTypeIPv6Destination:
		return 8
	}
	return 0
}

// run decodes data starting with a layer of type start, then follows up on
// wherever gopacket's parser stopped.
func (d *Decoder) run(start gopacket.LayerType, data []byte) reason {
	if !d.spend(start) {
		return reasonNesting
	}
	p := d.parser(start)
	if p == nil {
		return reasonMalformed
	}
	err := p.DecodeLayers(data, &d.decoded)
	if _, ok := err.(gopacket.UnsupportedLayerType); ok {
		err = nil
	}
	if p.Truncated {
		d.truncated = true
	}
	if d.overNested {
		return reasonNesting
	}
	for _, t := range d.decoded {
		if t == layers.LayerTypeIPv4 || t == layers.LayerTypeIPv6 {
			d.netLayer = t
		}
	}
	if err != nil {
		// Find the layer that failed and the bytes it was given.
		failed, in := start, data
		if n := len(d.decoded); n > 0 {
			if l, ok := d.container.inner.Decoder(d.decoded[n-1]); ok {
				failed, in = l.NextLayerType(), l.LayerPayload()
			}
		}
		if p.Truncated || d.frame.Snapped() || len(in) < minHeader(failed) {
			return reasonTruncated
		}
		return reasonMalformed
	}
	if len(d.decoded) == 0 {
		return reasonMalformed
	}
	switch d.decoded[len(d.decoded)-1] {
	case layers.LayerTypeEthernet:
		if d.eth.EthernetType == layers.EthernetTypeLLC { // 802.3: a length, then LLC
			return d.llc(d.eth.Payload)
		}
		return d.afterLink(uint16(d.eth.EthernetType), d.eth.Payload)
	case layers.LayerTypeDot1Q:
		if d.dot1q.Type < 0x0600 { // a tagged 802.3 frame: a length, then LLC
			return d.llc(d.dot1q.Payload)
		}
		return d.afterLink(uint16(d.dot1q.Type), d.dot1q.Payload)
	case layers.LayerTypeLinuxSLL:
		if d.sll.Protocol == sllProtoLLC {
			return d.llc(d.sll.Payload)
		}
		return d.afterLink(d.sll.Protocol, d.sll.Payload)
	case layers.LayerTypeLinuxSLL2:
		if d.sll2.Protocol == sllProtoLLC {
			return d.llc(d.sll2.Payload)
		}
		return d.afterLink(d.sll2.Protocol, d.sll2.Payload)
	case layers.LayerTypeIPv4:
		return d.afterIPv4()
	case layers.LayerTypeIPv6:
		nh := d.ip6.NextHeader
		if d.ip6.HopByHop != nil {
			nh = d.ip6.HopByHop.NextHeader
		}
		return d.afterIP(uint8(nh), d.ip6.Payload)
	case layers.LayerTypeIPv6HopByHop, layers.LayerTypeIPv6Routing, layers.LayerTypeIPv6Destination:
		return d.afterIP(uint8(d.ip6ext.NextHeader), d.ip6ext.Payload)
	case layers.LayerTypeIPv6Fragment:
		if d.ip6frag.FragmentOffset != 0 || d.ip6frag.MoreFragments {
			return d.fragment6()
		}
		return d.afterIP(uint8(d.ip6frag.NextHeader), d.ip6frag.Payload)
	case layers.LayerTypeUDP:
		return d.afterUDP()
	case layers.LayerTypeTCP:
		return d.afterTCP()
	case layers.LayerTypeSCTP:
		return d.afterSCTP()
	case layers.LayerTypeGRE:
		return d.afterGRE()
	}
	return reasonMalformed
}

// sllProtoLLC is the Linux cooked header's protocol for an 802.2 LLC frame
// (ETH_P_802_2).
const sllProtoLLC = 0x0004

// llc reads the IEEE 802.2 LLC header of an 802.3 frame. SNAP with an
// EtherType-carrying OUI (RFC 1042's 000000, 802.1H's 0000f8) continues with
// that EtherType, so IP over SNAP is decoded; everything else is named by
// kind (spanning tree, CDP, other LLC) and yields nothing.
func (d *Decoder) llc(p []byte) reason {
	if len(p) < 3 {
		return reasonLLC(llcOther)
	}
	dsap, ssap := p[0], p[1]
	switch {
	case dsap == 0x42 && ssap == 0x42:
		return reasonLLC(llcSTP)
	case dsap == 0xAA && ssap == 0xAA && p[2] == 0x03 && len(p) >= 8:
		oui := uint32(p[3])<<16 | uint32(p[4])<<8 | uint32(p[5])
		pid := binary.BigEndian.Uint16(p[6:8])
		switch {
		case oui == 0x000000 || oui == 0x0000f8:
			return d.etherType(pid, p[8:])
		case oui == 0x00000c && pid == 0x2000:
			return reasonLLC(llcCDP)
		case oui == 0x00000c && pid == 0x010b:
			return reasonLLC(llcSTP) // Cisco PVST+
		}
	}
	return reasonLLC(llcOther)
}

// afterLink continues after a link or VLAN header the parser stopped at.
func (d *Decoder) afterLink(et uint16, payload []byte) reason {
	if len(payload) == 0 {
		if et == 0x0800 || et == 0x86DD || et == 0x8100 || et == 0x88A8 {
			return reasonTruncated
		}
		return reasonEtherType(et)
	}
	switch et {
	case 0x0800, 0x86DD, 0x8100, 0x88A8:
		// The parser follows these itself; stopping here means the
		// nesting budget refused the next layer.
		return reasonNesting
	}
	return d.etherType(et, payload)
}

func (d *Decoder) afterIPv4() reason {
	if d.ip4.Flags&layers.IPv4MoreFragments != 0 || d.ip4.FragOffset != 0 {
		return d.fragment4()
	}
	return d.afterIP(uint8(d.ip4.Protocol), d.ip4.Payload)
}

// afterIP continues after an IP (or IPv6 extension) header the parser
// stopped at, whose next protocol is proto.
func (d *Decoder) afterIP(proto uint8, payload []byte) reason {
	switch proto {
	case 1, 58:
		return d.icmpError(proto, payload)
	case 137:
		return d.mpls(payload)
	case 4, 41, 6, 17, 132, 47, 0, 43, 44, 60:
		if len(payload) == 0 {
			if d.truncated {
				return reasonTruncated
			}
			return reasonMalformed
		}
		return reasonNesting
	}
	return reasonIPProtocol(proto)
}

// dscp returns the DSCP of the innermost IP header of the current frame.
func (d *Decoder) dscp() (uint8, bool) {
	if d.frame == nil {
		return 0, false
	}
	switch d.netLayer {
	case layers.LayerTypeIPv4:
		return d.ip4.TOS >> 2, true
	case layers.LayerTypeIPv6:
		return d.ip6.TrafficClass >> 2, true
	}
	return 0, false
}

// ipID returns the Identification of the innermost IPv4 header of the
// current frame (RFC 791) for a UDP datagram: two copies of one datagram
// carry the same, two datagrams a sender sent mostly differ
// (packet.Packet.IPID). None for other transports (a TCP or SCTP payload
// is not one datagram) or IPv6.
func (d *Decoder) ipID(tr packet.Transport) (uint16, bool) {
	if tr != packet.TransportUDP || d.frame == nil || d.netLayer != layers.LayerTypeIPv4 {
		return 0, false
	}
	return d.ip4.Id, true
}

// emit hands one packet to the sink.
func (d *Decoder) emit(src, dst netip.AddrPort, tr packet.Transport, payload []byte, reassembled bool) {
	ds, has := d.dscp()
	id, hasID := d.ipID(tr)
	d.emitWith(src, dst, tr, payload, reassembled, ds, has, id, hasID)
}

func (d *Decoder) emitWith(src, dst netip.AddrPort, tr packet.Transport, payload []byte, reassembled bool, dscp uint8, hasDSCP bool, ipID uint16, hasIPID bool) {
	// Field by field: a whole-struct assignment of the reused packet costs
	// a typed copy with write barriers on every frame.
	p := &d.pkt
	p.Src, p.Dst = src, dst
	p.Transport = tr
	p.Payload = payload
	p.Origin = packet.OriginWire
	p.DSCP, p.HasDSCP = dscp, hasDSCP
	p.IPID, p.HasIPID = ipID, hasIPID
	p.Reassembled = reassembled || d.reassembled
	p.HEPAgentID = 0
	if f := d.frame; f != nil {
		p.TS = f.TS
		p.Frame = f
		d.emitted++
	} else {
		// Bytes left over from earlier frames (timeout, eviction, Flush).
		p.TS = d.staleTS
		p.Frame = nil
		p.Reassembled = true
	}
	d.st.Packets++
	d.sink.HandlePacket(p)
}

// addrs returns the innermost IP source and destination.
func (d *Decoder) addrs() (netip.Addr, netip.Addr) {
	if d.netLayer == layers.LayerTypeIPv6 {
		return netip.AddrFrom16([16]byte(d.ip6.SrcIP)), netip.AddrFrom16([16]byte(d.ip6.DstIP))
	}
	return netip.AddrFrom4([4]byte(d.ip4.SrcIP)), netip.AddrFrom4([4]byte(d.ip4.DstIP))
}

// afterUDP emits a UDP payload, or unwraps a UDP tunnel (VXLAN, GTP-U,
// GENEVE: tunnels.go) whose header validates.
func (d *Decoder) afterUDP() reason {
	u := &d.udp
	payload := u.Payload
	s, t := d.addrs()
	src, dst := netip.AddrPortFrom(s, uint16(u.SrcPort)), netip.AddrPortFrom(t, uint16(u.DstPort))
	switch u.DstPort {
	case vxlanPort, gtpuPort, genevePort:
		if r, ok := d.udpTunnel(uint16(u.DstPort), src, dst, payload); ok {
			return r
		}
	}
	if len(payload) == 0 {
		d.st.EmptyPayloads++
		return reasonNone
	}
	d.emit(src, dst, packet.TransportUDP, payload, false)
	return reasonNone
}

// afterGRE continues after a GRE header whose protocol the parser did not
// follow: ERSPAN, MPLS, or something counted as not IP.
func (d *Decoder) afterGRE() reason {
	g := &d.gre
	payload := g.Payload
	switch g.Protocol {
	case 0x88BE:
		// Type II (type I, without a sequence number, is followed by the
		// parser itself).
		d.st.ERSPAN++
		if len(payload) < 8 {
			return reasonTruncated
		}
		if payload[0]>>4 != 1 {
			return reasonMalformed
		}
		return d.run(layers.LayerTypeEthernet, payload[8:])
	case 0x22EB:
		d.st.ERSPAN++
		if len(payload) < 12 {
			return reasonTruncated
		}
		if payload[0]>>4 != 2 {
			return reasonMalformed
		}
		hl := 12
		if payload[11]&0x01 != 0 {
			hl += 8 // platform-specific subheader
		}
		if len(payload) < hl {
			return reasonTruncated
		}
		switch ft := (payload[10] >> 2) & 0x1F; ft {
		case 0:
			return d.run(layers.LayerTypeEthernet, payload[hl:])
		case 2:
			return d.ipByVersion(payload[hl:], 0)
		}
		return reasonMalformed
	case 0x8847, 0x8848:
		return d.mpls(payload)
	case 0x0800, 0x86DD, 0x6558:
		if len(payload) == 0 {
			return reasonTruncated
		}
		return reasonNesting
	}
	return reasonEtherType(uint16(g.Protocol))
}

// afterSCTP emits the user data of every DATA chunk.
func (d *Decoder) afterSCTP() reason {
	s, t := d.addrs()
	src := netip.AddrPortFrom(s, uint16(d.sctp.SrcPort))
	dst := netip.AddrPortFrom(t, uint16(d.sctp.DstPort))
	b := d.sctp.Payload
	bad := false
	for len(b) >= 4 {
		typ := b[0]
		cl := int(binary.BigEndian.Uint16(b[2:4]))
		if cl < 4 || cl > len(b) {
			bad = true
			break
		}
		if typ == 0 { // DATA
			if cl < 16 {
				bad = true
				break
			}
			d.st.SCTPDataChunks++
			if cl == 16 {
				d.st.EmptyPayloads++
			} else {
				d.emit(src, dst, packet.TransportSCTP, b[16:cl], false)
			}
		}
		adv := (cl + 3) &^ 3
		if adv >= len(b) {
			break
		}
		b = b[adv:]
	}
	if bad && d.emitted == 0 {
		if d.truncated || d.frame.Snapped() {
			return reasonTruncated
		}
		return reasonMalformed
	}
	return reasonNone
}

// Tick advances the decoder's capture clock to f's time and expires the
// reassembly entries past their TTL, handing what they held to sink, as
// Decode does before it decodes f, without decoding f. A multi-core router
// that hands f to another decoder calls it, so entries expire at the same
// frames as on one core.
func (d *Decoder) Tick(f *packet.Frame, sink packet.Sink) {
	d.tick(f, sink)
	d.sink = nil
}

// tick advances the capture clock and expires reassembly entries past their
// TTL. A substituted (wall-clock) timestamp does not move the clock.
func (d *Decoder) tick(f *packet.Frame, sink packet.Sink) {
	if !f.InvalidTS && f.TS.After(d.now) {
		d.now = f.TS
	}
	d.sink = sink
	d.expire()
}
