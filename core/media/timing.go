package media

import (
	"math"

	"github.com/sipnab/sipnab/core/rtp"
)

// timing updates jitter and inter-arrival statistics for one packet.
//
// Jitter follows RFC 3550 §6.4.1 (J += (|D| − J)/16) in arrival order at the
// codec clock rate, with nanosecond arrival times, under the conventions of
// Wireshark's RTP analysis so the numbers compare with tshark's:
//   - a packet whose timestamp lies before the stream's first timestamp is
//     out of time sequence: it changes nothing but the counters;
//   - D compares the arrival with the previous in-sequence packet's arrival
//     advanced by the timestamp difference since the previous timed packet;
//   - a telephone-event packet (its timestamp is the event start, not a
//     sampling instant) moves the arrival reference but is not timed;
//   - the maximum and mean jitter and the inter-arrival deltas leave out
//     packets that start a talkspurt (marker), comfort noise, the packet
//     following comfort noise and packets out of time sequence.
func (st *Store) timing(s *stream, ns int64, h *rtp.Header, codec rtp.Codec, basis string, first, cn bool) {
	if first {
		s.extTS = int64(h.Timestamp)
		s.firstTS = s.extTS
		s.refTS = s.extTS
		s.refNs = ns
		s.prevPT = h.PayloadType
		s.lastSeq = h.Seq
		return
	}
	ext := s.extTS + int64(int32(h.Timestamp-uint32(s.extTS)))
	// Packetization (ptime) is the most common timestamp step between
	// consecutive packets of one audio payload type (RFC 3551 §4.1: the
	// timestamp advances by the samples in the packet). A step counts only
	// between in-order packets (sequence number + 1) of the same audio
	// payload type, never into a talkspurt's first packet (marker bit,
	// RFC 3551 §4.1: the silence before it advanced the timestamp): comfort
	// noise (RFC 3389) and telephone-events (RFC 4733, whose timestamp is the
	// event start) are other payload types and never count, nor does the
	// step out of them.
	if h.Seq == s.lastSeq+1 && h.PayloadType == s.prevPT && codec.Kind == rtp.KindAudio && !h.Marker && ext > s.extTS {
		if step := ext - s.extTS; step <= math.MaxUint32 {
			s.steps.add(h.PayloadType, uint32(step))
		}
	}
	s.lastSeq = h.Seq
	s.extTS = ext
	inTime := ext >= s.firstTS
	clock := codec.ClockRate
	if codec.Kind == rtp.KindEvent {
		clock = 0
	}
	followCN := s.prevPT == rtp.PTComfortNoise || s.prevPT == rtp.PTComfortNoiseOld
	s.prevPT = h.PayloadType
	if !inTime {
		return
	}
	deltaMs := float64(ns-s.refNs) / 1e6
	if clock != 0 {
		nominalMs := float64(ext-s.refTS) * 1000 / float64(clock)
		s.jitter = (15*s.jitter + math.Abs(deltaMs-nominalMs)) / 16
		s.jitterSeen = true
		s.clock = clock
		s.clockBasis = basis
		s.refTS = ext
	}
	s.refNs = ns
	if h.Marker || cn || followCN {
		return
	}
	if s.deltaN == 0 || deltaMs < s.deltaMin {
		s.deltaMin = deltaMs
	}
	if deltaMs > s.deltaMax {
		s.deltaMax = deltaMs
	}
	s.deltaSum += deltaMs
	s.deltaN++
	if clock != 0 {
		if s.jitter > s.jitterMax {
			s.jitterMax = s.jitter
		}
		s.jitterSum += s.jitter
		s.jitterN++
		s.ivJN++
	}
}

// intervalTick closes the stream's current interval when a packet arrives
// in a later one. Intervals align to multiples of the interval length since
// the Unix epoch, so both directions of a call share boundaries.
func (st *Store) intervalTick(s *stream, ns int64) {
	idx := ns / st.intervalNs
	if s.ivIdx < 0 {
		s.ivIdx = idx
		s.ivStartNs = idx * st.intervalNs
		return
	}
	if idx <= s.ivIdx {
		return
	}
	st.closeInterval(s)
	s.ivIdx = idx
	s.ivStartNs = idx * st.intervalNs
}

func (st *Store) closeInterval(s *stream) {
	iv := interval{
		startNs:  s.ivStartNs,
		packets:  s.ivPackets,
		expected: int32(s.maxExt - s.ivStartExt),
		jitter:   -1,
	}
	if s.ivJN > 0 {
		iv.jitter = float32(s.jitter)
	}
	if len(s.ivs) < st.ivCap {
		s.ivs = append(s.ivs, iv)
	} else {
		s.ivs[s.ivHead] = iv
		s.ivHead = (s.ivHead + 1) % st.ivCap
		s.ivDropped++
	}
	s.ivStartExt = s.maxExt
	s.ivPackets = 0
	s.ivJN = 0
}
