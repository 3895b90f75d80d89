package media

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/sipnab/sipnab/core/rtp"
)

// The WAV of a call's retained audio (export_audio writes it to a file,
// export_vcon inlines it in a container; both call RenderWAV): RIFF/WAVE, 16-bit signed little-endian PCM
// at 8000 Hz, two channels, one per direction of the call. Channel 1 is
// the call's first stream with retained audio (oldest first packet);
// channel 2 is the first later stream flowing the other way (its source
// the first's destination: the same ip:port, else the same ip), silent
// when there is none. Each frame is decoded (G.711, core/rtp) and placed
// by its RTP timestamp (RFC 3550 §5.1: G.711's clock is its sample rate,
// RFC 3551 §4.5.14), counted from the channel's earliest retained
// timestamp, which sits at the arrival of the channel's first frame after
// the earlier of the two channels' first frames; what no frame covers (a
// lost packet, a gap) stays silence.

const (
	WAVRate     = 8000
	WAVChannels = 2
	// MaxWAVSeconds bounds the timeline: RTP timestamps are sender-written,
	// and a jump must not allocate. Frames past it are counted, not placed.
	MaxWAVSeconds = 600
	maxWAVSamples = MaxWAVSeconds * WAVRate
)

// WAVChannel says what one channel of the WAV holds.
type WAVChannel struct {
	Channel int    `json:"channel" desc:"1 (left) or 2 (right)"`
	SSRC    string `json:"ssrc,omitempty" desc:"the stream in it; absent: a silent channel"`
	Src     string `json:"src,omitempty" desc:"its sender ip:port"`
	Dst     string `json:"dst,omitempty" desc:"its receiver ip:port"`
	// Frames counts the frames placed; FramesEvicted the older frames the
	// retention ring let go before the export (not in the file);
	// FramesOutOfRange those whose timestamp fell outside the 600 s
	// timeline.
	Frames           int    `json:"frames" desc:"frames decoded into the channel"`
	FramesEvicted    uint64 `json:"frames_evicted" desc:"older frames the 1500-frame ring let go (not in the file)"`
	FramesOutOfRange int    `json:"frames_out_of_range,omitempty" desc:"frames whose RTP timestamp fell outside the 600 s timeline"`
	// StartMs is where the channel's first frame sits in the file; SilenceMs
	// the silence inside its span that no frame covered (lost packets).
	StartMs   float64 `json:"start_ms" desc:"where the channel's first frame sits in the file, ms"`
	SilenceMs float64 `json:"silence_ms" desc:"silence inside the channel's span no frame covered (losses), ms"`
	// FirstFrameAt is the arrival of the channel's first frame.
	FirstFrameAt *time.Time `json:"first_frame_at,omitempty" desc:"arrival of the channel's first frame"`
}

// WAVSkipped is a stream with retained audio that is not in the file.
type WAVSkipped struct {
	SSRC   string `json:"ssrc" desc:"RTP SSRC"`
	Src    string `json:"src" desc:"sender ip:port"`
	Dst    string `json:"dst" desc:"receiver ip:port"`
	Reason string `json:"reason" desc:"why it is not in the file"`
}

// WAV is a WAV and what went into it.
type WAV struct {
	Bytes      []byte
	DurationMs float64
	Channels   []WAVChannel
	Skipped    []WAVSkipped // the first MaxWAVSkippedListed
	// SkippedTotal counts every stream left out.
	SkippedTotal int
}

// MaxWAVSkippedListed bounds the streams an answer lists as skipped (a call
// may hold thousands): the rest are counted.
const MaxWAVSkippedListed = 16

// pickChannels chooses the two directions among the streams (oldest
// first): the first, and the first later stream flowing the other way.
func pickChannels(ss []StreamAudio) (a, b int, skipped []int) {
	a, b = 0, -1
	src, dst := ss[0].Src, ss[0].Dst
	for pass := 0; pass < 2 && b < 0; pass++ {
		for i := 1; i < len(ss); i++ {
			if ss[i].Src == dst || (pass == 1 && hostOf(ss[i].Src) == hostOf(dst) && hostOf(ss[i].Dst) == hostOf(src)) {
				b = i
				break
			}
		}
	}
	for i := 1; i < len(ss); i++ {
		if i != b {
			skipped = append(skipped, i)
		}
	}
	return a, b, skipped
}

// hostOf is the address part of "ip:port" (an IPv6 address in brackets
// stays bracketed; only equality matters here).
func hostOf(ap string) string {
	for i := len(ap) - 1; i >= 0; i-- {
		if ap[i] == ':' {
			return ap[:i]
		}
	}
	return ap
}

// RenderWAV decodes the retained audio of a call's streams (oldest first,
// at least one) into a stereo WAV.
func RenderWAV(ss []StreamAudio) WAV {
	a, b, skipped := pickChannels(ss)
	picked := []int{a}
	if b >= 0 {
		picked = append(picked, b)
	}
	t0 := ss[a].Frames[0].Arrival
	for _, i := range picked {
		if at := ss[i].Frames[0].Arrival; at.Before(t0) {
			t0 = at
		}
	}
	var out WAV
	pcm := [WAVChannels][]int16{}
	covered := [WAVChannels][]bool{}
	length := 0
	for ch := range WAVChannels {
		info := WAVChannel{Channel: ch + 1}
		if ch >= len(picked) {
			out.Channels = append(out.Channels, info)
			continue
		}
		s := &ss[picked[ch]]
		first := s.Frames[0]
		at := first.Arrival
		info.SSRC, info.Src, info.Dst, info.FramesEvicted, info.FirstFrameAt = s.SSRC, s.Src, s.Dst, s.FramesEvicted, &at
		base := int64(at.Sub(t0)) * WAVRate / int64(time.Second)
		info.StartMs = float64(base) * 1000 / WAVRate
		// The frames are in arrival order: a packet that arrived late may
		// carry an earlier timestamp than the first. The earliest timestamp
		// within the timeline's length behind the first is the origin.
		origin := first.Timestamp
		for _, f := range s.Frames {
			if d := int64(int32(f.Timestamp - first.Timestamp)); d < 0 && d > -maxWAVSamples && int32(f.Timestamp-origin) < 0 {
				origin = f.Timestamp
			}
		}
		lo, hi := int64(-1), int64(-1)
		for _, f := range s.Frames {
			off := base + int64(int32(f.Timestamp-origin))
			n := int64(len(f.Payload))
			if off < 0 || off+n > maxWAVSamples {
				info.FramesOutOfRange++
				continue
			}
			if int(off+n) > len(pcm[ch]) {
				pcm[ch] = append(pcm[ch], make([]int16, int(off+n)-len(pcm[ch]))...)
				covered[ch] = append(covered[ch], make([]bool, int(off+n)-len(covered[ch]))...)
			}
			decode := rtp.ULawToLinear
			if f.Codec == "PCMA" {
				decode = rtp.ALawToLinear
			}
			for k, code := range f.Payload {
				pcm[ch][off+int64(k)] = decode(code)
				covered[ch][off+int64(k)] = true
			}
			if lo < 0 || off < lo {
				lo = off
			}
			hi = max(hi, off+n)
			info.Frames++
		}
		if lo >= 0 {
			gaps := 0
			for _, c := range covered[ch][lo:hi] {
				if !c {
					gaps++
				}
			}
			info.SilenceMs = float64(gaps) * 1000 / WAVRate
		}
		length = max(length, len(pcm[ch]))
		out.Channels = append(out.Channels, info)
	}
	out.SkippedTotal = len(skipped)
	for _, i := range skipped[:min(len(skipped), MaxWAVSkippedListed)] {
		out.Skipped = append(out.Skipped, WAVSkipped{SSRC: ss[i].SSRC, Src: ss[i].Src, Dst: ss[i].Dst,
			Reason: "the file holds two directions, and this stream is neither the call's first nor the first flowing back to it"})
	}
	out.DurationMs = float64(length) * 1000 / WAVRate
	out.Bytes = encodeWAV(pcm, length)
	return out
}

// encodeWAV writes a canonical 44-byte WAV header and the interleaved
// samples (channels shorter than length are padded with silence).
func encodeWAV(pcm [WAVChannels][]int16, length int) []byte {
	data := length * WAVChannels * 2
	b := make([]byte, 44+data)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+data))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)                    // fmt chunk size
	binary.LittleEndian.PutUint16(b[20:], 1)                     // PCM
	binary.LittleEndian.PutUint16(b[22:], WAVChannels)           // channels
	binary.LittleEndian.PutUint32(b[24:], WAVRate)               // sample rate
	binary.LittleEndian.PutUint32(b[28:], WAVRate*WAVChannels*2) // byte rate
	binary.LittleEndian.PutUint16(b[32:], WAVChannels*2)         // block align
	binary.LittleEndian.PutUint16(b[34:], 16)                    // bits per sample
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(data))
	p := 44
	for i := range length {
		for ch := range WAVChannels {
			var v int16
			if i < len(pcm[ch]) {
				v = pcm[ch][i]
			}
			binary.LittleEndian.PutUint16(b[p:], uint16(v))
			p += 2
		}
	}
	return b
}

// WAVFormat names the layout in answers.
var WAVFormat = fmt.Sprintf("WAV, 16-bit PCM, %d Hz, %d channels (1: the call's first stream, 2: the stream flowing back)", WAVRate, WAVChannels)
