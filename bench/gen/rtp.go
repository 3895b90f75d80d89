package gen

import (
	"encoding/binary"
	"math"
)

// g711Tone is 20 ms of a 1 kHz tone at about -12 dBFS, G.711-encoded.
var g711Tone = func() map[uint8][]byte {
	lin := make([]int16, payloadLen)
	for i := range lin {
		lin[i] = int16(8000 * math.Sin(2*math.Pi*float64(i)/8))
	}
	u, a := make([]byte, payloadLen), make([]byte, payloadLen)
	for i, s := range lin {
		u[i] = linearToULaw(s)
		a[i] = linearToALaw(s)
	}
	return map[uint8][]byte{pcmu.pt: u, pcma.pt: a}
}()

// linearToULaw is the G.711 µ-law encoder (bias 0x84, clip 32635).
func linearToULaw(s int16) byte {
	const bias, clip = 0x84, 32635
	v := int(s)
	sign := 0
	if v < 0 {
		v, sign = -v, 0x80
	}
	v = min(v, clip) + bias
	exp := 7
	for mask := 0x4000; v&mask == 0 && exp > 0; mask >>= 1 {
		exp--
	}
	mant := (v >> (exp + 3)) & 0x0f
	return ^byte(sign | exp<<4 | mant)
}

// linearToALaw is the G.711 A-law encoder.
func linearToALaw(s int16) byte {
	v := int(s) >> 3 // 13-bit magnitude
	sign := 0x80
	if v < 0 {
		v, sign = -v-1, 0
	}
	var out int
	if v < 32 {
		out = v >> 1
	} else {
		exp := 1
		for t := v >> 5; t > 1; t >>= 1 {
			exp++
		}
		out = exp<<4 | (v>>exp)&0x0f
	}
	return byte((out | sign) ^ 0x55)
}

// rxStats is what a receiver at the capture point measures on one stream,
// fed in arrival order: RFC 3550 loss (A.1 accounting without reordering)
// and interarrival jitter (§6.4.1, J += (|D| - J)/16) in milliseconds at the
// 8000 Hz clock, from arrival times in whole microseconds.
type rxStats struct {
	packets    int
	octets     int
	firstUS    usec
	lastUS     usec
	baseSeq    uint16
	maxExt     int64 // extended highest sequence number
	cycles     int64
	lastTS     uint32
	jitter     float64 // ms
	jitterMax  float64
	jitterSum  float64 // sum of J after every packet but the first
	maxDeltaMS float64
	seenSeq    map[int64]bool
	dups       int
	ooo        int
}

func (s *rxStats) add(arrival usec, seq uint16, ts uint32, payload int) {
	if s.packets == 0 {
		s.firstUS, s.baseSeq, s.maxExt = arrival, seq, int64(seq)
		s.lastUS, s.lastTS = arrival, ts
		s.packets, s.octets = 1, payload
		s.seenSeq = map[int64]bool{int64(seq): true}
		return
	}
	// Extended sequence number (RFC 3550 A.1): a wrap when the new number
	// is much smaller than the highest seen.
	prev := uint16(s.maxExt)
	ext := s.cycles + int64(seq)
	switch delta := seq - prev; {
	case delta == 0:
	case delta < 0x8000: // forward (with or without wrap)
		if seq < prev {
			s.cycles += 1 << 16
			ext = s.cycles + int64(seq)
		}
	default: // backward: reordered or duplicate
		s.ooo++
	}
	if s.seenSeq[ext] {
		s.dups++
	}
	s.seenSeq[ext] = true
	if ext > s.maxExt {
		s.maxExt = ext
	}

	deltaMS := float64(arrival-s.lastUS) / 1000
	d := deltaMS - float64(int32(ts-s.lastTS))/float64(clockRate/1000)
	s.jitter += (math.Abs(d) - s.jitter) / 16
	s.jitterSum += s.jitter
	s.jitterMax = max(s.jitterMax, s.jitter)
	s.maxDeltaMS = max(s.maxDeltaMS, deltaMS)

	s.packets++
	s.octets += payload
	s.lastUS, s.lastTS = arrival, ts
}

func (s *rxStats) expected() int { return int(s.maxExt - int64(s.baseSeq) + 1) }

// rtpSource emits one stream's packets in arrival order.
type rtpSource struct {
	sp      *streamPlan
	k       int // index of the packet about to be emitted
	dropAt  int // index into sp.drops of the next drop
	arrival usec
	done    bool
	buf     []byte
	stats   rxStats
	lastArr usec
}

func newRTPSource(sp *streamPlan) *rtpSource {
	s := &rtpSource{sp: sp, k: -1, buf: make([]byte, 12+payloadLen)}
	copy(s.buf[12:], g711Tone[sp.codec.pt])
	s.advance()
	return s
}

// advance moves to the next packet that is not dropped and computes its
// arrival time. Noise and jitter are drawn for every packet sent, dropped
// or not, so a drop never shifts the others.
func (s *rtpSource) advance() {
	sp := s.sp
	for {
		s.k++
		if s.k >= sp.n {
			s.done = true
			return
		}
		send := sp.start + int64(s.k)*ptimeUS
		arr := send + sp.rng.Int64N(noiseUS)
		if sp.jitterAmp > 0 {
			arr += sp.rng.Int64N(sp.jitterAmp)
		}
		if sp.imp == ImpJitterTail && s.k >= sp.n-tailPackets {
			j := int64(s.k - (sp.n - tailPackets))
			arr = sp.start + int64(sp.n-tailPackets)*ptimeUS + sp.tailHold + j*1000
		}
		if s.dropAt < len(sp.drops) && sp.drops[s.dropAt] == s.k {
			s.dropAt++
			continue
		}
		if arr <= s.lastArr && s.lastArr != 0 {
			arr = s.lastArr + 1 // never reorder within a stream
		}
		s.arrival, s.lastArr = arr, arr
		return
	}
}

func (s *rtpSource) at() usec { return s.arrival }

// packet returns the RTP bytes of the current packet (valid until advance).
func (s *rtpSource) packet() (b []byte, seq uint16, ts uint32) {
	sp := s.sp
	seq = sp.seq0 + uint16(s.k)
	ts = sp.ts0 + uint32(s.k)*samplesPerPk
	b = s.buf
	b[0] = 0x80
	b[1] = sp.codec.pt
	if s.k == 0 {
		b[1] |= 0x80 // marker on the first packet of the talkspurt
	}
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[4:], ts)
	binary.BigEndian.PutUint32(b[8:], sp.ssrc)
	return b, seq, ts
}
