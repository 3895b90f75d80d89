package media

import "math"

// Burst and gap metrics in the terms of RFC 3611 §4.7.2, measured from the
// stream's own loss pattern.
//
// RFC 3611 §4.7.2 defines a burst, for a threshold Gmin, as the longest run
// of packets that starts and ends with a lost packet and holds no Gmin or
// more consecutive received packets; the gaps are the periods before the
// first burst, between bursts and after the last. Like the algorithm of
// RFC 3611 Appendix A.2 (the "isolated loss" state), a lone lost packet with
// Gmin or more received packets on each side is a loss in a gap, not a
// burst of one: a burst holds at least two lost packets. Per §4.7.2, the
// stream is taken as preceded and followed by Gmin received packets.
//
// Discards (packets a receiver's jitter buffer dropped as late) are part of
// RFC 3611's pattern but are invisible at a capture point: only losses are
// counted here.
//
// A sequence position is settled once it leaves the stream's 128-packet
// reorder window (stream.window): a packet arriving later than that cannot
// fill its hole any more and is counted in LateAfterSettled instead. The
// positions still in the window are settled in a copy when the stream is
// viewed, so the answer covers every position from the first to the highest
// sequence number.

// Gmin is the RFC 3611 §4.7.2 gap threshold (the value it recommends).
const Gmin = 16

// BurstyRun is the run of consecutive lost packets at which a stream is
// called bursty (engine.md §8: a burst of 3 or more consecutive losses).
const BurstyRun = 3

// settleLag is how far behind the highest sequence number a position
// settles: the width of the reorder window.
const settleLag = 128

// burstState is the running segmentation of settled positions into bursts
// and gaps. It is allocated at the first settled loss: a stream without
// loss never has one.
type burstState struct {
	recvRun    uint64 // received positions since the last loss
	open       bool   // a run of losses closer than Gmin is open
	cLen       uint64 // positions from the open run's first loss to its last
	cLost      uint64 // losses in the open run
	bursts     uint64
	burstPkts  uint64
	burstLost  uint64
	gapLost    uint64 // isolated losses (in gaps)
	lossRun    uint64 // consecutive losses ending at the last position
	maxLossRun uint64
	late       uint64 // packets arriving after their position settled as lost
}

// received settles n received positions.
func (b *burstState) received(n uint64) {
	b.recvRun += n
	b.lossRun = 0
	if b.open && b.recvRun >= Gmin {
		b.close()
	}
}

// lost settles n lost positions.
func (b *burstState) lost(n uint64) {
	if n == 0 {
		return
	}
	if b.open {
		b.cLen += b.recvRun + n
		b.cLost += n
	} else {
		b.open, b.cLen, b.cLost = true, n, n
	}
	b.recvRun = 0
	b.lossRun += n
	b.maxLossRun = max(b.maxLossRun, b.lossRun)
}

// close ends the open run of losses: a burst when it holds two losses or
// more, else one isolated loss in a gap.
func (b *burstState) close() {
	if b.cLost >= 2 {
		b.bursts++
		b.burstPkts += b.cLen
		b.burstLost += b.cLost
	} else {
		b.gapLost += b.cLost
	}
	b.open, b.cLen, b.cLost = false, 0, 0
}

// streamExt is the part of a stream only some streams need (stream.ext).
type streamExt struct {
	burst *burstState
	amr   *amrStats
	audio *audioRing // retained G.711 payloads (audio.go); nil unless --retain-audio
}

// burstOf returns the stream's loss pattern, allocating it.
func (s *stream) burstOf() *burstState {
	if s.ext == nil {
		s.ext = &streamExt{}
	}
	if s.ext.burst == nil {
		s.ext.burst = &burstState{}
	}
	return s.ext.burst
}

// settledTo is the first sequence position not yet fed to the loss
// pattern: the positions up to 128 behind the highest are still in the
// reorder window.
func (s *stream) settledTo() int64 { return max(s.baseExt, s.maxExt-settleLag+1) }

// windowBit reports whether position p (within the reorder window) was
// received.
func (s *stream) windowBit(p int64) bool {
	i := s.maxExt - p
	return s.window[i/64]>>(uint(i%64))&1 == 1
}

// settle feeds the burst pattern the positions that leave the reorder window
// when the highest sequence number moves to newMax. It runs before maxExt and
// the window move. Positions past the old highest one were never received.
// A packet numbered more than the window below the highest (a late packet
// before the stream's first) moves baseExt back below settledTo: the
// positions it adds are never fed and count as gap positions (GapPackets
// is taken from expected).
func (s *stream) settle(newMax int64) {
	end := newMax - settleLag
	p := s.settledTo()
	if p > end {
		return
	}
	for ; p <= end && p <= s.maxExt; p++ {
		if s.windowBit(p) {
			if s.ext != nil && s.ext.burst != nil {
				s.ext.burst.received(1)
			}
			continue
		}
		s.burstOf().lost(1)
	}
	if p <= end {
		s.burstOf().lost(uint64(end - p + 1))
	}
}

// BurstGap is a stream's loss pattern in RFC 3611 §4.7.2 terms: bursts
// (runs of losses no Gmin received packets apart, two losses or more) and
// the gaps around them. Durations in ms are packets × the measured ptime
// and are absent when the ptime is unknown.
type BurstGap struct {
	// Gmin is the gap threshold (RFC 3611 §4.7.2: 16).
	Gmin int `json:"gmin"`
	// Bursts counts the bursts; the gaps are one more (before, between
	// and after them).
	Bursts uint64 `json:"bursts"`
	// BurstLost and BurstPackets: the lost packets in bursts and the
	// sequence positions the bursts span.
	BurstLost    uint64 `json:"burst_lost"`
	BurstPackets uint64 `json:"burst_packets"`
	// GapLost and GapPackets: the lost packets in gaps (isolated losses) and
	// the positions the gaps span.
	GapLost    uint64 `json:"gap_lost"`
	GapPackets uint64 `json:"gap_packets"`
	// BurstDensityPct is the share of burst positions lost (absent with no
	// burst); GapDensityPct the share of gap positions lost.
	BurstDensityPct *float64 `json:"burst_density_pct,omitempty"`
	GapDensityPct   float64  `json:"gap_density_pct"`
	// Mean burst and gap durations in ms: positions per burst (per gap)
	// × the measured ptime; absent without a ptime (or, for bursts,
	// without a burst).
	MeanBurstMs *float64 `json:"mean_burst_ms,omitempty"`
	MeanGapMs   *float64 `json:"mean_gap_ms,omitempty"`
	// MaxConsecutiveLost is the longest run of consecutive lost packets.
	MaxConsecutiveLost uint64 `json:"max_consecutive_lost"`
	// IsBursty: a run of BurstyRun (3) or more consecutive losses.
	IsBursty bool `json:"is_bursty"`
	// LateAfterSettled counts packets that arrived more than 127 sequence
	// numbers late (or were duplicates of such old packets): their
	// positions had already been counted lost here. Absent when none.
	LateAfterSettled uint64 `json:"late_after_settled,omitempty"`
}

// burstGap renders the pattern, settling the positions still in the reorder
// window in a copy. ptimeMs is 0 when unknown.
func (s *stream) burstGap(ptimeMs float64) *BurstGap {
	expected := s.expected()
	if s.packets == 0 || expected <= 0 {
		return nil
	}
	var b burstState
	if s.ext != nil && s.ext.burst != nil {
		b = *s.ext.burst
	}
	for p := s.settledTo(); p <= s.maxExt; p++ {
		if s.windowBit(p) {
			b.received(1)
		} else {
			b.lost(1)
		}
	}
	if b.open {
		b.close() // the stream is taken as followed by Gmin received packets
	}
	total := uint64(expected)
	g := &BurstGap{
		Gmin:               Gmin,
		Bursts:             b.bursts,
		BurstLost:          b.burstLost,
		BurstPackets:       b.burstPkts,
		GapLost:            b.gapLost,
		MaxConsecutiveLost: b.maxLossRun,
		IsBursty:           b.maxLossRun >= BurstyRun,
		LateAfterSettled:   b.late,
	}
	if total > b.burstPkts {
		g.GapPackets = total - b.burstPkts
	}
	if g.GapPackets > 0 {
		g.GapDensityPct = round3(float64(g.GapLost) * 100 / float64(g.GapPackets))
	}
	if b.bursts > 0 {
		g.BurstDensityPct = f64(round3(float64(b.burstLost) * 100 / float64(b.burstPkts)))
	}
	if ptimeMs > 0 && !math.IsInf(ptimeMs, 0) {
		g.MeanGapMs = f64(round3(float64(g.GapPackets) / float64(b.bursts+1) * ptimeMs))
		if b.bursts > 0 {
			g.MeanBurstMs = f64(round3(float64(b.burstPkts) / float64(b.bursts) * ptimeMs))
		}
	}
	return g
}
