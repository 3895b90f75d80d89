package sdp

// staticPT is one RFC 3551 static payload type.
type staticPT struct {
	enc      string
	clock    int
	channels int // 0 for video
}

// staticPayloads is RFC 3551 §6 Tables 4 and 5 (assigned static types).
var staticPayloads = [35]staticPT{
	0:  {"PCMU", 8000, 1},
	3:  {"GSM", 8000, 1},
	4:  {"G723", 8000, 1},
	5:  {"DVI4", 8000, 1},
	6:  {"DVI4", 16000, 1},
	7:  {"LPC", 8000, 1},
	8:  {"PCMA", 8000, 1},
	9:  {"G722", 8000, 1}, // RTP clock 8000 although sampled at 16 kHz (RFC 3551 §4.5.2)
	10: {"L16", 44100, 2},
	11: {"L16", 44100, 1},
	12: {"QCELP", 8000, 1},
	13: {"CN", 8000, 1},
	14: {"MPA", 90000, 0},
	15: {"G728", 8000, 1},
	16: {"DVI4", 11025, 1},
	17: {"DVI4", 22050, 1},
	18: {"G729", 8000, 1},
	25: {"CelB", 90000, 0},
	26: {"JPEG", 90000, 0},
	28: {"nv", 90000, 0},
	31: {"H261", 90000, 0},
	32: {"MPV", 90000, 0},
	33: {"MP2T", 90000, 0},
	34: {"H263", 90000, 0},
}

// StaticPayload returns the RFC 3551 encoding name and RTP clock rate of a
// static payload type; ok is false for dynamic (96-127), unassigned or
// reserved types.
func StaticPayload(pt int) (enc string, clock int, ok bool) {
	if pt < 0 || pt >= len(staticPayloads) {
		return "", 0, false
	}
	s := staticPayloads[pt]
	if s.enc == "" {
		return "", 0, false
	}
	return s.enc, s.clock, true
}

// StaticChannels returns the channel count of a static audio payload type
// (0 for video or unknown types).
func StaticChannels(pt int) int {
	if pt < 0 || pt >= len(staticPayloads) {
		return 0
	}
	return staticPayloads[pt].channels
}
