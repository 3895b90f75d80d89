package media

import (
	"github.com/sipnab/sipnab/core/mos"
	"github.com/sipnab/sipnab/core/rtp"
)

// AMR and AMR-WB streams (RFC 4867): each payload's table of contents is
// read (rtp.ParseAMR, in the packing the bound SDP's fmtp names) and its
// frames counted by frame type, so the mode the sender used is measured,
// not assumed; an AMR-WB stream whose mode is pinned (one speech mode in
// every frame read, or, with no frame read, a single-mode mode-set) gets a
// wideband score on the ITU-T G.107.1 scale (mos.Wideband), kept apart
// from the narrowband MOS (which stays the ungrounded placeholder).

// amrStats counts one AMR stream's payloads; allocated at its first AMR
// packet.
type amrStats struct {
	flavor    rtp.AMRFlavor
	params    rtp.AMRParams
	read      uint64 // payloads whose table of contents matched their size
	malformed uint64 // payloads that did not (counted, not read)
	types     [16]uint64
}

// amrParams returns the fmtp parameters of payload type pt on the bound
// endpoint (the zero value, RFC 4867's defaults, without one).
func (s *stream) amrParams(pt uint8) rtp.AMRParams {
	if s.ep != nil {
		for i := range s.ep.formats {
			if f := &s.ep.formats[i]; f.pt == pt {
				return f.amr
			}
		}
	}
	return rtp.AMRParams{}
}

// amrFrames reads one AMR or AMR-WB payload.
func (s *stream) amrFrames(flavor rtp.AMRFlavor, h *rtp.Header, payload []byte) {
	if payload == nil || h.PayloadOffset+h.PayloadLen > len(payload) {
		return
	}
	if s.ext == nil {
		s.ext = &streamExt{}
	}
	if s.ext.amr == nil || s.ext.amr.flavor != flavor {
		s.ext.amr = &amrStats{flavor: flavor}
	}
	a := s.ext.amr
	a.params = s.amrParams(h.PayloadType)
	p, err := rtp.ParseAMR(payload[h.PayloadOffset:h.PayloadOffset+h.PayloadLen], flavor, a.params)
	if err != nil {
		a.malformed++
		return
	}
	a.read++
	for ft, n := range p.Types {
		a.types[ft] += uint64(n)
	}
}

// AMRMode is how many frames of one speech mode a stream carried.
type AMRMode struct {
	Mode   int     `json:"mode"` // frame type, RFC 4867 §8.1 mode-set number
	Kbps   float64 `json:"kbps"`
	Frames uint64  `json:"frames"`
}

// AMRInfo is what an AMR or AMR-WB stream's payloads showed (RFC 4867).
type AMRInfo struct {
	// Packing is bandwidth_efficient (RFC 4867's default) or octet_aligned
	// (fmtp octet-align=1), as the SDP negotiated it.
	Packing     string `json:"packing"`
	Interleaved bool   `json:"interleaved,omitempty"`
	// ModeSet is the fmtp mode-set; absent: every mode permitted.
	ModeSet []int `json:"mode_set,omitempty"`
	// PacketsRead counts payloads whose table of contents accounts for
	// their size exactly; PacketsMalformed those that did not (a packing
	// other than the SDP's, a reserved frame type, a cut payload).
	PacketsRead      uint64 `json:"packets_read"`
	PacketsMalformed uint64 `json:"packets_malformed"`
	// Modes are the speech frames by mode; SID, no-data and (AMR-WB)
	// speech-lost frames are counted apart.
	Modes        []AMRMode `json:"modes"`
	SIDFrames    uint64    `json:"sid_frames"`
	NoDataFrames uint64    `json:"no_data_frames"`
	LostFrames   uint64    `json:"lost_frames,omitempty"`
}

// WidebandMOS is an AMR-WB stream's score on the ITU-T G.107.1 wideband
// scale (MOS_CQEW), never comparable with a narrowband MOS. Applicable is
// false, with the reason, when the mode is not pinned or G.113 publishes
// no value for it.
type WidebandMOS struct {
	Model      string `json:"model"`
	Applicable bool   `json:"applicable"`
	Reason     string `json:"reason,omitempty"`
	// ModeKbps is the pinned mode; ModeBasis how it was known
	// (payload_frames: every speech frame read was that mode;
	// sdp_mode_set: no frame read, a single-mode mode-set).
	ModeKbps  *float64 `json:"mode_kbps,omitempty"`
	ModeBasis string   `json:"mode_basis,omitempty"`
	// Listening is the G.113 Appendix IV context (--amr-wb-listening).
	Listening string   `json:"listening"`
	MOSCQEW   *float64 `json:"mos_cqew,omitempty"`
	RWB       *float64 `json:"r_wb,omitempty"`
	IeWB      *float64 `json:"ie_wb,omitempty"`
	BplWB     *float64 `json:"bpl_wb,omitempty"`
	Source    string   `json:"source,omitempty"`
}

// amrView renders the AMR evidence and, for AMR-WB with a measured jitter,
// the wideband score at the stream's loss, jitter and resolved delay.
func (st *Store) amrView(s *stream, v *StreamInfo, codec rtp.Codec, scorable bool, delayMs float64) {
	flavor, ok := rtp.AMRFlavorOf(codec.Name)
	if !ok {
		return
	}
	var a *amrStats
	if s.ext != nil {
		a = s.ext.amr
	}
	if a == nil || a.flavor != flavor {
		a = &amrStats{flavor: flavor, params: s.amrParams(uint8(v.PayloadType))}
	}
	info := &AMRInfo{Packing: "bandwidth_efficient", Interleaved: a.params.Interleaved, PacketsRead: a.read, PacketsMalformed: a.malformed, Modes: []AMRMode{}}
	if a.params.OctetAligned {
		info.Packing = "octet_aligned"
	}
	modes := flavor.AMRModes()
	for m := 0; m < 9; m++ {
		if a.params.ModeSet&(1<<m) != 0 && m < int(modes) {
			info.ModeSet = append(info.ModeSet, m)
		}
	}
	speechModes, only := 0, -1
	for m := uint8(0); m < modes; m++ {
		if n := a.types[m]; n > 0 {
			kbps := rtp.AMRNBModeKbps[min(m, 7)]
			if flavor == rtp.AMRWideband {
				kbps = rtp.AMRWBModeKbps[m]
			}
			info.Modes = append(info.Modes, AMRMode{Mode: int(m), Kbps: kbps, Frames: n})
			speechModes++
			only = int(m)
		}
	}
	if flavor == rtp.AMRWideband {
		info.SIDFrames, info.LostFrames = a.types[9], a.types[14]
	} else {
		info.SIDFrames = a.types[8] + a.types[9] + a.types[10] + a.types[11]
	}
	info.NoDataFrames = a.types[15]
	v.AMR = info
	if flavor != rtp.AMRWideband {
		return
	}
	ctx := st.cfg.WidebandListening
	if ctx == "" {
		ctx = mos.Monotic
	}
	w := &WidebandMOS{Model: "ITU-T G.107.1", Listening: string(ctx)}
	v.WidebandMOS = w
	mode, basis := -1, ""
	switch {
	case speechModes == 1:
		mode, basis = only, "payload_frames"
	case speechModes == 0 && len(info.ModeSet) == 1:
		mode, basis = info.ModeSet[0], "sdp_mode_set"
	}
	if mode >= 0 {
		w.ModeKbps, w.ModeBasis = f64(rtp.AMRWBModeKbps[mode]), basis
	}
	if !scorable {
		w.Reason = "clock rate unknown or no timed packet: jitter, and so the score, not measured"
		return
	}
	sc, reason, ok := mos.Wideband(mode, ctx, v.LossPct, s.jitter, delayMs)
	if !ok {
		w.Reason = reason
		return
	}
	w.Applicable = true
	w.MOSCQEW, w.RWB, w.IeWB = f64(round3(sc.MOSCQE)), f64(round3(sc.R)), f64(sc.IeWB)
	if sc.BplWB > 0 {
		w.BplWB = f64(sc.BplWB)
	}
	w.Source = sc.Source
}
