package rtp

import (
	"strings"

	"github.com/sipnab/sipnab/core/sdp"
)

// Kind is what a payload carries.
type Kind uint8

const (
	KindUnknown Kind = iota
	KindAudio
	KindVideo
	KindComfortNoise
	KindEvent // RFC 4733 telephone-event
	KindFax   // T.38 (UDPTL or RTP)
)

var kindNames = [...]string{"unknown", "audio", "video", "comfort_noise", "telephone_event", "fax"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Codec names a payload format and its RTP clock.
type Codec struct {
	Name      string // encoding name as RFC 3551 / the IANA registry spell it
	ClockRate uint32 // Hz; 0 when unknown
	Kind      Kind
}

// PTComfortNoise is the RFC 3389 comfort-noise payload type; 19 is its
// pre-RFC 3551 value some endpoints still send.
const (
	PTComfortNoise    = 13
	PTComfortNoiseOld = 19
)

// PTG721 is the static payload type RFC 1890 assigned to G721 (G.726 at
// 32 kbit/s); RFC 3551 §4.5.4 moved G726-32 to a dynamic type and left 2
// unassigned, but deployed stacks still send it.
const PTG721 = 2

// StaticCodec returns the RFC 3551 codec of a static payload type (the
// table is core/sdp's; 19 is the pre-RFC 3551 comfort-noise value and 2 the
// RFC 1890 G.726-32 one).
func StaticCodec(pt uint8) (Codec, bool) {
	switch pt {
	case PTComfortNoiseOld:
		return Codec{"CN", 8000, KindComfortNoise}, true
	case PTG721:
		return Codec{"G726-32", 8000, KindAudio}, true
	}
	enc, clock, ok := sdp.StaticPayload(int(pt))
	if !ok {
		return Codec{}, false
	}
	c := Codec{Name: enc, ClockRate: uint32(clock), Kind: KindAudio}
	switch {
	case pt == PTComfortNoise:
		c.Kind = KindComfortNoise
	case sdp.StaticChannels(int(pt)) == 0:
		c.Kind = KindVideo
	}
	return c, true
}

// dynamic maps encoding names (lowercase) that arrive on dynamic payload
// types to their kind and default clock rate.
var dynamic = map[string]Codec{
	"telephone-event": {"telephone-event", 8000, KindEvent},
	"opus":            {"opus", 48000, KindAudio},
	"amr":             {"AMR", 8000, KindAudio},
	"amr-wb":          {"AMR-WB", 16000, KindAudio},
	"evs":             {"EVS", 16000, KindAudio},
	"ilbc":            {"iLBC", 8000, KindAudio},
	"g7221":           {"G7221", 16000, KindAudio},
	"g726-16":         {"G726-16", 8000, KindAudio},
	"g726-24":         {"G726-24", 8000, KindAudio},
	"g726-32":         {"G726-32", 8000, KindAudio},
	"g726-40":         {"G726-40", 8000, KindAudio},
	"aal2-g726-16":    {"AAL2-G726-16", 8000, KindAudio},
	"aal2-g726-24":    {"AAL2-G726-24", 8000, KindAudio},
	"aal2-g726-32":    {"AAL2-G726-32", 8000, KindAudio},
	"aal2-g726-40":    {"AAL2-G726-40", 8000, KindAudio},
	"g728":            {"G728", 8000, KindAudio},
	"g723":            {"G723", 8000, KindAudio},
	"gsm":             {"GSM", 8000, KindAudio},
	"gsm-efr":         {"GSM-EFR", 8000, KindAudio},
	"gsm-hr-08":       {"GSM-HR-08", 8000, KindAudio},
	"speex":           {"speex", 8000, KindAudio},
	"silk":            {"SILK", 16000, KindAudio},
	"g729":            {"G729", 8000, KindAudio},
	"pcmu":            {"PCMU", 8000, KindAudio},
	"pcma":            {"PCMA", 8000, KindAudio},
	"g722":            {"G722", 8000, KindAudio},
	"cn":              {"CN", 8000, KindComfortNoise},
	"red":             {"red", 8000, KindAudio},
	"t38":             {"t38", 8000, KindFax},
	"h263-1998":       {"H263-1998", 90000, KindVideo},
	"h263-2000":       {"H263-2000", 90000, KindVideo},
	"h264":            {"H264", 90000, KindVideo},
	"h265":            {"H265", 90000, KindVideo},
	"vp8":             {"VP8", 90000, KindVideo},
	"vp9":             {"VP9", 90000, KindVideo},
	"av1":             {"AV1", 90000, KindVideo},
	"mp4v-es":         {"MP4V-ES", 90000, KindVideo},
}

// lookupDynamic is dynamic[strings.ToLower(name)] without the lowered
// copy for an ASCII name of up to 32 bytes (every name in the table).
func lookupDynamic(name string) (Codec, bool) {
	var buf [32]byte
	if len(name) > len(buf) {
		c, ok := dynamic[strings.ToLower(name)]
		return c, ok
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if b >= 0x80 {
			c, ok := dynamic[strings.ToLower(name)]
			return c, ok
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		buf[i] = b
	}
	c, ok := dynamic[string(buf[:len(name)])] // no copy: a map index
	return c, ok
}

// NamedCodec resolves an rtpmap encoding name and clock rate (0 = take the
// name's usual rate). Unknown names keep the given clock and KindUnknown,
// or KindAudio/KindVideo when the SDP media type says so.
func NamedCodec(name string, clock uint32, mediaType string) Codec {
	c, ok := lookupDynamic(name)
	if !ok {
		c = Codec{Name: name}
		switch mediaType {
		case "audio":
			c.Kind = KindAudio
		case "video":
			c.Kind = KindVideo
		}
	}
	if clock != 0 {
		c.ClockRate = clock
	}
	return c
}
