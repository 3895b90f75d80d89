package rtp

import (
	"errors"
	"strconv"
	"strings"
)

// AMR and AMR-WB RTP payloads (RFC 4867 §4): a 4-bit codec mode request
// (CMR), a table of contents with one entry per frame (F: more entries
// follow, FT: frame type, Q: quality), then the frames. The frame type
// names the mode (the bit rate) of each frame, which is what the E-model
// needs; the speech bits are never read.
//
// Two packings (RFC 4867 §4.3, §4.4): bandwidth-efficient (the default)
// packs CMR(4) and each entry F(1) FT(4) Q(1) back to back and the frames
// bit-packed after them, padded to an octet at the end; octet-aligned
// (fmtp octet-align=1) gives the CMR a whole octet (CMR(4) R(4)), each
// entry a whole octet (F FT Q P(2)) and pads every frame to an octet.
// Interleaving (fmtp interleaving) adds an ILL/ILP octet after the CMR in
// octet-aligned mode; it is read past, not reordered.

// AMRFlavor says which of the two codecs a payload carries.
type AMRFlavor uint8

const (
	AMRNarrowband AMRFlavor = iota + 1 // AMR, 8000 Hz (3GPP TS 26.101)
	AMRWideband                        // AMR-WB = ITU-T G.722.2, 16000 Hz (3GPP TS 26.201)
)

// amrBits are the speech (or SID) bits of each frame type; -1 marks a
// reserved type. AMR: 3GPP TS 26.101 Table 1a (types 0-7 the eight modes,
// 8 SID, 9-11 other systems' SID, 15 no data). AMR-WB: 3GPP TS 26.201
// Table 2 (types 0-8 the nine modes, 9 SID, 14 speech lost, 15 no data).
var amrBits = [3][16]int16{
	AMRNarrowband: {95, 103, 118, 134, 148, 159, 204, 244, 39, 43, 38, 37, -1, -1, -1, 0},
	AMRWideband:   {132, 177, 253, 285, 317, 365, 397, 461, 477, 40, -1, -1, -1, -1, 0, 0},
}

// AMRModes is the number of speech modes: frame types below it are speech.
func (f AMRFlavor) AMRModes() uint8 {
	if f == AMRWideband {
		return 9
	}
	return 8
}

// AMRWBModeKbps are the nine AMR-WB modes in kbit/s, by frame type (3GPP
// TS 26.201; RFC 4867 §8.1 mode-set numbers).
var AMRWBModeKbps = [9]float64{6.6, 8.85, 12.65, 14.25, 15.85, 18.25, 19.85, 23.05, 23.85}

// AMRNBModeKbps are the eight AMR modes in kbit/s, by frame type.
var AMRNBModeKbps = [8]float64{4.75, 5.15, 5.9, 6.7, 7.4, 7.95, 10.2, 12.2}

// AMRFlavorOf returns the flavor of an encoding name ("AMR", "AMR-WB",
// case-insensitive); ok is false for any other (AMR-WB+ is RFC 4352's
// format, not this one).
func AMRFlavorOf(name string) (AMRFlavor, bool) {
	switch {
	case strings.EqualFold(name, "AMR"):
		return AMRNarrowband, true
	case strings.EqualFold(name, "AMR-WB"):
		return AMRWideband, true
	}
	return 0, false
}

// AMRParams are the fmtp parameters of RFC 4867 §8.1 that change how a
// payload is read or what modes it may carry.
type AMRParams struct {
	OctetAligned bool
	Interleaved  bool
	// ModeSet is a bit per permitted mode (bit n: mode n); 0 when the fmtp
	// names none (every mode permitted).
	ModeSet uint16
}

// ParseAMRFmtp reads octet-align, interleaving and mode-set from an fmtp
// parameter string ("octet-align=1; mode-set=0,2,5"). Unknown parameters
// and malformed values are ignored (a malformed mode-set permits every
// mode, as an absent one does).
func ParseAMRFmtp(fmtp string) AMRParams {
	var p AMRParams
	for _, kv := range strings.Split(fmtp, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		switch k {
		case "octet-align":
			p.OctetAligned = v == "1"
		case "interleaving":
			p.Interleaved = v != ""
		case "mode-set":
			var set uint16
			for _, m := range strings.Split(v, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(m))
				if err != nil || n < 0 || n > 8 {
					set = 0
					break
				}
				set |= 1 << n
			}
			p.ModeSet = set
		}
	}
	return p
}

// maxAMRFrames bounds the table of contents read from one payload (RFC
// 4867 §4.3.2: a packet holds as many frames as fit; 64 is 1.28 s of
// speech, past any ptime a sender uses).
const maxAMRFrames = 64

// AMRPayload is what one payload's table of contents says.
type AMRPayload struct {
	CMR    uint8
	Frames int // entries in the table of contents
	// Types counts the entries by frame type.
	Types [16]uint8
}

// Errors of ParseAMR.
var (
	ErrAMRShort    = errors.New("rtp: AMR payload shorter than its table of contents and frames")
	ErrAMRLong     = errors.New("rtp: AMR payload longer than its table of contents and frames")
	ErrAMRReserved = errors.New("rtp: AMR frame type reserved")
	ErrAMRTooMany  = errors.New("rtp: AMR table of contents longer than 64 entries")
)

// ParseAMR reads the table of contents of one AMR or AMR-WB payload and
// checks that the frames it announces fill the payload exactly (RFC 4867
// §4.3, §4.4). It allocates nothing.
func ParseAMR(b []byte, flavor AMRFlavor, p AMRParams) (AMRPayload, error) {
	var out AMRPayload
	if flavor != AMRNarrowband && flavor != AMRWideband {
		return out, errors.New("rtp: not an AMR flavor")
	}
	sizes := &amrBits[flavor]
	if p.OctetAligned {
		if len(b) < 1 {
			return out, ErrAMRShort
		}
		out.CMR = b[0] >> 4
		i := 1
		if p.Interleaved {
			i++ // ILL(4) ILP(4), RFC 4867 §4.4.1
		}
		total := 0
		for {
			if i >= len(b) {
				return out, ErrAMRShort
			}
			e := b[i]
			i++
			ft := e >> 3 & 0x0f
			if sizes[ft] < 0 {
				return out, ErrAMRReserved
			}
			if out.Frames == maxAMRFrames {
				return out, ErrAMRTooMany
			}
			out.Frames++
			out.Types[ft]++
			total += (int(sizes[ft]) + 7) / 8
			if e&0x80 == 0 {
				break
			}
		}
		switch n := i + total; {
		case n > len(b):
			return out, ErrAMRShort
		case n < len(b):
			return out, ErrAMRLong
		}
		return out, nil
	}
	// Bandwidth-efficient: read bits MSB first.
	bit := 0
	read := func(n int) (uint8, bool) {
		var v uint8
		for k := 0; k < n; k++ {
			if bit>>3 >= len(b) {
				return 0, false
			}
			v = v<<1 | b[bit>>3]>>(7-bit&7)&1
			bit++
		}
		return v, true
	}
	cmr, ok := read(4)
	if !ok {
		return out, ErrAMRShort
	}
	out.CMR = cmr
	total := 0
	for {
		e, ok := read(6)
		if !ok {
			return out, ErrAMRShort
		}
		ft := e >> 1 & 0x0f
		if sizes[ft] < 0 {
			return out, ErrAMRReserved
		}
		if out.Frames == maxAMRFrames {
			return out, ErrAMRTooMany
		}
		out.Frames++
		out.Types[ft]++
		total += int(sizes[ft])
		if e&0x20 == 0 {
			break
		}
	}
	switch n := (bit + total + 7) / 8; {
	case n > len(b):
		return out, ErrAMRShort
	case n < len(b):
		return out, ErrAMRLong
	}
	return out, nil
}
