package media

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/sdk"
)

// exportAudioSchemaVersion is export_audio's response schema version.
const exportAudioSchemaVersion = 1

type exportAudioIn struct {
	CallID   string `json:"call_id" desc:"Call-ID, verbatim"`
	Filename string `json:"filename" desc:"new file name in --mcp-file-root (one path component, not taken)"`
}

// ExportAudio is export_audio's answer: the file written and what went
// into it.
type ExportAudio struct {
	CallID string `json:"call_id" desc:"Call-ID asked about, verbatim"`
	// Path is the file's name inside the file root.
	Path       string          `json:"path" desc:"the file written, inside --mcp-file-root"`
	Bytes      int             `json:"bytes" desc:"bytes written"`
	Format     string          `json:"format" desc:"the WAV layout"`
	DurationMs float64         `json:"duration_ms" desc:"length of the file, ms"`
	Channels   []AudioChannel  `json:"channels" nonnull:"true" desc:"what each channel holds"`
	Skipped    []SkippedStream `json:"skipped_streams" nonnull:"true" desc:"streams with retained audio not in the file, and why (the first 16)"`
	// SkippedTotal counts every stream with retained audio left out.
	SkippedTotal int `json:"streams_skipped" desc:"streams with retained audio not in the file, all of them"`
	// Retention is the run's audio retention account (--retain-audio).
	Retention media.AudioStats `json:"retention" desc:"the run's audio retention: bytes held, frames and streams let go"`
	sdk.SourceFlags
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	SchemaVersion   int                 `json:"schema_version" desc:"response schema version"`
}

func exportAudioTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "export_audio",
		Title: "Write a call's audio to a WAV file",
		Description: "Decodes the call's retained G.711 audio (needs --retain-audio) into a new stereo WAV in --mcp-file-root: " +
			"one direction per channel, frames placed by RTP timestamp, losses as silence.",
		Annotations: sdk.Annotations{Effect: sdk.Writes, Idempotency: sdk.Idempotent, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples: []sdk.Example{
			{Title: "A call's audio as a WAV file", Args: map[string]any{"call_id": sampleCallID, "filename": "call-1966.wav"}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --retain-audio (the flag is named)"},
			{Code: sdk.CodeInvalidParams, When: "file tools disabled (no --mcp-file-root), or a filename that is not one new path component"},
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
			{Code: sdk.CodeInternal, When: "nothing retained for the call: the answer says what was measured (no stream, codecs other than G.711, audio let go at the byte budget)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in exportAudioIn) (ExportAudio, error) {
		return exportAudio(d, in)
	})
}

func exportAudio(d *deps, in exportAudioIn) (ExportAudio, error) {
	store := d.capture.Media()
	if store == nil || !store.Config().RetainAudio {
		return ExportAudio{}, sdk.NotEnabled("", "export_audio needs --retain-audio: call audio is content, so the server keeps none unless the operator starts it with --retain-audio")
	}
	if !d.root.Enabled() {
		_, err := d.root.WriteNew(in.Filename, nil) // the sandbox's own refusal ("file tools are disabled…")
		return ExportAudio{}, err
	}
	if in.CallID == "" {
		return ExportAudio{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs")
	}
	if err := sdk.CheckName(in.Filename); err != nil {
		return ExportAudio{}, err
	}
	src := answer.SourceState(d.capture.Status())
	if _, ok := d.capture.Dialogs().Lookup(in.CallID); !ok && len(store.StreamsFor(in.CallID)) == 0 {
		return ExportAudio{}, answer.UnknownCall("call_id", in.CallID)
	}
	audio := store.AudioFor(in.CallID)
	stats := store.AudioStats()
	if len(audio) == 0 {
		return ExportAudio{}, sdk.Internal("nothing retained for call %s: %s", in.CallID, nothingRetained(store.StreamsFor(in.CallID), stats))
	}
	r := renderWAV(audio)
	n, err := d.root.WriteNew(in.Filename, r.wav)
	if err != nil {
		return ExportAudio{}, err
	}
	out := ExportAudio{
		CallID: in.CallID, Path: in.Filename, Bytes: n, Format: wavFormat, DurationMs: r.durationMs,
		Channels: r.channels, Skipped: r.skipped, SkippedTotal: r.skippedTotal, Retention: stats,
		SourceFlags: src.Flags(), CaptureIdentity: src.Identity, SchemaVersion: exportAudioSchemaVersion,
	}
	if out.Skipped == nil {
		out.Skipped = []SkippedStream{}
	}
	return out, nil
}

// nothingRetained says what was measured of a call whose audio is not
// held: its streams and their codecs, and what the retention let go.
func nothingRetained(streams []media.StreamInfo, st media.AudioStats) string {
	if len(streams) == 0 {
		return "no RTP stream is bound to the call (media_diagnostics says why)"
	}
	codecs := map[string]int{}
	for _, s := range streams {
		name := s.Codec
		if name == "" {
			name = fmt.Sprintf("payload type %d", s.PayloadType)
		}
		codecs[answer.Unfenced(name)]++
	}
	var parts []string
	for c, n := range codecs {
		parts = append(parts, fmt.Sprintf("%d %s", n, c))
	}
	sort.Strings(parts)
	msg := fmt.Sprintf("its %d streams carried %s; export_audio decodes G.711 (PCMU, PCMA) only", len(streams), strings.Join(parts, ", "))
	if st.StreamsEvicted > 0 {
		msg += fmt.Sprintf("; the audio of %d streams was let go to stay within the retention's byte budget, this call's perhaps among them", st.StreamsEvicted)
	}
	return msg
}
