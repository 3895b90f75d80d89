package media

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
)

var (
	epA = netip.MustParseAddrPort("10.0.0.1:4000")
	epB = netip.MustParseAddrPort("10.0.0.2:5000")
	t0  = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
)

// rtpPkt builds an RTP datagram.
func rtpPkt(pt uint8, marker bool, seq uint16, ts, ssrc uint32, payload []byte) []byte {
	b := make([]byte, 12+len(payload))
	b[0] = 0x80
	b[1] = pt
	if marker {
		b[1] |= 0x80
	}
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[4:], ts)
	binary.BigEndian.PutUint32(b[8:], ssrc)
	copy(b[12:], payload)
	return b
}

func udp(src, dst netip.AddrPort, at time.Time, payload []byte) *packet.Packet {
	return &packet.Packet{TS: at, Src: src, Dst: dst, Transport: packet.TransportUDP, Payload: payload, Origin: packet.OriginWire}
}

// sender emits a 20 ms G.711 stream; each call to send advances by step
// sequence numbers and arrives at the nominal time plus skew.
type sender struct {
	st       *Store
	src, dst netip.AddrPort
	ssrc     uint32
	pt       uint8
	seq      uint16
	ts       uint32
	n        int
}

func (s *sender) send(t *testing.T, step int, skew time.Duration) bool {
	t.Helper()
	s.seq += uint16(step)
	s.ts += uint32(160 * step)
	s.n += step
	at := t0.Add(time.Duration(s.n)*20*time.Millisecond + skew)
	return s.st.Observe(udp(s.src, s.dst, at, rtpPkt(s.pt, false, s.seq, s.ts, s.ssrc, make([]byte, 160))))
}

func onlyStream(t *testing.T, st *Store) StreamInfo {
	t.Helper()
	all := st.All()
	if len(all) != 1 {
		t.Fatalf("got %d streams, want 1", len(all))
	}
	return all[0]
}

func TestSequenceAccounting(t *testing.T) {
	tests := []struct {
		name                        string
		steps                       []int // sequence step per packet after the first
		wantPackets                 uint64
		wantExpected, wantLost      int64
		wantDup, wantOOO, wantJumps uint64
		wantLossPct                 float64 // clamped at 0 when lost is negative
	}{
		{"in order", []int{1, 1, 1, 1}, 5, 5, 0, 0, 0, 0, 0},
		{"one gap of two", []int{1, 3, 1}, 4, 6, 2, 0, 0, 1, 33.333},
		{"duplicate makes loss negative", []int{1, 0, 1}, 4, 3, -1, 1, 0, 0, 0},
		{"reorder then recover", []int{1, 2, -1, 2}, 5, 5, 0, 0, 1, 1, 0},
		{"late duplicate of a reordered packet", []int{1, 2, -1, 0, 2}, 6, 5, -1, 1, 1, 1, 0},
		{"two duplicates, one loss", []int{1, 0, 0, 2}, 5, 4, -1, 2, 0, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewStore(Config{})
			st.OnSDP("call-1", t0, &sdp.Session{Media: []sdp.Media{{Type: "audio", Port: 5000, Conn: "10.0.0.2", Formats: []sdp.Format{{PayloadType: 0}}}}}, true, epA)
			s := &sender{st: st, src: epA, dst: epB, ssrc: 7, seq: 100, ts: 1000}
			s.send(t, 0, 0)
			for _, step := range tc.steps {
				s.send(t, step, 0)
			}
			got := onlyStream(t, st)
			if got.Packets != tc.wantPackets || got.Expected != tc.wantExpected || got.Lost != tc.wantLost {
				t.Errorf("got packets %d expected %d lost %d, want %d %d %d", got.Packets, got.Expected, got.Lost, tc.wantPackets, tc.wantExpected, tc.wantLost)
			}
			if got.LossPct != tc.wantLossPct {
				t.Errorf("got loss_pct %v, want %v", got.LossPct, tc.wantLossPct)
			}
			if got.Duplicates != tc.wantDup || got.OutOfOrder != tc.wantOOO || got.SequenceJumps != tc.wantJumps {
				t.Errorf("got dup %d ooo %d jumps %d, want %d %d %d", got.Duplicates, got.OutOfOrder, got.SequenceJumps, tc.wantDup, tc.wantOOO, tc.wantJumps)
			}
			if got.Orphaned || got.AssociatedDialog != "call-1" {
				t.Errorf("got orphaned %v dialog %q, want bound to call-1", got.Orphaned, got.AssociatedDialog)
			}
		})
	}
}

func TestLostSequences(t *testing.T) {
	// Sequence numbers are offsets from 100; steps move the sender as in
	// TestSequenceAccounting. ring is the lost-sequence ring's capacity.
	tests := []struct {
		name          string
		ring          int
		steps         []int
		want          []uint16
		wantTruncated bool
	}{
		{"in order", 0, []int{1, 1, 1}, nil, false},
		{"one gap of two", 0, []int{1, 3, 1}, []uint16{102, 103}, false},
		{"swap: the late packet is not lost", 0, []int{1, 2, -1, 2}, []uint16{}, false},
		{"gap of three, middle one late", 0, []int{4, -2, 2}, []uint16{101, 103}, false},
		{"late packet then its duplicate", 0, []int{2, -1, 0, 2}, []uint16{}, false},
		// ring of 3: gaps 101-102 and 104-105 keep the newest three
		// (102, 104, 105); 104 arrives late and frees a slot; the next gap
		// (107) takes it without dropping 102.
		{"full ring keeps its order and its bound", 3, []int{3, 3, -2, 4}, []uint16{102, 105, 107}, true},
		{"full ring refills, then drops the oldest", 3, []int{3, 3, -2, 4, 2}, []uint16{105, 107, 109}, true},
		{"full ring, oldest entry late", 3, []int{3, 3, -4}, []uint16{104, 105}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewStore(Config{LostSeqRing: tc.ring})
			st.OnSDP("call-1", t0, &sdp.Session{Media: []sdp.Media{{Type: "audio", Port: 5000, Conn: "10.0.0.2", Formats: []sdp.Format{{PayloadType: 0}}}}}, true, epA)
			s := &sender{st: st, src: epA, dst: epB, ssrc: 7, seq: 100, ts: 1000}
			s.send(t, 0, 0)
			for _, step := range tc.steps {
				s.send(t, step, 0)
			}
			got := onlyStream(t, st)
			if fmt.Sprint(got.LostSequences) != fmt.Sprint(tc.want) || got.LostSequencesTruncated != tc.wantTruncated {
				t.Errorf("got lost_sequences %v truncated %v, want %v truncated %v", got.LostSequences, got.LostSequencesTruncated, tc.want, tc.wantTruncated)
			}
			if tc.ring > 0 && len(got.LostSequences) > tc.ring {
				t.Errorf("got %d lost sequences, want at most the ring's %d", len(got.LostSequences), tc.ring)
			}
		})
	}
}

func TestSequenceWrap(t *testing.T) {
	st := NewStore(Config{})
	s := &sender{st: st, src: epA, dst: epB, ssrc: 9, seq: 65530}
	s.send(t, 0, 0)
	for i := 0; i < 20; i++ {
		step := 1
		if i == 10 {
			step = 3 // lose two across the wrap
		}
		s.send(t, step, 0)
	}
	got := onlyStream(t, st)
	if got.Packets != 21 || got.Expected != 23 || got.Lost != 2 {
		t.Errorf("got packets %d expected %d lost %d, want 21 23 2", got.Packets, got.Expected, got.Lost)
	}
	if len(got.LostSequences) != 2 {
		t.Errorf("got lost sequences %v, want 2 entries", got.LostSequences)
	}
}

func TestJitter(t *testing.T) {
	// Every other packet arrives 4 ms late: D alternates 4, 4, ... so J
	// converges on 4 ms; the first D is 4 ms → J = 0.25.
	st := NewStore(Config{})
	s := &sender{st: st, src: epA, dst: epB, ssrc: 11, pt: 8}
	s.send(t, 0, 0)
	s.send(t, 1, 0)
	s.send(t, 1, 4*time.Millisecond)
	got := onlyStream(t, st)
	if got.JitterMs == nil || *got.JitterMs != 0.25 {
		t.Fatalf("got jitter %v, want 0.25", got.JitterMs)
	}
	for i := 0; i < 400; i++ {
		skew := time.Duration(0)
		if i%2 == 1 {
			skew = 4 * time.Millisecond
		}
		s.send(t, 1, skew)
	}
	got = onlyStream(t, st)
	if *got.JitterMaxMs < 3.99 || *got.JitterMaxMs > 4.0 {
		t.Errorf("got jitter max %v, want just under 4", *got.JitterMaxMs)
	}
	if got.Codec != "PCMA" || got.ClockRateHz != 8000 || got.Jitter.ClockBasis != "rfc3551" {
		t.Errorf("got codec %s clock %d basis %s, want PCMA 8000 rfc3551", got.Codec, got.ClockRateHz, got.Jitter.ClockBasis)
	}
	if *got.DeltaMaxMs != 24 || *got.DeltaMinMs != 16 {
		t.Errorf("got delta min %v max %v, want 16 24", *got.DeltaMinMs, *got.DeltaMaxMs)
	}
}

func TestHeuristicProbation(t *testing.T) {
	st := NewStore(Config{})
	s := &sender{st: st, src: epA, dst: epB, ssrc: 5, pt: 0}
	s.send(t, 0, 0)
	s.send(t, 1, 0)
	if n := len(st.All()); n != 0 {
		t.Fatalf("after 2 packets: got %d streams, want 0 (probation)", n)
	}
	s.send(t, 1, 0)
	got := onlyStream(t, st)
	if !got.Orphaned || got.Packets != 3 || got.AssociatedDialog != "" {
		t.Errorf("got orphaned %v packets %d dialog %q, want orphaned with 3 packets", got.Orphaned, got.Packets, got.AssociatedDialog)
	}
	// A later SDP naming the endpoint adopts the orphan.
	st.OnSDP("late-call", t0, &sdp.Session{Conn: "10.0.0.1", Media: []sdp.Media{{Type: "audio", Port: 4000, Formats: []sdp.Format{{PayloadType: 0}}}}}, false, epB)
	got = onlyStream(t, st)
	if got.Orphaned || got.AssociatedDialog != "late-call" {
		t.Errorf("got orphaned %v dialog %q, want adopted by late-call", got.Orphaned, got.AssociatedDialog)
	}
	if n := len(st.StreamsFor("late-call")); n != 1 {
		t.Errorf("StreamsFor: got %d, want 1", n)
	}
	if st.Stats().OrphanedStreams != 0 {
		t.Errorf("got orphaned count %d, want 0", st.Stats().OrphanedStreams)
	}
}

func TestNotRTP(t *testing.T) {
	st := NewStore(Config{})
	tests := []struct {
		name    string
		payload []byte
	}{
		{"dns-like", []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'w', 'w', 'w'}},
		{"stun", []byte{0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"rtp reserved pt", rtpPkt(72, false, 1, 1, 1, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 5; i++ {
				if st.Observe(udp(epA, epB, t0, tc.payload)) {
					t.Fatal("got consumed, want rejected")
				}
			}
		})
	}
	// Random SSRCs never pass probation.
	for i := 0; i < 10; i++ {
		st.Observe(udp(epA, epB, t0, rtpPkt(0, false, uint16(i), uint32(i)*160, uint32(1000+i), nil)))
	}
	if n := len(st.All()); n != 0 {
		t.Errorf("got %d streams from changing SSRCs, want 0", n)
	}
}

func TestReinviteHoldAndCodec(t *testing.T) {
	st := NewStore(Config{})
	offer := &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{
		{PayloadType: 96, Encoding: "opus", ClockRate: 48000},
		{PayloadType: 101, Encoding: "telephone-event", ClockRate: 8000},
	}}}}
	st.OnSDP("c", t0, offer, true, epA)
	// Hold: c=0.0.0.0 registers nothing new.
	hold := &sdp.Session{Conn: "0.0.0.0", Media: []sdp.Media{{Type: "audio", Port: 6000, Formats: []sdp.Format{{PayloadType: 0}}}}}
	st.OnSDP("c", t0, hold, true, epA)
	if eps := st.EndpointsFor("c"); len(eps) != 1 || eps[0].Address != "10.0.0.2:5000" || eps[0].Codecs[0] != "opus" {
		t.Fatalf("got endpoints %+v, want only 10.0.0.2:5000 with opus", eps)
	}
	s := &sender{st: st, src: epA, dst: epB, ssrc: 3, pt: 96}
	s.send(t, 0, 0)
	s.send(t, 1, 0)
	got := onlyStream(t, st)
	if got.Codec != "opus" || got.ClockRateHz != 48000 || !got.MOSGrounded {
		t.Errorf("got codec %s clock %d grounded %v, want opus 48000 grounded", got.Codec, got.ClockRateHz, got.MOSGrounded)
	}
	// re-INVITE at the same endpoint switches the dynamic PT's meaning.
	re := &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Direction: sdp.SendOnly, Formats: []sdp.Format{{PayloadType: 96, Encoding: "AMR-WB", ClockRate: 16000}}}}}
	st.OnSDP("c", t0, re, true, epA)
	got = onlyStream(t, st)
	if got.Codec != "AMR-WB" {
		t.Errorf("after re-INVITE: got codec %s, want AMR-WB", got.Codec)
	}
	if eps := st.EndpointsFor("c"); len(eps) != 1 || !eps[0].Hold {
		t.Errorf("got endpoints %+v, want one on hold", eps)
	}
}

func TestEventsAndComfortNoise(t *testing.T) {
	st := NewStore(Config{})
	st.OnSDP("d", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{
		{PayloadType: 0}, {PayloadType: 13}, {PayloadType: 101, Encoding: "telephone-event", ClockRate: 8000},
	}}}}, true, epA)
	seq, ts := uint16(1), uint32(0)
	at := t0
	emit := func(pt uint8, marker bool, stamp uint32, payload []byte) {
		st.Observe(udp(epA, epB, at, rtpPkt(pt, marker, seq, stamp, 1, payload)))
		seq++
		at = at.Add(20 * time.Millisecond)
	}
	for i := 0; i < 5; i++ {
		emit(0, false, ts, make([]byte, 160))
		ts += 160
	}
	// One digit: start, continuation, three End packets (same timestamp).
	evTS := ts
	emit(101, true, evTS, []byte{5, 0x0a, 0, 160})
	emit(101, false, evTS, []byte{5, 0x0a, 1, 64})
	for i := 0; i < 3; i++ {
		emit(101, false, evTS, []byte{5, 0x8a, 3, 32})
	}
	ts += 800
	// Silence: three CN frames, then speech again.
	for i := 0; i < 3; i++ {
		emit(13, i == 0, ts, []byte{40})
		ts += 160
	}
	emit(0, true, ts, make([]byte, 160))
	got := onlyStream(t, st)
	if got.Events == nil || got.Events.Count != 1 || got.Events.Digits != "x" || got.Events.TotalMs != 100 {
		t.Errorf("got events %+v, want one masked event of 100 ms", got.Events)
	}
	if got.Silence == nil || got.Silence.CNFrames != 3 || got.Silence.Periods != 1 || got.Silence.TotalMs != 60 {
		t.Errorf("got silence %+v, want 3 frames, 1 period, 60 ms", got.Silence)
	}
	if got.Codec != "PCMU" || got.PayloadType != 0 {
		t.Errorf("got main codec %s pt %d, want PCMU 0", got.Codec, got.PayloadType)
	}
}

func TestFax(t *testing.T) {
	st := NewStore(Config{})
	st.OnSDP("fax", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "image", Port: 5000, Proto: "udptl", Formats: nil}}}, false, epB)
	for i := 0; i < 4; i++ {
		if !st.Observe(udp(epA, epB, t0.Add(time.Duration(i)*time.Second), []byte{0, byte(i), 0x06, 0xd0})) {
			t.Fatal("udptl not consumed")
		}
	}
	got := onlyStream(t, st)
	if got.Kind != "fax" || got.Packets != 4 || got.MOS != nil || got.AssociatedDialog != "fax" {
		t.Errorf("got kind %s packets %d mos %v dialog %q, want fax, 4, no MOS, bound", got.Kind, got.Packets, got.MOS, got.AssociatedDialog)
	}
	if got.MOSApplicable || got.MOSNote != "T.38 fax: the E-model scores voice only" {
		t.Errorf("got mos_applicable %v note %q, want false with the reason", got.MOSApplicable, got.MOSNote)
	}
	if got.BurstGap != nil {
		t.Errorf("got burst_gap %+v on a fax flow, want absent (no sequence numbers)", *got.BurstGap)
	}
}

func TestIntervals(t *testing.T) {
	st := NewStore(Config{QualityInterval: time.Second})
	s := &sender{st: st, src: epA, dst: epB, ssrc: 1, pt: 0}
	s.send(t, 0, 0) // t0 + 0 ms
	for i := 0; i < 149; i++ {
		step := 1
		if i == 60 {
			step = 11 // ten lost in the second interval
		}
		s.send(t, step, 0)
	}
	got := onlyStream(t, st)
	if len(got.QualityIntervals) != 4 {
		t.Fatalf("got %d intervals, want 4", len(got.QualityIntervals))
	}
	iv := got.QualityIntervals
	if iv[0].Packets != 50 || iv[0].Lost != 0 || iv[0].Verdict != VerdictAcceptable {
		t.Errorf("interval 0: got %+v", iv[0])
	}
	if iv[1].Packets != 40 || iv[1].Lost != 10 || iv[1].LossPct != 20 || iv[1].Verdict != VerdictDegraded {
		t.Errorf("interval 1: got %+v", iv[1])
	}
	if iv[1].MOS == nil || *iv[1].MOS >= *iv[0].MOS {
		t.Errorf("interval 1 MOS %v not under interval 0 MOS %v", iv[1].MOS, iv[0].MOS)
	}
	if !iv[2].Timestamp.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("interval 2 starts %v, want %v", iv[2].Timestamp, t0.Add(2*time.Second))
	}
}

func TestRTCPSideTable(t *testing.T) {
	st := NewStore(Config{})
	s := &sender{st: st, src: epA, dst: epB, ssrc: 0xd2bd4e3e, pt: 8}
	for i := 0; i < 5; i++ {
		s.send(t, 1, 0)
	}
	// SR from the sender (port+1), then an RR from the receiver echoing it
	// 50 ms later with DLSR 10 ms: round trip 40 ms.
	sr := mustHexT(t, "80c80006d2bd4e3e"+"c59286d4e6e978d5"+"00000140"+"00000005"+"00000320")
	rtcpA := netip.AddrPortFrom(epA.Addr(), epA.Port()+1)
	rtcpB := netip.AddrPortFrom(epB.Addr(), epB.Port()+1)
	if !st.Observe(udp(rtcpA, rtcpB, t0.Add(time.Second), sr)) {
		t.Fatal("sr not consumed")
	}
	dlsr := uint32(65536 * 10 / 1000)
	rr := make([]byte, 32)
	copy(rr, mustHexT(t, "81c9000700000099d2bd4e3e"))
	rr[12] = 26                                     // fraction lost 26/256
	rr[15] = 3                                      // cumulative lost 3
	binary.BigEndian.PutUint32(rr[20:], 80)         // jitter 80 units = 10 ms
	binary.BigEndian.PutUint32(rr[24:], 0x86d4e6e9) // LSR: middle of the SR NTP
	binary.BigEndian.PutUint32(rr[28:], dlsr)
	if !st.Observe(udp(rtcpB, rtcpA, t0.Add(time.Second+50*time.Millisecond), rr)) {
		t.Fatal("rr not consumed")
	}
	got := onlyStream(t, st)
	er := got.EndpointReported
	if er == nil || er.SenderReports != 1 || er.ReceptionReports != 1 {
		t.Fatalf("got endpoint_reported %+v", er)
	}
	if *er.SenderPacketCount != 5 || *er.CumulativeLost != 3 || *er.JitterMs != 10 || *er.FractionLostPct != 10.156 {
		t.Errorf("got %+v", er)
	}
	if er.RoundTripMs == nil || *er.RoundTripMs < 39.9 || *er.RoundTripMs > 40.1 {
		t.Errorf("got round trip %v, want 40", er.RoundTripMs)
	}
	// The claim does not touch our own measurement, but its round trip
	// sets the path delay.
	if got.Lost != 0 || got.Delay.Source != "sender_report_echo" || got.Delay.Assumed {
		t.Errorf("got lost %d delay %+v", got.Lost, got.Delay)
	}
	// Reports about SSRCs nobody sent are counted and ignored.
	st.Observe(udp(rtcpB, rtcpA, t0, mustHexT(t, "80c8000600000042c59286d4e6e978d5000001400000000500000320")))
	if st.Stats().RTCPUnknownSSRC != 1 {
		t.Errorf("got unknown ssrc %d, want 1", st.Stats().RTCPUnknownSSRC)
	}
}

func TestMOSGrounding(t *testing.T) {
	tests := []struct {
		pt           uint8
		wantCodec    string
		wantGrounded bool
		wantNote     bool
	}{{0, "PCMU", true, false}, {18, "G729", true, false}, {9, "G722", false, true}}
	for _, tc := range tests {
		st := NewStore(Config{})
		s := &sender{st: st, src: epA, dst: epB, ssrc: 1, pt: tc.pt}
		for i := 0; i < 5; i++ {
			s.send(t, 1, 0)
		}
		got := onlyStream(t, st)
		if got.Codec != tc.wantCodec || got.MOSGrounded != tc.wantGrounded || (got.MOSNote != "") != tc.wantNote || got.MOS == nil {
			t.Errorf("pt %d: got codec %s grounded %v note %q mos %v", tc.pt, got.Codec, got.MOSGrounded, got.MOSNote, got.MOS)
		}
		if got.Delay == nil || !got.Delay.Assumed || got.Delay.OneWayMs != 100 {
			t.Errorf("pt %d: got delay %+v, want assumed 100", tc.pt, got.Delay)
		}
	}
}

// TestStreamCapFlood floods the store with 50k unique SSRCs on a signaled
// endpoint and checks the cap at every step.
func TestStreamCapFlood(t *testing.T) {
	const limit = 1000
	st := NewStore(Config{MaxStreams: limit, MaxCandidates: 500, MaxEndpoints: 500})
	st.OnSDP("flood", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, epA)
	other := netip.MustParseAddrPort("10.9.9.9:7000")
	for i := 0; i < 50000; i++ {
		st.Observe(udp(epA, epB, t0, rtpPkt(0, false, 1, 1, uint32(i), nil)))
		st.Observe(udp(other, epA, t0, rtpPkt(0, false, 1, 1, uint32(i), nil))) // unsignaled: probation
		s := st.Stats()
		if s.Streams > limit || s.Candidates > 500 {
			t.Fatalf("step %d: got %d streams, %d candidates, caps %d/500", i, s.Streams, s.Candidates, limit)
		}
	}
	s := st.Stats()
	if s.StreamsEvicted != 50000-limit || s.CandidatesEvicted != 50000-500 {
		t.Errorf("got evicted %d streams, %d candidates, want %d, %d", s.StreamsEvicted, s.CandidatesEvicted, 50000-limit, 50000-500)
	}
	if n := len(st.StreamsFor("flood")); n != limit {
		t.Errorf("StreamsFor: got %d, want %d", n, limit)
	}
	// Oldest went first: the survivors are the newest SSRCs.
	if all := st.All(); all[0].SSRC != "0x0000bf68" || all[len(all)-1].SSRC != "0x0000c34f" {
		t.Errorf("got survivors %s..%s, want 0x0000bf68..0x0000c34f", all[0].SSRC, all[len(all)-1].SSRC)
	}
}

// TestEndpointCapFlood floods the SDP endpoint registry.
func TestEndpointCapFlood(t *testing.T) {
	st := NewStore(Config{MaxEndpoints: 300})
	for i := 0; i < 50000; i++ {
		st.OnSDP("c", t0, &sdp.Session{Conn: "10.1.0.1", Media: []sdp.Media{{Type: "audio", Port: 1 + i%65000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, epA)
		if n := st.Stats().Endpoints; n > 300 {
			t.Fatalf("step %d: got %d endpoints, cap 300", i, n)
		}
	}
	if len(st.EndpointsFor("c")) != 300 {
		t.Errorf("got %d endpoints for c, want 300", len(st.EndpointsFor("c")))
	}
}

func mustHexT(t testing.TB, s string) []byte {
	t.Helper()
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			case c >= 'a' && c <= 'f':
				v |= byte(c-'a') + 10
			default:
				t.Fatalf("bad hex %q", s)
			}
		}
		b[i] = v
	}
	return b
}

// TestProbationNamesTheFirstFrame: an unsignaled flow that passes probation
// is named by the frame of its first packet, or, when continuity broke
// during probation, of the packet it started over from.
func TestProbationNamesTheFirstFrame(t *testing.T) {
	for _, c := range []struct {
		name  string
		seqs  []uint16
		first int // index of the packet whose frame names the stream
	}{
		{"in sequence", []uint16{10, 11, 12}, 0},
		{"started over", []uint16{10, 40, 41, 42}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := NewStore(Config{})
			var refs []string
			for i, seq := range c.seqs {
				f := &packet.Frame{TS: t0, Source: "probation.pcap", Ordinal: uint64(i + 1), Data: []byte{byte(i), 1, 2, 3}}
				refs = append(refs, packet.RefOf(f).String())
				p := udp(epA, epB, t0.Add(time.Duration(i)*20*time.Millisecond), rtpPkt(0, false, seq, uint32(seq)*160, 9, make([]byte, 160)))
				p.Frame = f
				st.Observe(p)
			}
			if got := onlyStream(t, st); got.Frame != refs[c.first] {
				t.Errorf("stream names %q, want %q (packet %d)", got.Frame, refs[c.first], c.first)
			}
		})
	}
}
