package media

import "github.com/sipnab/sipnab/core/media"

// The WAV export_audio writes is core/media's (media.RenderWAV: stereo
// 16-bit PCM at 8000 Hz, one direction of the call per channel), which
// export_vcon of the vcon bundle inlines too.

// AudioChannel says what one channel of the WAV holds.
type AudioChannel = media.WAVChannel

// SkippedStream is a stream with retained audio that is not in the file.
type SkippedStream = media.WAVSkipped

// rendered is a WAV and what went into it.
type rendered struct {
	wav          []byte
	durationMs   float64
	channels     []AudioChannel
	skipped      []SkippedStream
	skippedTotal int
}

// renderWAV decodes the retained audio of a call's streams (oldest first,
// at least one) into a stereo WAV.
func renderWAV(ss []media.StreamAudio) rendered {
	w := media.RenderWAV(ss)
	return rendered{wav: w.Bytes, durationMs: w.DurationMs, channels: w.Channels, skipped: w.Skipped, skippedTotal: w.SkippedTotal}
}

// wavFormat names the layout in answers.
var wavFormat = media.WAVFormat
