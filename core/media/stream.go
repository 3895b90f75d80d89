package media

import (
	"net/netip"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/rtp"
)

// Key identifies a stream: SSRC plus the UDP 5-tuple. UDPTL (fax) streams
// carry SSRC 0 and Fax true.
type Key struct {
	Src, Dst netip.AddrPort
	SSRC     uint32
	Fax      bool
}

// ptCount is one payload type and how many packets carried it.
type ptCount struct {
	pt    uint8
	count uint32
}

const maxPTs = 6 // distinct payload types tracked per stream; the rest count as other

// stepBins is how many distinct (payload type, timestamp step) pairs a
// stream's ptime histogram holds. A stream at one packetization fills one
// bin; glitches, a codec change or a sender that varies its framing fill a
// few more. Past the cap the least-counted bin gives way (counted).
const stepBins = 8

// stepBin is one timestamp step of one payload type and how many times
// consecutive packets advanced by it.
type stepBin struct {
	step uint32 // RTP timestamp units
	n    uint32
	pt   uint8
}

// stepHist counts RTP timestamp steps between consecutive in-order packets
// of one audio payload type: the most common step is the packetization
// (ptime), so one timestamp glitch or a stray short step cannot stand for it
// as the smallest one did. Fixed size: it allocates nothing.
type stepHist struct {
	bins    [stepBins]stepBin
	nBins   uint8
	total   uint64 // steps counted
	evicted uint64 // bins replaced while full (space-saving: the newcomer inherits the count)
}

// add counts one step. When every bin is taken by other steps, the
// least-counted bin is replaced and the newcomer starts from that count
// plus one (the space-saving algorithm of Metwally et al.: any step more
// frequent than 1/stepBins of all steps keeps its bin, and a count
// overestimates by at most the evicted count it inherited).
func (h *stepHist) add(pt uint8, step uint32) {
	h.total++
	minI := 0
	for i := uint8(0); i < h.nBins; i++ {
		b := &h.bins[i]
		if b.pt == pt && b.step == step {
			b.n++
			return
		}
		if b.n < h.bins[minI].n {
			minI = int(i)
		}
	}
	if h.nBins < stepBins {
		h.bins[h.nBins] = stepBin{step: step, n: 1, pt: pt}
		h.nBins++
		return
	}
	h.evicted++
	h.bins[minI] = stepBin{step: step, n: h.bins[minI].n + 1, pt: pt}
}

// mode returns the most common step of payload type pt and how many steps
// it counted; ties go to the smaller step. ok is false when pt has none.
func (h *stepHist) mode(pt uint8) (step uint32, n uint32, ok bool) {
	for i := uint8(0); i < h.nBins; i++ {
		b := &h.bins[i]
		if b.pt != pt {
			continue
		}
		if !ok || b.n > n || (b.n == n && b.step < step) {
			step, n, ok = b.step, b.n, true
		}
	}
	return step, n, ok
}

// counted is how many steps of payload type pt the histogram holds.
func (h *stepHist) counted(pt uint8) uint64 {
	var t uint64
	for i := uint8(0); i < h.nBins; i++ {
		if h.bins[i].pt == pt {
			t += uint64(h.bins[i].n)
		}
	}
	return t
}

// interval is one closed per-interval snapshot.
type interval struct {
	startNs  int64
	packets  uint32
	expected int32
	jitter   float32 // ms, RFC 3550 J at the interval's last timed packet; <0 when not measured
}

// lossRing keeps the most recent lost sequence numbers.
type lossRing struct {
	seqs      []uint16
	next      int
	truncated bool
}

func (r *lossRing) add(seq uint16, capacity int) {
	if len(r.seqs) < capacity {
		r.seqs = append(r.seqs, seq)
		return
	}
	r.truncated = true
	r.seqs[r.next] = seq
	r.next = (r.next + 1) % capacity
}

// remove takes seq out of the ring when a packet the gap skipped arrives
// late: the newest entry holding it goes (a 16-bit number recurs once the
// sequence wraps, and the late packet belongs to the latest gap). The ring
// keeps its order and never grows: removing from a full ring frees a slot.
// It allocates nothing.
func (r *lossRing) remove(seq uint16) bool {
	n := len(r.seqs)
	for k := n - 1; k >= 0; k-- { // logical order, newest first
		i := (r.next + k) % n
		if r.seqs[i] != seq {
			continue
		}
		if r.next != 0 {
			// Linearize the full ring (oldest first) in place.
			reverse(r.seqs[:r.next])
			reverse(r.seqs[r.next:])
			reverse(r.seqs)
			r.next = 0
		}
		copy(r.seqs[k:], r.seqs[k+1:])
		r.seqs = r.seqs[:n-1]
		return true
	}
	return false
}

func reverse(s []uint16) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// stream is the mutable per-stream state. Only the store's writer touches it.
type stream struct {
	key     Key
	ordinal uint64 // creation order; eviction and tie-break order
	frame   packet.FrameRef
	origin  packet.Origin
	// orphanIdx sits beside origin to fill its padding: with the allocation
	// header, a stream over 760 bytes takes the next size class (896).
	orphanIdx bool // listed in the store's orphan index

	ep     *endpoint // SDP endpoint the stream was bound to; nil when orphaned
	callID string
	shared []string // other dialogs whose SDP named both ends (listed under them too)
	mark   uint64   // change-log epoch it was last listed in (changes.go)

	firstNs, lastNs int64
	packets, octets uint64
	pts             [maxPTs]ptCount
	nPTs            uint8
	otherPTs        uint32
	firstPT         uint8

	// sequence accounting (RFC 3550 A.1 extended sequence numbers)
	baseExt, maxExt int64
	window          [2]uint64 // bit i: maxExt-i was received
	dups, ooo       uint64
	jumps           uint64
	lost            *lossRing
	// ext holds what only some streams need: the RFC 3611 loss pattern
	// (from the first settled loss) and AMR payload counts (burst.go,
	// amr.go); nil until then, so a plain stream stays in its size class.
	ext *streamExt

	// timing (tshark-compatible RFC 3550 §6.4.1 jitter in arrival order)
	extTS      int64 // extended RTP timestamp of the previous packet
	firstTS    int64 // extended timestamp of the first packet
	refTS      int64 // extended timestamp of the last timed in-sequence packet
	refNs      int64 // arrival of the last in-sequence packet
	jitter     float64
	jitterMax  float64
	jitterSum  float64
	jitterN    uint64
	jitterSeen bool // jitter was computed at least once
	deltaMin   float64
	deltaMax   float64
	deltaSum   float64
	deltaN     uint64
	prevPT     uint8
	lastSeq    uint16
	steps      stepHist // RTP timestamp steps between consecutive audio packets (ptime)
	clock      uint32   // clock of the last timed packet
	clockBasis string

	// g723 counts G.723.1 packets by the bit rate their first frame shows
	// (RFC 3551 §4.5.3): [0] 6.3 kbit/s, [1] 5.3 kbit/s.
	g723 [2]uint32

	// comfort noise and events
	cnFrames  uint64
	cnPeriods uint64
	inCN      bool
	cnStartNs int64
	cnTotalNs int64
	events    uint64
	eventNs   int64
	lastEndTS uint32
	endSeen   bool

	// qos
	dscp       uint8
	hasDSCP    bool
	remarkedTo uint8
	remarked   bool

	// per-interval accounting
	ivIdx      int64 // current interval number (arrival / interval)
	ivStartNs  int64
	ivPackets  uint32
	ivJN       uint32 // timed packets in the interval (beside ivPackets: no padding)
	ivStartExt int64  // maxExt at the start of the interval
	ivs        []interval
	ivHead     int // ring start once full
	ivDropped  uint64

	rtcp *rtcpSide
}

// codecFor resolves a payload type: the bound SDP endpoint's rtpmap first,
// the RFC 3551 static table second.
func (s *stream) codecFor(pt uint8) (rtp.Codec, string) {
	if s.ep != nil {
		for i := range s.ep.formats {
			if f := &s.ep.formats[i]; f.pt == pt && f.rtpmap {
				return f.codec, "rtpmap"
			}
		}
	}
	if sc := &staticCodecs[pt]; sc.ok {
		return sc.codec, "rfc3551"
	}
	return rtp.Codec{}, ""
}

// staticCodecs is rtp.StaticCodec for every payload type, looked up once
// (codecFor runs once per RTP packet).
var staticCodecs = func() (t [256]struct {
	codec rtp.Codec
	ok    bool
}) {
	for pt := range t {
		t[pt].codec, t[pt].ok = rtp.StaticCodec(uint8(pt))
	}
	return t
}()

func (s *stream) countPT(pt uint8) {
	for i := uint8(0); i < s.nPTs; i++ {
		if s.pts[i].pt == pt {
			s.pts[i].count++
			return
		}
	}
	if s.nPTs < maxPTs {
		s.pts[s.nPTs] = ptCount{pt, 1}
		s.nPTs++
		return
	}
	s.otherPTs++
}

// mainPT is the payload type that carried the most packets, comfort noise
// and events aside when anything else was seen.
func (s *stream) mainPT() uint8 {
	best, bestN := s.firstPT, uint32(0)
	for i := uint8(0); i < s.nPTs; i++ {
		c, _ := s.codecFor(s.pts[i].pt)
		if c.Kind == rtp.KindComfortNoise || c.Kind == rtp.KindEvent {
			continue
		}
		if s.pts[i].count > bestN {
			best, bestN = s.pts[i].pt, s.pts[i].count
		}
	}
	return best
}

// seq updates the extended-sequence accounting for one packet.
func (s *stream) seq(seq uint16, lostCap int) {
	if s.packets == 0 {
		s.baseExt = int64(seq)
		s.maxExt = int64(seq)
		s.window[0] = 1
		s.ivStartExt = s.baseExt - 1
		return
	}
	maxSeq := uint16(s.maxExt)
	d := seq - maxSeq
	switch {
	case d == 0:
		s.dups++
	case d < 0x8000: // forward
		if d > 1 {
			s.jumps++
			if s.lost == nil {
				s.lost = &lossRing{}
			}
			n := int(d) - 1
			if n > lostCap {
				n = lostCap
				s.lost.truncated = true
			}
			for i := 1; i <= n; i++ {
				s.lost.add(maxSeq+uint16(i), lostCap)
			}
		}
		s.settle(s.maxExt + int64(d))
		s.maxExt += int64(d)
		shiftWindow(&s.window, uint(d))
		s.window[0] |= 1
	default: // backward: late or duplicate
		back := int64(maxSeq - seq)
		ext := s.maxExt - back
		if back < 128 {
			w, bit := back/64, uint(back%64)
			if s.window[w]&(1<<bit) != 0 {
				s.dups++
				return
			}
			s.window[w] |= 1 << bit
		} else if s.ext != nil && s.ext.burst != nil {
			s.ext.burst.late++ // its position settled as lost (burst.go)
		}
		s.ooo++
		if s.lost != nil {
			s.lost.remove(seq) // it was listed lost when the gap opened
		}
		if ext < s.baseExt {
			if s.ivStartExt == s.baseExt-1 {
				s.ivStartExt = ext - 1
			}
			s.baseExt = ext
		}
	}
}

func shiftWindow(w *[2]uint64, d uint) {
	switch {
	case d >= 128:
		w[0], w[1] = 0, 0
	case d >= 64:
		w[1] = w[0] << (d - 64)
		w[0] = 0
	default:
		w[1] = w[1]<<d | w[0]>>(64-d)
		w[0] <<= d
	}
}

// expected is the number of packets the sequence numbers say were sent.
func (s *stream) expected() int64 { return s.maxExt - s.baseExt + 1 }
