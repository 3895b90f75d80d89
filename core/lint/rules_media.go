package lint

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/sdp"
)

// Thresholds of the observation rules.
const (
	// ptimeSlack: packetization more than 1.5 times a=ptime is a mismatch.
	ptimeSlack = 1.5
	// maxPacketMs is the most audio per packet RFC 3551 §4.2 asks a
	// receiver to accept.
	maxPacketMs = 200.0
	// spanSlack: a stream may carry up to 1.25 times the media of the time
	// it spanned (plus two packets and 20 ms) before it is impossible.
	spanSlack = 1.25
	// holdGrace is how long after the answer a peer may keep sending to an
	// endpoint that stopped receiving.
	holdGrace = 2 * time.Second
	// holdPackets is how many packets in a whole quality interval count as
	// sending (a keepalive every few seconds does not).
	holdPackets = 10
)

// octetsPerMs is the fixed octet rate of the codecs that have one (RFC 3551
// Table 1); only these derive packetization from payload size.
var octetsPerMs = map[string]float64{"PCMU": 8, "PCMA": 8, "G722": 8, "G729": 1, "GSM": 1.65}

// declared is one stream an SDP body announced: where it is received.
type declared struct {
	body *sdpBody
	m    *sdp.Media
	ep   netip.AddrPort
}

// endpoint returns the address a media section announces; false for a
// declined stream, hold by 0.0.0.0 or an unreadable address.
func endpoint(s *sdp.Session, m *sdp.Media) (netip.AddrPort, bool) {
	if m.Port <= 0 || m.Port > 65535 {
		return netip.AddrPort{}, false
	}
	conn := m.Conn
	if conn == "" {
		conn = s.Conn
	}
	a, err := netip.ParseAddr(strings.TrimSpace(conn))
	if err != nil || a.IsUnspecified() {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(m.Port)), true
}

// declarations lists every announced stream of the dialog, in message
// order, and indexes them by endpoint (computed once per dialog).
func (d *dctx) declarations() []declared {
	if d.declDone {
		return d.decls
	}
	d.declDone = true
	d.declByEP = map[netip.AddrPort][]declared{}
	for _, b := range d.sdpBodies() {
		for i := range b.sess.Media {
			m := &b.sess.Media[i]
			if ep, ok := endpoint(b.sess, m); ok {
				dc := declared{body: b, m: m, ep: ep}
				d.decls = append(d.decls, dc)
				d.declByEP[ep] = append(d.declByEP[ep], dc)
			}
		}
	}
	return d.decls
}

// declaredAt returns the declarations of one endpoint, in message order.
func (d *dctx) declaredAt(ep netip.AddrPort) []declared {
	d.declarations()
	return d.declByEP[ep]
}

func addrPort(s string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// receiverDecl returns the declaration of the endpoint a stream was sent to
// that was in force when the stream began (the latest one at or before its
// first packet, else the earliest).
func receiverDecl(d *dctx, s *media.StreamInfo) (declared, bool) {
	dst, ok := addrPort(s.Dst)
	if !ok {
		return declared{}, false
	}
	l := d.declaredAt(dst)
	if len(l) == 0 {
		return declared{}, false
	}
	best := l[0]
	for _, dc := range l[1:] {
		if !dc.body.m.TS.After(s.FirstSeen) {
			best = dc
		}
	}
	return best, true
}

// anchor picks the message a media finding points at: the declaration of
// the receiving endpoint, else of the sending one, else the last SDP.
func anchor(d *dctx, s *media.StreamInfo) (int, bool) {
	if dc, ok := receiverDecl(d, s); ok {
		return dc.body.pos, true
	}
	if src, ok := addrPort(s.Src); ok {
		if l := d.declaredAt(src); len(l) > 0 {
			return l[0].body.pos, true
		}
	}
	if b := d.sdpBodies(); len(b) > 0 {
		return b[len(b)-1].pos, true
	}
	return 0, false
}

func streamName(s *media.StreamInfo) string {
	return fmt.Sprintf("RTP %s %s -> %s", s.SSRC, s.Src, s.Dst)
}

func checkPTUndeclared(d *dctx, report func(int, string, string, string)) {
	bodies := d.sdpBodies()
	if len(bodies) == 0 {
		return
	}
	declaredPT := map[int]bool{}
	for _, b := range bodies {
		for _, m := range b.sess.Media {
			for _, f := range m.Formats {
				if f.PayloadType >= 0 {
					declaredPT[f.PayloadType] = true
				}
			}
		}
	}
	for i := range d.in.Streams {
		s := &d.in.Streams[i]
		if s.Kind == "fax" {
			continue
		}
		var bad []string
		for _, pt := range s.PayloadTypes {
			if pt.PayloadType == 13 || declaredPT[pt.PayloadType] {
				continue
			}
			bad = append(bad, fmt.Sprintf("PT %d (%d packets)", pt.PayloadType, pt.Packets))
		}
		if len(bad) == 0 {
			continue
		}
		pos, ok := anchor(d, s)
		if !ok {
			continue
		}
		report(pos, streamName(s)+" carries "+strings.Join(bad, ", "),
			"only payload types an offer or answer of the dialog listed",
			"the receiver has no mapping for an undeclared payload type and drops those packets, or decodes them as the wrong codec")
	}
}

func checkPortMismatch(d *dctx, report func(int, string, string, string)) {
	ports := map[netip.Addr]map[uint16]bool{}
	lists := map[netip.Addr][]int{}
	for _, dc := range d.declarations() {
		lists[dc.ep.Addr()] = append(lists[dc.ep.Addr()], int(dc.ep.Port()))
		p := ports[dc.ep.Addr()]
		if p == nil {
			p = map[uint16]bool{}
			ports[dc.ep.Addr()] = p
		}
		p[dc.ep.Port()] = true
		p[dc.ep.Port()+1] = true
		if dc.m.RTCPPort > 0 && dc.m.RTCPPort <= 65535 {
			p[uint16(dc.m.RTCPPort)] = true
		}
	}
	for i := range d.in.Streams {
		s := &d.in.Streams[i]
		dst, ok := addrPort(s.Dst)
		if !ok {
			continue
		}
		p, declaredAddr := ports[dst.Addr()]
		if !declaredAddr || p[dst.Port()] {
			continue
		}
		pos, ok := anchor(d, s)
		if !ok {
			continue
		}
		list := lists[dst.Addr()]
		sort.Ints(list)
		report(pos, fmt.Sprintf("%s: port %d", streamName(s), dst.Port()),
			fmt.Sprintf("RTP to %s on a declared port (%s)", dst.Addr(), joinInts(uniqueInts(list))),
			"media reaches the right host on a port its SDP never offered: a NAT or SBC rewrote the port, or a stale port from an earlier offer is still in use; the endpoint may not be listening there")
	}
}

func uniqueInts(l []int) []int {
	var out []int
	for i, v := range l {
		if i == 0 || v != l[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func joinInts(l []int) string {
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}

// isRTP reports whether a media section is carried over RTP.
func isRTP(m *sdp.Media) bool { return strings.Contains(strings.ToUpper(m.Proto), "RTP") }

func checkDirectionUnmet(d *dctx, report func(int, string, string, string)) {
	got := map[netip.AddrPort]bool{}
	for i := range d.in.Streams {
		if s := &d.in.Streams[i]; s.Packets > 0 {
			if dst, ok := addrPort(s.Dst); ok {
				got[dst] = true
			}
		}
	}
	done := map[[2]netip.AddrPort]bool{}
	for _, x := range d.exchanges() {
		am := x.answer.m.Msg
		if !(am.IsRequest && am.Method == "ACK") && (am.IsRequest || am.StatusCode < 200 || am.StatusCode > 299) {
			continue
		}
		o, a := x.offer.sess, x.answer.sess
		for i := 0; i < len(o.Media) && i < len(a.Media); i++ {
			om, amd := &o.Media[i], &a.Media[i]
			if !isRTP(om) || !isRTP(amd) || direction(om) != sdp.SendRecv || direction(amd) != sdp.SendRecv {
				continue
			}
			eo, ok1 := endpoint(o, om)
			ea, ok2 := endpoint(a, amd)
			if !ok1 || !ok2 || done[[2]netip.AddrPort{eo, ea}] {
				continue
			}
			done[[2]netip.AddrPort{eo, ea}] = true
			if got[eo] == got[ea] {
				continue
			}
			heard, silent := ea, eo
			if got[eo] {
				heard, silent = eo, ea
			}
			report(x.answer.pos, fmt.Sprintf("RTP reached %s, none reached %s", heard, silent),
				"RTP to both negotiated endpoints ("+eo.String()+" and "+ea.String()+")",
				"one side sends nothing, or sends it somewhere other than the negotiated address (NAT, a stale address): the classic one-way audio")
		}
	}
}

// packetMs returns the media per packet of a stream and how it was
// measured: from the payload size for fixed-rate codecs (mean payload; comfort
// noise and events only lower it, which keeps the one-sided checks safe), else
// from RTP timestamps (ptime_ms: the most common step).
func packetMs(s *media.StreamInfo) (float64, string, bool) {
	if s.Kind != "audio" || s.Packets == 0 {
		return 0, "", false
	}
	if rate, ok := octetsPerMs[strings.ToUpper(s.Codec)]; ok {
		return float64(s.Octets) / float64(s.Packets) / rate, "payload size", true
	}
	if s.PtimeMs != nil && *s.PtimeMs > 0 {
		return *s.PtimeMs, "RTP timestamps", true
	}
	return 0, "", false
}

func checkPtime(d *dctx, report func(int, string, string, string)) {
	for i := range d.in.Streams {
		s := &d.in.Streams[i]
		dc, ok := receiverDecl(d, s)
		if !ok || dc.m.Ptime <= 0 {
			continue
		}
		ms, basis, ok := packetMs(s)
		if !ok || ms <= float64(dc.m.Ptime)*ptimeSlack {
			continue
		}
		report(dc.body.pos, fmt.Sprintf("%s: %s %.1f ms per packet (from %s)", streamName(s), s.Codec, ms, basis),
			fmt.Sprintf("about %d ms per packet (a=ptime:%d of the receiver)", dc.m.Ptime, dc.m.Ptime),
			"longer packets than the receiver asked for add delay and may overrun a jitter buffer sized for the declared ptime")
	}
}

func checkMaxPtime(d *dctx, report func(int, string, string, string)) {
	for i := range d.in.Streams {
		s := &d.in.Streams[i]
		dc, ok := receiverDecl(d, s)
		if !ok || dc.m.MaxPtime <= 0 {
			continue
		}
		ms, basis, ok := packetMs(s)
		if !ok || ms <= float64(dc.m.MaxPtime)+0.5 {
			continue
		}
		report(dc.body.pos, fmt.Sprintf("%s: %s %.1f ms per packet (from %s)", streamName(s), s.Codec, ms, basis),
			fmt.Sprintf("at most %d ms per packet (a=maxptime:%d of the receiver)", dc.m.MaxPtime, dc.m.MaxPtime),
			"the receiver said it cannot take packets this long; it may drop them or play them truncated")
	}
}

func checkFrameSize(d *dctx, report func(int, string, string, string)) {
	for i := range d.in.Streams {
		s := &d.in.Streams[i]
		rate, fixed := octetsPerMs[strings.ToUpper(s.Codec)]
		if !fixed || s.Kind != "audio" || s.Packets == 0 {
			continue
		}
		meanBytes := float64(s.Octets) / float64(s.Packets)
		mean := meanBytes / rate
		var obs, exp string
		switch {
		case mean > maxPacketMs:
			obs = fmt.Sprintf("%s: %s mean payload %.0f bytes = %.0f ms per packet", streamName(s), s.Codec, meanBytes, mean)
			exp = fmt.Sprintf("at most %.0f ms of audio per packet", maxPacketMs)
		case s.Packets >= 10:
			mediaMs := (float64(s.Octets) - float64(s.Duplicates)*meanBytes) / rate
			if mediaMs <= spanSlack*(s.DurationMs+2*mean)+20 {
				continue
			}
			obs = fmt.Sprintf("%s: %.0f ms of %s in %d packets over %.0f ms", streamName(s), mediaMs, s.Codec, s.Packets, s.DurationMs)
			exp = fmt.Sprintf("no more media than the time the stream spanned (%.0f ms)", s.DurationMs)
		default:
			continue
		}
		pos, ok := anchor(d, s)
		if !ok {
			continue
		}
		report(pos, obs, exp,
			"the codec's fixed octet rate makes this payload impossible at this pace: the stream is not the negotiated codec (a wrong payload type mapping), or it is being replayed or duplicated")
	}
}

// window is a span during which an endpoint declared it does not receive.
type window struct {
	from, to time.Time // to zero: open-ended
	dir      sdp.Direction
	pos      int
}

// nonReceiving returns, per endpoint, the windows after an answered
// offer/answer made it sendonly or inactive.
func (d *dctx) nonReceiving() map[netip.AddrPort][]window {
	type eff struct {
		at  time.Time
		dir sdp.Direction
		pos int
	}
	byEP := map[netip.AddrPort][]eff{}
	add := func(b *sdpBody, at time.Time) {
		for i := range b.sess.Media {
			m := &b.sess.Media[i]
			if ep, ok := endpoint(b.sess, m); ok && isRTP(m) {
				byEP[ep] = append(byEP[ep], eff{at, direction(m), b.pos})
			}
		}
	}
	seenOffer := map[*sdpBody]bool{}
	for _, x := range d.exchanges() {
		if !seenOffer[x.offer] {
			seenOffer[x.offer] = true
			add(x.offer, x.answer.m.TS)
		}
		add(x.answer, x.answer.m.TS)
	}
	out := map[netip.AddrPort][]window{}
	for ep, l := range byEP {
		sort.SliceStable(l, func(a, b int) bool { return l[a].at.Before(l[b].at) })
		for i, e := range l {
			if e.dir != sdp.SendOnly && e.dir != sdp.Inactive {
				continue
			}
			w := window{from: e.at.Add(holdGrace), dir: e.dir, pos: e.pos}
			if i+1 < len(l) {
				w.to = l[i+1].at
			}
			out[ep] = append(out[ep], w)
		}
	}
	return out
}

func checkSentToNonReceiver(d *dctx, report func(int, string, string, string)) {
	wins := d.nonReceiving()
	if len(wins) == 0 {
		return
	}
	iv := d.in.QualityInterval
	for i := range d.in.Streams {
		s := &d.in.Streams[i]
		dst, ok := addrPort(s.Dst)
		if !ok {
			continue
		}
		for _, w := range wins[dst] {
			var hit *media.Interval
			for k := range s.QualityIntervals {
				q := &s.QualityIntervals[k]
				end := q.Timestamp.Add(iv)
				if q.Packets >= holdPackets && !q.Timestamp.Before(w.from) && (w.to.IsZero() || !end.After(w.to)) {
					hit = q
					break
				}
			}
			if hit == nil {
				continue
			}
			report(w.pos, fmt.Sprintf("%s: %d packets in the %s interval starting %s, after %s declared a=%s",
				streamName(s), hit.Packets, iv, hit.Timestamp.UTC().Format(time.RFC3339), dst, w.dir),
				"no RTP to an endpoint while it is sendonly or inactive (RTCP only)",
				"the peer ignored hold or inactivity: it keeps sending media (and bandwidth) to a side that declared it does not receive, and may play it out when the call resumes")
			break
		}
	}
}
