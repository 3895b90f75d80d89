package media

import (
	"net/netip"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/rtp"
)

// rtcpSide is what the endpoints claimed about a stream over RTCP. Nothing
// here feeds the store's own loss, jitter or MOS, except a round trip for
// the path delay.
type rtcpSide struct {
	srCount  uint64 // sender reports from the stream's sender
	lastSR   rtp.SenderInfo
	lastSRNs int64
	srEcho   [4]srMark // recent SRs by NTP middle 32 bits, for LSR/DLSR echo
	srEchoN  int
	rrCount  uint64 // reception report blocks about the stream
	lastRR   rtp.ReportBlock
	lastRRNs int64
	rttMs    float64 // capture point to receiver and back, from LSR/DLSR
	hasRTT   bool
	xr       rtp.VoIPMetrics
	hasXR    bool
	xrNs     int64
	cname    string
	byeNs    int64
	hasBye   bool
}

type srMark struct {
	mid uint32
	ns  int64
}

func (s *stream) side() *rtcpSide {
	if s.rtcp == nil {
		s.rtcp = &rtcpSide{}
	}
	return s.rtcp
}

// observeRTCP folds a compound RTCP datagram into the streams it names.
// Reports about SSRCs the store does not hold are counted and ignored.
func (st *Store) observeRTCP(p *packet.Packet) bool {
	pkts, err := rtp.ParseCompound(p.Payload)
	if err != nil {
		st.stats.RTCPMalformed++
	}
	if len(pkts) == 0 {
		return false
	}
	st.stats.RTCPPackets++
	ns := p.TS.UnixNano()
	from, to := p.Src.Addr(), p.Dst.Addr()
	for i := range pkts {
		rp := &pkts[i]
		switch rp.Type {
		case rtp.RTCPSR:
			if s := st.findSender(rp.SSRC, from, to); s != nil {
				sd := s.side()
				sd.srCount++
				sd.lastSR = rp.Sender
				sd.lastSRNs = ns
				sd.srEcho[sd.srEchoN%len(sd.srEcho)] = srMark{mid: uint32(rp.Sender.NTP >> 16), ns: ns}
				sd.srEchoN++
			} else {
				st.stats.RTCPUnknownSSRC++
			}
		case rtp.RTCPSDES:
			for _, c := range rp.CNAMEs {
				if s := st.findSender(c.SSRC, from, to); s != nil {
					s.side().cname = c.CNAME
				}
			}
		case rtp.RTCPBYE:
			for _, ssrc := range rp.Bye {
				if s := st.findSender(ssrc, from, to); s != nil {
					sd := s.side()
					sd.byeNs, sd.hasBye = ns, true
				}
			}
		}
		for _, rb := range rp.Reports {
			s := st.findReceived(rb.SSRC, from, to)
			if s == nil {
				st.stats.RTCPUnknownSSRC++
				continue
			}
			sd := s.side()
			sd.rrCount++
			sd.lastRR = rb
			sd.lastRRNs = ns
			if rb.LSR != 0 {
				for _, m := range sd.srEcho {
					if m.mid == rb.LSR && m.ns != 0 && ns > m.ns {
						rtt := float64(ns-m.ns)/1e6 - float64(rb.DLSR)*1000/65536
						if rtt > 0 {
							sd.rttMs, sd.hasRTT = rtt, true
						}
						break
					}
				}
			}
		}
		for _, v := range rp.VoIP {
			s := st.findReceived(v.SSRC, from, to)
			if s == nil {
				st.stats.RTCPUnknownSSRC++
				continue
			}
			sd := s.side()
			sd.xr, sd.hasXR, sd.xrNs = v, true, ns
		}
	}
	return true
}

// findSender picks the stream an SR, SDES or BYE speaks for: the one with
// that SSRC sent from the reporting host to the host the report went to.
// Matching stays on the report's host pair (a relay forwarding one SSRC on
// several legs makes anything looser a guess, and a host-pair match gives
// the same answer when a multi-core run shards by host pair).
func (st *Store) findSender(ssrc uint32, from, to netip.Addr) *stream {
	for _, s := range st.bySSRC[ssrc] {
		if s.key.Src.Addr() == from && s.key.Dst.Addr() == to {
			st.markStream(s) // the caller folds the report into it
			return s
		}
	}
	return nil
}

// findReceived picks the stream a reception report is about: the one with
// that SSRC sent from the host the report went to, to the reporter.
func (st *Store) findReceived(ssrc uint32, reporter, to netip.Addr) *stream {
	for _, s := range st.bySSRC[ssrc] {
		if s.key.Dst.Addr() == reporter && s.key.Src.Addr() == to {
			st.markStream(s) // the caller folds the report into it
			return s
		}
	}
	return nil
}

// observeFax counts a UDPTL datagram on a T.38 endpoint. Fax is recognized,
// never graded as voice.
func (st *Store) observeFax(p *packet.Packet, ep *endpoint) {
	k := Key{Src: p.Src, Dst: p.Dst, Fax: true}
	ns := p.TS.UnixNano()
	s := st.get(k)
	if s == nil {
		s = st.newStream(k, ns, ep, packet.RefOf(p.Frame), p.Origin)
	}
	st.markStream(s)
	s.packets++
	s.octets += uint64(len(p.Payload))
	if ns > s.lastNs {
		s.lastNs = ns
	}
	if p.HasDSCP && !s.hasDSCP {
		s.dscp, s.hasDSCP = p.DSCP, true
	}
	st.stats.UDPTLPackets++
}
