package media

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/mos"
	"github.com/sipnab/sipnab/core/sdp"
)

// amrWBBits are the speech bits of AMR-WB modes 0-8 (3GPP TS 26.201).
var amrWBBits = [9]int{132, 177, 253, 285, 317, 365, 397, 461, 477}

// amrWB builds one single-frame AMR-WB payload of a mode (RFC 4867 §4.3
// bandwidth-efficient or §4.4 octet-aligned layout).
func amrWB(mode int, octet bool) []byte {
	bits := amrWBBits[mode]
	if octet {
		return append([]byte{0xf0, byte(mode<<3 | 1<<2)}, make([]byte, (bits+7)/8)...)
	}
	// CMR 15 (4 bits), F 0, FT (4 bits), Q 1, then the speech bits.
	b := make([]byte, (4+6+bits+7)/8)
	b[0] = 0xf0 | byte(mode>>1)&7 // CMR, F 0, the top three FT bits
	b[1] = byte(mode&1)<<7 | 1<<6 // the last FT bit, Q
	return b
}

// sendAMR sends n 20 ms AMR-WB packets (PT 96, 320 samples at 16 kHz)
// whose modes cycle through modes, skipping the sequence numbers in lose.
func sendAMR(st *Store, n int, octet bool, lose map[int]bool, modes ...int) {
	for i := 0; i < n; i++ {
		if lose[i] {
			continue
		}
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		st.Observe(udp(epA, epB, at, rtpPkt(96, false, uint16(i), uint32(i*320), 0xa3, amrWB(modes[i%len(modes)], octet))))
	}
}

func amrSDP(st *Store, fmtp string) {
	st.OnSDP("amr", t0, &sdp.Session{Conn: "10.0.0.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{
		{PayloadType: 96, Encoding: "AMR-WB", ClockRate: 16000, Fmtp: fmtp},
	}}}}, false, epB)
}

// TestAMRWBModesAndWidebandScore: the AMR-WB frames are read in the SDP's
// packing and counted by mode; a pinned mode is scored on G.107.1's scale
// (R = 129 − Id − Ie,WB, Id = 2.4 at the assumed 100 ms and no jitter,
// MOS_CQEW = G.107 Annex B at R/1.29), apart from the narrowband MOS,
// which stays the ungrounded placeholder.
func TestAMRWBModesAndWidebandScore(t *testing.T) {
	annexB := func(r float64) float64 { r /= 1.29; return 1 + 0.035*r + r*(r-60)*(100-r)*7e-6 }
	for _, tc := range []struct {
		name       string
		fmtp       string
		octet      bool // the payloads' packing
		listening  mos.Listening
		lose       map[int]bool
		modes      []int
		wantAMR    string
		wantBasis  string
		wantIe     float64 // 0: not applicable
		wantBpl    float64
		wantReason string
	}{
		{name: "octet-aligned 12.65 kbit/s pinned by its frames", fmtp: "octet-align=1; mode-set=2", octet: true, modes: []int{2},
			wantAMR:   `{"packing":"octet_aligned","mode_set":[2],"packets_read":50,"packets_malformed":0,"modes":[{"mode":2,"kbps":12.65,"frames":50}],"sid_frames":0,"no_data_frames":0}`,
			wantBasis: "payload_frames", wantIe: 13},
		{name: "bandwidth-efficient 23.85 kbit/s without a mode-set", modes: []int{8},
			wantAMR:   `{"packing":"bandwidth_efficient","packets_read":50,"packets_malformed":0,"modes":[{"mode":8,"kbps":23.85,"frames":50}],"sid_frames":0,"no_data_frames":0}`,
			wantBasis: "payload_frames", wantIe: 8},
		{name: "two modes in the frames pin nothing", modes: []int{2, 8},
			wantAMR:    `{"packing":"bandwidth_efficient","packets_read":50,"packets_malformed":0,"modes":[{"mode":2,"kbps":12.65,"frames":25},{"mode":8,"kbps":23.85,"frames":25}],"sid_frames":0,"no_data_frames":0}`,
			wantReason: mos.WBNoMode},
		{name: "payloads in the other packing are counted malformed; the single mode-set pins", fmtp: "octet-align=1; mode-set=8", modes: []int{8},
			wantAMR:   `{"packing":"octet_aligned","mode_set":[8],"packets_read":0,"packets_malformed":50,"modes":[],"sid_frames":0,"no_data_frames":0}`,
			wantBasis: "sdp_mode_set", wantIe: 8},
		{name: "loss with a monotic listener has no Bpl,WB", modes: []int{2}, lose: map[int]bool{10: true},
			wantAMR:    `{"packing":"bandwidth_efficient","packets_read":49,"packets_malformed":0,"modes":[{"mode":2,"kbps":12.65,"frames":49}],"sid_frames":0,"no_data_frames":0}`,
			wantBasis:  "payload_frames",
			wantReason: mos.WBNoBpl},
		{name: "loss with a diotic listener uses Table IV.4's Bpl,WB", modes: []int{8}, listening: mos.Diotic, lose: map[int]bool{10: true},
			wantAMR:   `{"packing":"bandwidth_efficient","packets_read":49,"packets_malformed":0,"modes":[{"mode":8,"kbps":23.85,"frames":49}],"sid_frames":0,"no_data_frames":0}`,
			wantBasis: "payload_frames", wantIe: 10, wantBpl: 4.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := NewStore(Config{WidebandListening: tc.listening})
			amrSDP(st, tc.fmtp)
			sendAMR(st, 50, tc.octet, tc.lose, tc.modes...)
			s := onlyStream(t, st)
			if s.Codec != "AMR-WB" || s.MOSGrounded || s.MOSGrounding != string(mos.Unpublished) {
				t.Errorf("narrowband: got codec %s grounded %v %s, want AMR-WB ungrounded placeholder", s.Codec, s.MOSGrounded, s.MOSGrounding)
			}
			got, _ := json.Marshal(s.AMR)
			if string(got) != tc.wantAMR {
				t.Errorf("amr\n got %s\nwant %s", got, tc.wantAMR)
			}
			w := s.WidebandMOS
			if w == nil {
				t.Fatal("wideband_mos absent")
			}
			if w.Model != "ITU-T G.107.1" || w.Reason != tc.wantReason || w.Applicable != (tc.wantIe > 0) || w.ModeBasis != tc.wantBasis {
				t.Fatalf("got %+v, want basis %q, reason %q", *w, tc.wantBasis, tc.wantReason)
			}
			if tc.wantIe == 0 {
				if w.MOSCQEW != nil {
					t.Errorf("got mos_cqew %v without a published value", *w.MOSCQEW)
				}
				return
			}
			ie := tc.wantIe
			if tc.wantBpl > 0 {
				ie += (95 - ie) * s.LossPct / (s.LossPct + tc.wantBpl)
			}
			r := 129 - 0.024*(100+*s.JitterMs) - ie
			if *w.IeWB != tc.wantIe || math.Abs(*w.RWB-r) > 1e-3 || math.Abs(*w.MOSCQEW-annexB(r)) > 1e-3 {
				t.Errorf("got Ie,WB %v R %v MOS_CQEW %v, want %v %.3f %.3f", *w.IeWB, *w.RWB, *w.MOSCQEW, tc.wantIe, r, annexB(r))
			}
			if (w.BplWB == nil) != (tc.wantBpl == 0) || w.BplWB != nil && *w.BplWB != tc.wantBpl {
				t.Errorf("got bpl_wb %v, want %v", w.BplWB, tc.wantBpl)
			}
		})
	}
}
