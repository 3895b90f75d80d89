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

// TestCodecScores: streams of the G.113 Appendix I codecs are scored with
// their published Ie (G.726 by its bit rate, G.723.1 by the frames it
// carries) at the assumed 100 ms delay; a stream with no score says
// mos_applicable false with a reason, and MOS is absent.
func TestCodecScores(t *testing.T) {
	g723 := func(rateBits byte, size int) []byte {
		b := make([]byte, size)
		b[0] = rateBits
		return b
	}
	tests := []struct {
		name       string
		rtpmap     *sdp.Format // nil: static payload type
		pt         uint8
		payload    []byte
		wantCodec  string
		wantMOS    *float64 // nil: absent
		wantSource string
		wantNote   string
	}{
		{name: "G726-32 by rtpmap", rtpmap: &sdp.Format{PayloadType: 97, Encoding: "G726-32", ClockRate: 8000}, pt: 97, payload: make([]byte, 80),
			wantCodec: "G726-32", wantMOS: f64(4.159), wantSource: "ITU-T G.113 Appendix I: G.726 ADPCM 32 kbit/s"},
		{name: "G726-16 by rtpmap", rtpmap: &sdp.Format{PayloadType: 98, Encoding: "G726-16", ClockRate: 8000}, pt: 98, payload: make([]byte, 40),
			wantCodec: "G726-16", wantMOS: f64(2.103), wantSource: "ITU-T G.113 Appendix I: G.726 ADPCM 16 kbit/s"},
		{name: "AAL2-G726-24", rtpmap: &sdp.Format{PayloadType: 99, Encoding: "AAL2-G726-24", ClockRate: 8000}, pt: 99, payload: make([]byte, 60),
			wantCodec: "AAL2-G726-24", wantMOS: f64(3.394), wantSource: "ITU-T G.113 Appendix I: G.726 ADPCM 24 kbit/s"},
		{name: "static PT 2 is G726-32", pt: 2, payload: make([]byte, 80),
			wantCodec: "G726-32", wantMOS: f64(4.159), wantSource: "ITU-T G.113 Appendix I: G.726 ADPCM 32 kbit/s"},
		{name: "G728", pt: 15, payload: make([]byte, 40),
			wantCodec: "G728", wantMOS: f64(4.159), wantSource: "ITU-T G.113 Appendix I: G.728 LD-CELP 16 kbit/s"},
		{name: "GSM full rate", pt: 3, payload: make([]byte, 33),
			wantCodec: "GSM", wantMOS: f64(3.634), wantSource: "ITU-T G.113 Appendix I: GSM 06.10 full rate"},
		{name: "GSM-EFR", rtpmap: &sdp.Format{PayloadType: 100, Encoding: "GSM-EFR", ClockRate: 8000}, pt: 100, payload: make([]byte, 31),
			wantCodec: "GSM-EFR", wantMOS: f64(4.223), wantSource: "ITU-T G.113 Appendix I: GSM 06.60 enhanced full rate"},
		{name: "G.723.1 6.3k frames", pt: 4, payload: g723(0, 24),
			wantCodec: "G723", wantMOS: f64(3.856), wantSource: "ITU-T G.113 Appendix I: G.723.1 MP-MLQ 6.3 kbit/s (24-octet frames in 5 of 5 packets)"},
		{name: "G.723.1 5.3k frames", pt: 4, payload: g723(1, 20),
			wantCodec: "G723", wantMOS: f64(3.680), wantSource: "ITU-T G.113 Appendix I: G.723.1 ACELP 5.3 kbit/s (20-octet frames in 5 of 5 packets)"},
		{name: "G.723.1 rate not shown", pt: 4, payload: g723(2, 4),
			wantCodec: "G723", wantMOS: f64(3.856), wantSource: "ITU-T G.113 Appendix I: G.723.1 MP-MLQ 6.3 kbit/s (bit rate not shown by the payload: 6.3 kbit/s assumed)"},
		{name: "unknown audio codec", rtpmap: &sdp.Format{PayloadType: 110, Encoding: "X-NOCLOCK"}, pt: 110, payload: make([]byte, 50),
			wantCodec: "X-NOCLOCK", wantNote: "clock rate unknown: jitter and MOS not measured"},
		{name: "video", pt: 34, payload: make([]byte, 500),
			wantCodec: "H263", wantNote: "video stream: the E-model scores voice only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewStore(Config{})
			f := sdp.Format{PayloadType: int(tc.pt)}
			if tc.rtpmap != nil {
				f = *tc.rtpmap
			}
			st.OnSDP("c", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{f}}}}, true, epA)
			for i := 0; i < 5; i++ {
				at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
				st.Observe(udp(epA, epB, at, rtpPkt(tc.pt, false, uint16(10+i), uint32(160*i), 9, tc.payload)))
			}
			got := onlyStream(t, st)
			if got.Codec != tc.wantCodec {
				t.Errorf("codec %q, want %q", got.Codec, tc.wantCodec)
			}
			if tc.wantMOS == nil {
				if got.MOS != nil || got.MOSApplicable || got.MOSNote != tc.wantNote {
					t.Errorf("mos %v applicable %v note %q, want absent, false, %q", ptr(got.MOS), got.MOSApplicable, got.MOSNote, tc.wantNote)
				}
				return
			}
			if got.MOS == nil || *got.MOS != *tc.wantMOS || !got.MOSApplicable || !got.MOSGrounded || got.MOSGrounding != "published" {
				t.Errorf("mos %v applicable %v grounded %v (%s), want %v published", ptr(got.MOS), got.MOSApplicable, got.MOSGrounded, got.MOSGrounding, *tc.wantMOS)
			}
			if got.MOSSource != tc.wantSource || got.MOSNote != "" {
				t.Errorf("mos_source %q note %q, want %q and no note", got.MOSSource, got.MOSNote, tc.wantSource)
			}
		})
	}
}

// TestCodecScoreWithLossWithoutBpl: G.113 gives GSM full rate no Bpl, so
// with loss its score uses the placeholder Bpl and is not grounded; GSM-EFR
// has one and stays grounded.
func TestCodecScoreWithLossWithoutBpl(t *testing.T) {
	for _, tc := range []struct {
		pt, enc      string
		wantGrounded bool
		wantNote     string
	}{
		{"3", "", false, "G.113 Appendix I gives this codec's Ie but no packet-loss robustness (Bpl): with loss the score uses a placeholder Bpl of 10 and is not grounded"},
		{"100", "GSM-EFR", true, ""},
	} {
		st := NewStore(Config{})
		f := sdp.Format{PayloadType: 3}
		pt := uint8(3)
		if tc.enc != "" {
			f, pt = sdp.Format{PayloadType: 100, Encoding: tc.enc, ClockRate: 8000}, 100
		}
		st.OnSDP("c", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{f}}}}, true, epA)
		for i := 0; i < 20; i++ {
			if i == 10 {
				continue // one lost of 20: 5 %
			}
			at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
			st.Observe(udp(epA, epB, at, rtpPkt(pt, false, uint16(10+i), uint32(160*i), 9, make([]byte, 33))))
		}
		got := onlyStream(t, st)
		if got.LossPct != 5 || got.MOS == nil || got.MOSGrounded != tc.wantGrounded || got.MOSNote != tc.wantNote {
			t.Errorf("%s: loss %v mos %v grounded %v (%s) note %q, want 5 %% grounded %v note %q", got.Codec, got.LossPct, ptr(got.MOS), got.MOSGrounded, got.MOSGrounding, got.MOSNote, tc.wantGrounded, tc.wantNote)
		}
	}
}
