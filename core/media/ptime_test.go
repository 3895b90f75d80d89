package media

import (
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sdp"
)

// pkt is one RTP packet of a ptime case: payload type, marker, how far the
// sequence number and the timestamp advance from the previous packet, and
// the payload.
type pkt struct {
	pt      uint8
	marker  bool
	dSeq    uint16
	dTS     int32
	payload []byte
}

func audio(pt uint8, n int, dTS int32) []pkt {
	out := make([]pkt, n)
	for i := range out {
		out[i] = pkt{pt: pt, dSeq: 1, dTS: dTS, payload: make([]byte, 160)}
	}
	return out
}

func join(parts ...[]pkt) []pkt {
	var out []pkt
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestPtimeIsTheModalTimestampStep: ptime_ms is the most common timestamp
// step between in-order packets of the main audio payload type. Before, it
// was the smallest step: one glitch advancing the timestamp by 4 made 20 ms
// G.711 read 0.5 ms, one 80-sample step read 10 ms.
func TestPtimeIsTheModalTimestampStep(t *testing.T) {
	event := func(marker bool, end bool) pkt {
		flags := byte(0x0a)
		if end {
			flags |= 0x80
		}
		return pkt{pt: 101, marker: marker, dSeq: 1, dTS: 0, payload: []byte{5, flags, 1, 64}}
	}
	cn := pkt{pt: 13, dSeq: 1, dTS: 160, payload: []byte{40}}
	tests := []struct {
		name        string
		pkts        []pkt
		sdp         bool // bind PT 101 as telephone-event/8000
		wantMs      float64
		wantModal   uint64
		wantCounted uint64
		wantEvicted uint64
	}{
		{name: "clean 20 ms G.711", pkts: audio(0, 50, 160), wantMs: 20, wantModal: 49, wantCounted: 49},
		{name: "30 ms PCMA", pkts: audio(8, 20, 240), wantMs: 30, wantModal: 19, wantCounted: 19},
		{
			// One packet 4 samples after the previous, the next back on the
			// 160-sample grid (+316): the smallest step read 0.5 ms.
			name:   "one timestamp glitch",
			pkts:   join(audio(0, 20, 160), []pkt{{pt: 0, dSeq: 1, dTS: 4, payload: make([]byte, 160)}, {pt: 0, dSeq: 1, dTS: 316, payload: make([]byte, 160)}}, audio(0, 20, 160)),
			wantMs: 20, wantModal: 39, wantCounted: 41,
		},
		{
			name:   "one 10 ms packet",
			pkts:   join(audio(0, 20, 160), []pkt{{pt: 0, dSeq: 1, dTS: 80, payload: make([]byte, 80)}}, audio(0, 20, 160)),
			wantMs: 20, wantModal: 39, wantCounted: 40,
		},
		{
			// Comfort noise (PT 13) for three frames, then a talkspurt whose
			// first packet carries the marker: neither the CN frames nor the
			// step into the talkspurt count.
			name:   "comfort noise",
			pkts:   join(audio(0, 10, 160), []pkt{cn, cn, cn}, []pkt{{pt: 0, marker: true, dSeq: 1, dTS: 1600, payload: make([]byte, 160)}}, audio(0, 10, 160)),
			wantMs: 20, wantModal: 19, wantCounted: 19,
		},
		{
			// An RFC 4733 event on the audio SSRC: its packets carry the
			// event's start timestamp (steps of 0) and the audio resumes
			// 800 samples on.
			name:   "dtmf event on the same ssrc",
			sdp:    true,
			pkts:   join(audio(0, 10, 160), []pkt{event(true, false), event(false, false), event(false, true), event(false, true), event(false, true)}, []pkt{{pt: 0, dSeq: 1, dTS: 800, payload: make([]byte, 160)}}, audio(0, 10, 160)),
			wantMs: 20, wantModal: 19, wantCounted: 19,
		},
		{
			// The same event on an orphaned stream: PT 101 is unknown.
			name:   "dtmf event without sdp",
			pkts:   join(audio(0, 10, 160), []pkt{event(true, false), event(false, true)}, []pkt{{pt: 0, dSeq: 1, dTS: 480, payload: make([]byte, 160)}}, audio(0, 10, 160)),
			wantMs: 20, wantModal: 19, wantCounted: 19,
		},
		{
			// A lost packet: the step across the gap (320) does not count.
			name:   "sequence gap",
			pkts:   join(audio(0, 10, 160), []pkt{{pt: 0, dSeq: 2, dTS: 320, payload: make([]byte, 160)}}, audio(0, 10, 160)),
			wantMs: 20, wantModal: 19, wantCounted: 19,
		},
		{
			// Twenty distinct odd steps interleaved with 20 ms ones overflow
			// the 8-bin histogram; 20 ms keeps its bin.
			name: "histogram overflow",
			pkts: func() []pkt {
				var p []pkt
				for i := 0; i < 20; i++ {
					p = append(p, audio(0, 3, 160)...)
					p = append(p, pkt{pt: 0, dSeq: 1, dTS: int32(7 + i), payload: make([]byte, 160)})
				}
				return p
			}(),
			wantMs: 20, wantModal: 59, wantCounted: 79, wantEvicted: 13,
		},
		{
			// A codec change: the main payload type (most packets) gives the
			// ptime at its own clock; the other's steps are kept apart.
			name:   "payload type change",
			pkts:   join(audio(0, 30, 160), audio(18, 10, 240)),
			wantMs: 20, wantModal: 29, wantCounted: 29,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewStore(Config{})
			if tc.sdp {
				st.OnSDP("c", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{
					{PayloadType: 0}, {PayloadType: 13}, {PayloadType: 101, Encoding: "telephone-event", ClockRate: 8000},
				}}}}, true, epA)
			}
			seq, ts := uint16(1000), uint32(50000)
			at := t0
			for i, p := range tc.pkts {
				if i > 0 {
					seq += p.dSeq
					ts += uint32(p.dTS)
				}
				st.Observe(udp(epA, epB, at, rtpPkt(p.pt, p.marker, seq, ts, 7, p.payload)))
				at = at.Add(20 * time.Millisecond)
			}
			got := onlyStream(t, st)
			if got.PtimeMs == nil || *got.PtimeMs != tc.wantMs {
				t.Fatalf("ptime_ms %v, want %v", ptr(got.PtimeMs), tc.wantMs)
			}
			want := PtimeSteps{Modal: tc.wantModal, Counted: tc.wantCounted, Evicted: tc.wantEvicted}
			if got.PtimeSteps == nil || *got.PtimeSteps != want {
				t.Errorf("ptime_steps %+v, want %+v", got.PtimeSteps, want)
			}
		})
	}
}

func ptr(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestPtimeAbsent: no step between two in-order packets of an audio payload
// type, no ptime (absent, not 0).
func TestPtimeAbsent(t *testing.T) {
	tests := []struct {
		name string
		pkts []pkt
	}{
		{"one packet", audio(0, 1, 160)},
		{"comfort noise only", []pkt{{pt: 13, dSeq: 1, dTS: 160, payload: []byte{40}}, {pt: 13, dSeq: 1, dTS: 160, payload: []byte{40}}}},
		{"every step across a gap", []pkt{{pt: 0, dSeq: 1, payload: make([]byte, 160)}, {pt: 0, dSeq: 3, dTS: 480, payload: make([]byte, 160)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewStore(Config{})
			st.OnSDP("c", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{{PayloadType: 0}, {PayloadType: 13}}}}}, true, epA)
			seq, ts := uint16(1), uint32(0)
			at := t0
			for i, p := range tc.pkts {
				if i > 0 {
					seq += p.dSeq
					ts += uint32(p.dTS)
				}
				st.Observe(udp(epA, epB, at, rtpPkt(p.pt, p.marker, seq, ts, 7, p.payload)))
				at = at.Add(20 * time.Millisecond)
			}
			got := onlyStream(t, st)
			if got.PtimeMs != nil || got.PtimeSteps != nil {
				t.Errorf("ptime_ms %v steps %+v, want absent", ptr(got.PtimeMs), got.PtimeSteps)
			}
		})
	}
}
