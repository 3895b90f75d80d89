package rtp

import "strings"

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

// static is the RFC 3551 §6 table of static payload types.
var static = [35]Codec{
	0:  {"PCMU", 8000, KindAudio},
	3:  {"GSM", 8000, KindAudio},
	4:  {"G723", 8000, KindAudio},
	5:  {"DVI4", 8000, KindAudio},
	6:  {"DVI4", 16000, KindAudio},
	7:  {"LPC", 8000, KindAudio},
	8:  {"PCMA", 8000, KindAudio},
	9:  {"G722", 8000, KindAudio}, // RFC 3551 §4.5.2: the clock stays 8000 for historical reasons
	10: {"L16", 44100, KindAudio},
	11: {"L16", 44100, KindAudio},
	12: {"QCELP", 8000, KindAudio},
	13: {"CN", 8000, KindComfortNoise},
	14: {"MPA", 90000, KindAudio},
	15: {"G728", 8000, KindAudio},
	16: {"DVI4", 11025, KindAudio},
	17: {"DVI4", 22050, KindAudio},
	18: {"G729", 8000, KindAudio},
	19: {"CN", 8000, KindComfortNoise},
	25: {"CelB", 90000, KindVideo},
	26: {"JPEG", 90000, KindVideo},
	28: {"nv", 90000, KindVideo},
	31: {"H261", 90000, KindVideo},
	32: {"MPV", 90000, KindVideo},
	33: {"MP2T", 90000, KindVideo},
	34: {"H263", 90000, KindVideo},
}

// StaticCodec returns the RFC 3551 codec of a static payload type.
func StaticCodec(pt uint8) (Codec, bool) {
	if int(pt) < len(static) && static[pt].Name != "" {
		return static[pt], true
	}
	return Codec{}, false
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

// NamedCodec resolves an rtpmap encoding name and clock rate (0 = take the
// name's usual rate). Unknown names keep the given clock and KindUnknown,
// or KindAudio/KindVideo when the SDP media type says so.
func NamedCodec(name string, clock uint32, mediaType string) Codec {
	c, ok := dynamic[strings.ToLower(name)]
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
