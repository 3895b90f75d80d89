package rtp

import (
	"errors"
	"strings"
)

// RTCP packet types.
const (
	RTCPSR    = 200 // sender report
	RTCPRR    = 201 // receiver report
	RTCPSDES  = 202 // source description
	RTCPBYE   = 203 // goodbye
	RTCPAPP   = 204 // application-defined
	RTCPRTPFB = 205 // transport-layer feedback (RFC 4585)
	RTCPPSFB  = 206 // payload-specific feedback (RFC 4585)
	RTCPXR    = 207 // extended reports (RFC 3611)
)

// MaxCNAME bounds the SDES CNAME kept from a packet (an echoed value).
const MaxCNAME = 64

// SenderInfo is the sender-information part of an SR.
type SenderInfo struct {
	NTP          uint64 // NTP timestamp of the report
	RTPTimestamp uint32
	PacketCount  uint32 // packets sent since the start of transmission
	OctetCount   uint32 // payload octets sent
}

// ReportBlock is one reception report (RFC 3550 §6.4.1): what the reporter
// claims to have received from the source SSRC.
type ReportBlock struct {
	SSRC           uint32 // the source the report is about
	FractionLost   uint8  // fraction lost since the previous report, /256
	CumulativeLost int32  // 24-bit signed cumulative loss
	HighestSeq     uint32 // extended highest sequence number received
	Jitter         uint32 // interarrival jitter in timestamp units
	LSR            uint32 // middle 32 bits of the last SR's NTP timestamp
	DLSR           uint32 // delay since that SR, 1/65536 s
}

// VoIPMetrics is an RFC 3611 §4.7 VoIP Metrics report block.
type VoIPMetrics struct {
	SSRC           uint32
	LossRate       uint8 // fraction lost, /256
	DiscardRate    uint8 // fraction discarded by the jitter buffer, /256
	BurstDensity   uint8
	GapDensity     uint8
	BurstDuration  uint16 // ms
	GapDuration    uint16 // ms
	RoundTripDelay uint16 // ms; 0 = unavailable
	EndSystemDelay uint16 // ms
	SignalLevel    int8   // dBm0; 127 = unavailable
	NoiseLevel     int8   // dBm0; 127 = unavailable
	RERL           uint8
	Gmin           uint8
	RFactor        uint8 // 127 = unavailable
	ExtRFactor     uint8
	MOSLQ          uint8 // MOS x10; 127 = unavailable
	MOSCQ          uint8 // MOS x10; 127 = unavailable
	RXConfig       uint8
	JBNominal      uint16
	JBMaximum      uint16
	JBAbsMax       uint16
}

// DLRR is one sub-block of an RFC 3611 §4.5 DLRR block.
type DLRR struct {
	SSRC uint32
	LRR  uint32 // middle 32 bits of the receiver reference time echoed
	DLRR uint32 // delay since that report, 1/65536 s
}

// RTCPPacket is one packet of a compound RTCP datagram. Only the fields of
// its Type are filled.
type RTCPPacket struct {
	Type  uint8
	Count uint8  // the 5-bit count field (report blocks, sources, subtype)
	SSRC  uint32 // sender SSRC (SR, RR, XR, APP, feedback); first source of SDES/BYE

	Sender    SenderInfo // SR only
	HasSender bool
	Reports   []ReportBlock // SR, RR
	CNAMEs    []SDESCNAME   // SDES
	Bye       []uint32      // BYE: the sources leaving
	VoIP      []VoIPMetrics // XR block type 7
	RRTR      []uint64      // XR block type 4: receiver reference NTP times
	DLRRs     []DLRR        // XR block type 5
}

// SDESCNAME is the CNAME item of one SDES chunk.
type SDESCNAME struct {
	SSRC  uint32
	CNAME string // at most MaxCNAME bytes, control characters replaced
}

var (
	errRTCPShort   = errors.New("rtcp: packet shorter than its header")
	errRTCPVersion = errors.New("rtcp: version is not 2")
	errRTCPType    = errors.New("rtcp: packet type outside 200-207")
	errRTCPLength  = errors.New("rtcp: length field runs past the datagram")
	errRTCPBody    = errors.New("rtcp: body shorter than its count says")
	errRTCPPadding = errors.New("rtcp: padding runs past the packet")
)

// ParseCompound parses every packet of a compound RTCP datagram. It stops at
// the first malformed packet and returns what it read before it together
// with the error.
func ParseCompound(b []byte) ([]RTCPPacket, error) {
	var out []RTCPPacket
	for len(b) > 0 {
		if len(b) < 4 {
			return out, errRTCPShort
		}
		if b[0]>>6 != 2 {
			return out, errRTCPVersion
		}
		if b[1] < RTCPSR || b[1] > RTCPXR {
			return out, errRTCPType
		}
		n := (int(b[2])<<8 | int(b[3]) + 1) * 4
		if n > len(b) {
			return out, errRTCPLength
		}
		body := b[4:n]
		if b[0]&0x20 != 0 {
			pad := int(b[n-1])
			if pad == 0 || pad > len(body) {
				return out, errRTCPPadding
			}
			body = body[:len(body)-pad]
		}
		p := RTCPPacket{Type: b[1], Count: b[0] & 0x1f}
		if err := p.parseBody(body); err != nil {
			return out, err
		}
		out = append(out, p)
		b = b[n:]
	}
	return out, nil
}

func (p *RTCPPacket) parseBody(body []byte) error {
	switch p.Type {
	case RTCPSR:
		if len(body) < 24 {
			return errRTCPBody
		}
		p.SSRC = be32(body)
		p.HasSender = true
		p.Sender = SenderInfo{
			NTP:          uint64(be32(body[4:]))<<32 | uint64(be32(body[8:])),
			RTPTimestamp: be32(body[12:]),
			PacketCount:  be32(body[16:]),
			OctetCount:   be32(body[20:]),
		}
		return p.parseBlocks(body[24:])
	case RTCPRR:
		if len(body) < 4 {
			return errRTCPBody
		}
		p.SSRC = be32(body)
		return p.parseBlocks(body[4:])
	case RTCPSDES:
		return p.parseSDES(body)
	case RTCPBYE:
		if int(p.Count)*4 > len(body) {
			return errRTCPBody
		}
		for i := 0; i < int(p.Count); i++ {
			p.Bye = append(p.Bye, be32(body[4*i:]))
		}
		if len(p.Bye) > 0 {
			p.SSRC = p.Bye[0]
		}
		return nil
	case RTCPXR:
		if len(body) < 4 {
			return errRTCPBody
		}
		p.SSRC = be32(body)
		return p.parseXR(body[4:])
	default: // APP, RTPFB, PSFB: sender SSRC only
		if len(body) >= 4 {
			p.SSRC = be32(body)
		}
		return nil
	}
}

func (p *RTCPPacket) parseBlocks(b []byte) error {
	if int(p.Count)*24 > len(b) {
		return errRTCPBody
	}
	if p.Count > 0 {
		p.Reports = make([]ReportBlock, p.Count)
	}
	for i := range p.Reports {
		r := b[24*i:]
		lost := int32(uint32(r[5])<<16 | uint32(r[6])<<8 | uint32(r[7]))
		if lost&0x800000 != 0 {
			lost -= 1 << 24
		}
		p.Reports[i] = ReportBlock{
			SSRC:           be32(r),
			FractionLost:   r[4],
			CumulativeLost: lost,
			HighestSeq:     be32(r[8:]),
			Jitter:         be32(r[12:]),
			LSR:            be32(r[16:]),
			DLSR:           be32(r[20:]),
		}
	}
	return nil
}

func (p *RTCPPacket) parseSDES(b []byte) error {
	for c := 0; c < int(p.Count); c++ {
		if len(b) < 4 {
			return errRTCPBody
		}
		ssrc := be32(b)
		if c == 0 {
			p.SSRC = ssrc
		}
		i := 4
		for {
			if i >= len(b) {
				return errRTCPBody
			}
			typ := b[i]
			if typ == 0 { // end of items; the chunk pads to a 32-bit boundary
				i++
				i = (i + 3) &^ 3
				break
			}
			if i+2 > len(b) {
				return errRTCPBody
			}
			l := int(b[i+1])
			if i+2+l > len(b) {
				return errRTCPBody
			}
			if typ == 1 { // CNAME
				p.CNAMEs = append(p.CNAMEs, SDESCNAME{SSRC: ssrc, CNAME: cleanText(b[i+2 : i+2+l])})
			}
			i += 2 + l
		}
		if i > len(b) {
			i = len(b)
		}
		b = b[i:]
	}
	return nil
}

func (p *RTCPPacket) parseXR(b []byte) error {
	for len(b) >= 4 {
		bt := b[0]
		n := (int(b[2])<<8 | int(b[3]) + 1) * 4
		if n > len(b) {
			return errRTCPBody
		}
		blk := b[4:n]
		switch bt {
		case 4: // receiver reference time
			if len(blk) >= 8 {
				p.RRTR = append(p.RRTR, uint64(be32(blk))<<32|uint64(be32(blk[4:])))
			}
		case 5: // DLRR
			for len(blk) >= 12 {
				p.DLRRs = append(p.DLRRs, DLRR{SSRC: be32(blk), LRR: be32(blk[4:]), DLRR: be32(blk[8:])})
				blk = blk[12:]
			}
		case 7: // VoIP metrics
			if len(blk) < 32 {
				return errRTCPBody
			}
			p.VoIP = append(p.VoIP, VoIPMetrics{
				SSRC:           be32(blk),
				LossRate:       blk[4],
				DiscardRate:    blk[5],
				BurstDensity:   blk[6],
				GapDensity:     blk[7],
				BurstDuration:  be16(blk[8:]),
				GapDuration:    be16(blk[10:]),
				RoundTripDelay: be16(blk[12:]),
				EndSystemDelay: be16(blk[14:]),
				SignalLevel:    int8(blk[16]),
				NoiseLevel:     int8(blk[17]),
				RERL:           blk[18],
				Gmin:           blk[19],
				RFactor:        blk[20],
				ExtRFactor:     blk[21],
				MOSLQ:          blk[22],
				MOSCQ:          blk[23],
				RXConfig:       blk[24],
				JBNominal:      be16(blk[26:]),
				JBMaximum:      be16(blk[28:]),
				JBAbsMax:       be16(blk[30:]),
			})
		}
		b = b[n:]
	}
	return nil
}

// cleanText copies at most MaxCNAME bytes of b, dropping trailing NULs and
// replacing control characters
// and invalid UTF-8 so an echoed value cannot carry terminal escapes.
func cleanText(b []byte) string {
	if len(b) > MaxCNAME {
		b = b[:MaxCNAME]
	}
	for len(b) > 0 && b[len(b)-1] == 0 { // some endpoints count a C-style terminator
		b = b[:len(b)-1]
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '\uFFFD'
		}
		return r
	}, s)
}
