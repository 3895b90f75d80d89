package decode

import (
	"fmt"
	"sort"
)

// Reason codes of undecodable frames.
const (
	CodeNoLinkDecoder   = 1 // no decoder for the link type
	CodeNotIPEtherType  = 2 // the frame carries a non-IP EtherType, or is an 802.3/LLC frame
	CodeNoTransport     = 3 // the IP protocol is not one the decoder reads
	CodeTruncated       = 4 // the frame ends inside a header
	CodeDecoderRejected = 5 // a header is malformed, or the nesting budget ran out
)

// reason identifies why a frame yielded nothing. The zero value means "no
// reason" (the frame was decoded, even if it carried no payload).
type reason struct {
	code uint8
	num  uint32
}

// Sub-numbers of CodeDecoderRejected.
const (
	rejectedMalformed = 0
	rejectedNesting   = 1
)

var (
	reasonNone      = reason{}
	reasonTruncated = reason{code: CodeTruncated}
	reasonMalformed = reason{code: CodeDecoderRejected, num: rejectedMalformed}
	reasonNesting   = reason{code: CodeDecoderRejected, num: rejectedNesting}
)

func reasonLinkType(dlt uint16) reason { return reason{code: CodeNoLinkDecoder, num: uint32(dlt)} }
func reasonEtherType(et uint16) reason { return reason{code: CodeNotIPEtherType, num: uint32(et)} }

// IEEE 802.3 frames carry a length where Ethernet II carries an EtherType,
// then an 802.2 LLC header: they are named by what the LLC header says
// (llc_stp, llc_cdp, llc_frame), under CodeNotIPEtherType, never as an
// EtherType (a length is not EtherType 0x0000).
const (
	llcOther = 0x10000 + iota // an LLC or SNAP frame of another kind
	llcSTP                    // spanning tree BPDU (DSAP 0x42, or Cisco PVST+ over SNAP)
	llcCDP                    // Cisco Discovery Protocol (SNAP 00000c/2000)
)

func reasonLLC(kind uint32) reason    { return reason{code: CodeNotIPEtherType, num: kind} }
func reasonIPProtocol(p uint8) reason { return reason{code: CodeNoTransport, num: uint32(p)} }
func (r reason) isZero() bool         { return r.code == 0 }
func (r reason) key() uint64          { return uint64(r.code)<<32 | uint64(r.num) }
func reasonFromKey(k uint64) reason   { return reason{code: uint8(k >> 32), num: uint32(k)} }

// name renders the reason as the engine names it.
func (r reason) name() string {
	switch r.code {
	case CodeNoLinkDecoder:
		return fmt.Sprintf("unsupported_link_type_%d", r.num)
	case CodeNotIPEtherType:
		switch r.num {
		case llcOther:
			return "llc_frame"
		case llcSTP:
			return "llc_stp"
		case llcCDP:
			return "llc_cdp"
		}
		return fmt.Sprintf("not_ip_ethertype_0x%04x", r.num)
	case CodeNoTransport:
		return fmt.Sprintf("no_transport_ip_protocol_%d", r.num)
	case CodeTruncated:
		return "truncated_frame"
	case CodeDecoderRejected:
		if r.num == rejectedNesting {
			return "nesting_limit_exceeded"
		}
		return "decode_error"
	}
	return ""
}

// otherTraffic reports whether a frame that yielded nothing for this reason
// is traffic that could not have carried SIP or RTP (ARP, LLDP, spanning
// tree, CDP, ICMP echo, OSPF...): it is counted as other traffic by kind,
// never as undecodable, so capture_quality.degraded and INCOMPLETE RUN speak
// only of frames that could have carried SIP/RTP and could not be read.
// A non-IP EtherType that encapsulates frames this
// decoder does not open (802.1ah PBB, MACsec, transparent Ethernet
// bridging), and an IP protocol that can carry UDP or TCP inside it (ESP,
// AH, EtherIP, L2TPv3, UDP-Lite), stay undecodable: SIP could be in there.
func (r reason) otherTraffic() bool {
	switch r.code {
	case CodeNotIPEtherType:
		switch {
		case r.num >= llcOther: // LLC frames: STP, CDP, NetBIOS, IPX...
			return true
		case r.num < 0x0600: // not an EtherType (an unknown loopback family)
			return false
		}
		switch r.num {
		case 0x6558, 0x880B, 0x88E7, 0x88E5, 0x894F: // TEB, PPP, PBB, MACsec, NSH
			return false
		}
		return true
	case CodeNoTransport:
		switch r.num {
		case 50, 51, 97, 115, 136:
			return false
		}
		return true
	}
	return false
}

// otherName names a kind of other traffic: the protocol when it is a
// common one, else the EtherType or IP protocol number.
func (r reason) otherName() string {
	switch r.code {
	case CodeNotIPEtherType:
		switch r.num {
		case llcOther:
			return "llc"
		case llcSTP:
			return "stp"
		case llcCDP:
			return "cdp"
		case 0x0806:
			return "arp"
		case 0x8035:
			return "rarp"
		case 0x88CC:
			return "lldp"
		case 0x888E:
			return "eapol"
		case 0x8809:
			return "slow_protocols" // LACP, marker, OAM
		case 0x88F7:
			return "ptp"
		case 0x9000:
			return "loopback_ctp"
		case 0x8863:
			return "pppoe_discovery"
		}
		return fmt.Sprintf("ethertype_0x%04x", r.num)
	case CodeNoTransport:
		switch r.num {
		case 1:
			return "icmp"
		case 58:
			return "icmpv6"
		case 2:
			return "igmp"
		case 89:
			return "ospf"
		case 103:
			return "pim"
		case 112:
			return "vrrp"
		case 88:
			return "eigrp"
		}
		return fmt.Sprintf("ip_protocol_%d", r.num)
	}
	return r.name()
}

// slotTable counts occurrences of attacker-chosen keys in a fixed number of
// slots; keys that find no free slot are counted as dropped.
type slotTable struct {
	keys    [reasonSlots]uint64
	counts  [reasonSlots]uint64
	used    int
	dropped uint64
}

// reasonSlots is the number of distinct reasons (or ports) a table keeps.
const reasonSlots = 64

func (t *slotTable) add(k uint64) {
	for i := 0; i < t.used; i++ {
		if t.keys[i] == k {
			t.counts[i]++
			return
		}
	}
	if t.used == len(t.keys) {
		t.dropped++
		return
	}
	t.keys[t.used] = k
	t.counts[t.used] = 1
	t.used++
}

// ReasonCount is the number of frames that yielded nothing for one reason.
type ReasonCount struct {
	// Name is the reason as reported, e.g. "not_ip_ethertype_0x0806".
	Name string `json:"name"`
	// Code is the reason class: 1 no decoder for the link type, 2 non-IP
	// EtherType or an IEEE 802.3/LLC frame (llc_stp, llc_cdp, llc_frame),
	// 3 unsupported IP protocol, 4 truncated frame, 5 decoder rejected.
	Code int `json:"code"`
	// Count is the number of frames.
	Count uint64 `json:"count"`
	// Number is what the reason names within its class: the link type
	// (code 1), the EtherType or LLC kind (2), the IP protocol (3), 1 for
	// a nesting budget spent (5); 0 otherwise. Not serialized: Name
	// already spells it (capture_health reports it as a number).
	Number uint32 `json:"-"`
}

// PortCount is a count per transport port.
type PortCount struct {
	Port  uint16 `json:"port"`
	Count uint64 `json:"count"`
}

// Stats is a snapshot of the decoder's counters. Counters of frames that
// yielded no packet for a failure are under Undecodable; frames that were
// decoded but carried nothing to emit (a pure TCP ACK, a fragment still
// waiting for its siblings, a retransmitted segment) are counted under their
// own headings and are not undecodable.
type Stats struct {
	// Frames is the number of frames given to Decode.
	Frames uint64 `json:"frames"`
	// Packets is the number of packets emitted.
	Packets uint64 `json:"packets"`
	// SnappedFrames counts frames cut short by the capture's snap length.
	SnappedFrames uint64 `json:"snapped_frames"`

	// UndecodableFrames counts frames that yielded nothing because they
	// could not be decoded; Undecodable breaks them down by reason.
	UndecodableFrames uint64        `json:"undecodable_frames"`
	Undecodable       []ReasonCount `json:"undecodable"`
	// UndecodableReasonsDropped counts undecodable frames whose reason found
	// no free slot in the fixed-size reason table (they are still counted in
	// UndecodableFrames).
	UndecodableReasonsDropped uint64 `json:"undecodable_reasons_dropped"`

	// OtherTrafficFrames counts frames of traffic that could not have
	// carried SIP or RTP (ARP, LLDP, STP, CDP, ICMP echo, IGMP, OSPF...):
	// read and set aside, not undecodable. OtherTraffic breaks them down by
	// kind ("arp", "lldp", "stp", "cdp", "llc", "icmp", "ethertype_0x88b5",
	// "ip_protocol_132"...); OtherTrafficKindsDropped counts frames whose
	// kind found no free slot in the fixed-size table (still counted in
	// OtherTrafficFrames).
	OtherTrafficFrames       uint64        `json:"other_traffic_frames"`
	OtherTraffic             []ReasonCount `json:"other_traffic"`
	OtherTrafficKindsDropped uint64        `json:"other_traffic_kinds_dropped"`

	// EmptyPayloads counts UDP datagrams, SCTP DATA chunks and TCP
	// segments that carried no payload.
	EmptyPayloads uint64 `json:"empty_payloads"`
	// ICMPErrors counts ICMP and ICMPv6 error messages (unreachable, time
	// exceeded, parameter problem...). They emit no packet.
	ICMPErrors uint64 `json:"icmp_errors"`

	// Tunnels decapsulated, in frames.
	VLANTags   uint64 `json:"vlan_tags"`
	MPLSStacks uint64 `json:"mpls_stacks"`
	PPPoE      uint64 `json:"pppoe"`
	IPinIP     uint64 `json:"ip_in_ip"`
	GRE        uint64 `json:"gre"`
	ERSPAN     uint64 `json:"erspan"`
	VXLAN      uint64 `json:"vxlan"`
	// GTPU and GENEVE count G-PDUs (3GPP TS 29.281) and GENEVE datagrams
	// (RFC 8926) unwrapped (tunnels.go).
	GTPU   uint64 `json:"gtpu"`
	GENEVE uint64 `json:"geneve"`

	// IP fragment reassembly.
	Fragments            uint64 `json:"fragments"`
	DatagramsReassembled uint64 `json:"datagrams_reassembled"`
	FragmentTimeouts     uint64 `json:"fragment_timeouts"`
	FragmentEvictions    uint64 `json:"fragment_evictions"`
	FragmentDuplicates   uint64 `json:"fragment_duplicates"`
	FragmentsRefused     uint64 `json:"fragments_refused"`
	FragmentsNotJoined   uint64 `json:"fragments_not_joined"`
	// FragmentIncomplete counts datagrams still missing fragments when
	// Flush was called.
	FragmentIncomplete uint64 `json:"fragment_datagrams_incomplete"`
	FragmentEntries    int    `json:"fragment_entries"`

	// TCP reassembly.
	TCPSegments        uint64 `json:"tcp_segments"`
	TCPRetransmissions uint64 `json:"tcp_retransmissions"`
	TCPOverlaps        uint64 `json:"tcp_overlaps"`
	TCPOutOfOrder      uint64 `json:"tcp_out_of_order"`
	TCPGaps            uint64 `json:"tcp_gaps"`
	TCPOverflowFlushes uint64 `json:"tcp_overflow_flushes"`
	TCPIncomplete      uint64 `json:"tcp_incomplete_flushed"`
	TCPTimeouts        uint64 `json:"tcp_timeouts"`
	TCPEvictions       uint64 `json:"tcp_evictions"`
	TCPKeepalives      uint64 `json:"tcp_keepalives"`
	TCPStreams         int    `json:"tcp_streams"`

	// ReassemblyBytes is the number of bytes held by fragment and TCP
	// reassembly right now.
	ReassemblyBytes int `json:"reassembly_bytes"`

	// WebSocket unwrapping.
	WSHandshakes    uint64 `json:"ws_handshakes"`
	WSMessages      uint64 `json:"ws_messages"`
	WSControlFrames uint64 `json:"ws_control_frames"`
	// WSDeclined counts frames or messages that were not unwrapped (too
	// large, reserved bits, bad opcode, broken fragmentation);
	// WSDeclinedPorts breaks them down by the server-side port.
	WSDeclined             uint64      `json:"ws_declined"`
	WSDeclinedPorts        []PortCount `json:"ws_declined_ports"`
	WSDeclinedPortsDropped uint64      `json:"ws_declined_ports_dropped"`

	// SCTP.
	SCTPDataChunks uint64 `json:"sctp_data_chunks"`
}

// UndecodableMap returns the undecodable counts keyed by reason name.
func (s *Stats) UndecodableMap() map[string]uint64 {
	m := make(map[string]uint64, len(s.Undecodable))
	for _, r := range s.Undecodable {
		m[r.Name] = r.Count
	}
	return m
}

func (t *slotTable) reasons() []ReasonCount {
	out := make([]ReasonCount, 0, t.used)
	for i := 0; i < t.used; i++ {
		r := reasonFromKey(t.keys[i])
		out = append(out, ReasonCount{Name: r.name(), Code: int(r.code), Count: t.counts[i], Number: r.num})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// otherKinds is reasons for the other-traffic table: named by kind, counts
// of one name summed.
func (t *slotTable) otherKinds() []ReasonCount {
	out := make([]ReasonCount, 0, t.used)
	at := make(map[string]int, t.used)
	for i := 0; i < t.used; i++ {
		r := reasonFromKey(t.keys[i])
		n := r.otherName()
		if j, ok := at[n]; ok {
			out[j].Count += t.counts[i]
			continue
		}
		at[n] = len(out)
		out = append(out, ReasonCount{Name: n, Code: int(r.code), Count: t.counts[i]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// OtherTrafficMap returns the other-traffic counts keyed by kind.
func (s *Stats) OtherTrafficMap() map[string]uint64 {
	m := make(map[string]uint64, len(s.OtherTraffic))
	for _, r := range s.OtherTraffic {
		m[r.Name] += r.Count
	}
	return m
}

func (t *slotTable) ports() []PortCount {
	out := make([]PortCount, 0, t.used)
	for i := 0; i < t.used; i++ {
		out = append(out, PortCount{Port: uint16(t.keys[i]), Count: t.counts[i]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}
