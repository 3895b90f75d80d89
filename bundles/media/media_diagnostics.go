package media

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/mos"
	"github.com/sipnab/sipnab/sdk"
)

// mediaDiagnosticsSchemaVersion is media_diagnostics' response schema
// version.
const mediaDiagnosticsSchemaVersion = 1

type mediaDiagnosticsIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
}

// MediaDiagnostics is media_diagnostics' answer: per stream of the call,
// the facts the stream store measured beside its quality score (rtp_stats
// has the score). A call without media is applicable false with the
// reason, never an empty streams list: "no media reached the capture
// point" is a different claim from "the media was checked and was fine"
// (the design notes, media bundle).
type MediaDiagnostics struct {
	// CallID is the call asked about, verbatim.
	CallID string `json:"call_id" desc:"Call-ID asked about, verbatim"`
	// Applicable is false when the call has no stream; Reason says why.
	Applicable bool   `json:"applicable" desc:"false when the call has no media stream (reason says why)"`
	Reason     string `json:"reason,omitempty" desc:"why there is nothing to diagnose; absent when applicable"`
	// Streams are the call's streams, oldest first; absent when not
	// applicable.
	Streams []StreamDiagnostics `json:"streams,omitempty" desc:"the call's streams in first_seen order; absent when not applicable"`
	// StreamsOmitted counts the streams left out to fit the response byte
	// cap (--mcp-max-response-bytes); truncated is true then.
	StreamsOmitted int   `json:"streams_omitted,omitempty" desc:"streams left out to fit the response byte cap"`
	Truncated      *bool `json:"truncated,omitempty" desc:"true when streams were left out to fit the byte cap"`
	sdk.SourceFlags
	// CaptureIdentity names the capture the answer came from.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

// StreamDiagnostics is one stream's media facts. Each is the stream store's
// own measurement (core/media), except endpoint_reported: what the
// endpoints claimed over RTCP, kept apart and never fed into the MOS.
type StreamDiagnostics struct {
	SSRC string `json:"ssrc,omitempty" desc:"RTP SSRC, 0x and 8 hex digits; absent for T.38 fax"`
	Src  string `json:"src" desc:"sender ip:port"`
	Dst  string `json:"dst" desc:"receiver ip:port"`
	Kind string `json:"kind" desc:"audio, video, fax, comfort_noise, telephone_event or unknown"`
	// Codec is the main payload type's codec (SDP text: fenced).
	Codec       string `json:"codec,omitempty" desc:"codec of the main payload type (fenced: SDP text)"`
	PayloadType int    `json:"payload_type" desc:"main payload type; -1 for T.38"`
	Packets     uint64 `json:"packets" desc:"packets received"`
	// Frame points at the stream's first packet.
	Frame string `json:"frame,omitempty" desc:"evidence pointer of the first packet"`
	QoS   QoS    `json:"qos" desc:"DSCP marking of the IP headers"`
	// Jitter says how the jitter was measured; absent for T.38.
	Jitter *media.Jitter `json:"jitter,omitempty" desc:"how jitter was measured: clock basis and rate; absent for fax"`
	// Delay is the one-way path delay the MOS uses and where it came from.
	Delay *mos.Delay `json:"delay,omitempty" desc:"one-way delay behind the MOS and its source; absent for fax"`
	// Silence counts RFC 3389 comfort noise (payload types 13 and 19);
	// zeros are measured: the store looks at every packet.
	Silence *media.Silence `json:"silence,omitempty" desc:"comfort-noise frames, periods and time; absent for fax"`
	// EndpointReported is the RTCP claims about the stream (CNAME fenced);
	// absent when no RTCP named it.
	EndpointReported *media.EndpointReported `json:"endpoint_reported,omitempty" desc:"RTCP claims, kept apart from the measurement, never in the MOS"`
}

// QoS is the DSCP marking (RFC 2474) seen on a stream's packets.
type QoS struct {
	// MarkingObserved is false when no packet carried an IP header to read
	// (HEP without its TOS chunk): dscp, name and expedited are absent then.
	MarkingObserved bool   `json:"marking_observed" desc:"a DSCP was read from the packets' IP headers"`
	DSCP            *uint8 `json:"dscp,omitempty" desc:"DSCP of the first packet"`
	Name            string `json:"name,omitempty" desc:"DSCP name (EF, AF41, CS0, ...)"`
	// Expedited is DSCP 46, EF (RFC 3246), the class voice is meant to
	// ride.
	Expedited *bool `json:"expedited,omitempty" desc:"DSCP 46 (EF, RFC 3246)"`
	// RemarkedTo is present only when a later packet carried another
	// marking: its presence is the finding.
	RemarkedTo *uint8 `json:"remarked_to,omitempty" desc:"the latest other DSCP seen mid-stream; present only on a change"`
	Note       string `json:"note,omitempty" desc:"why the marking was not observed"`
}

func mediaDiagnosticsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "media_diagnostics",
		Title: "Media facts of a call",
		Description: "Per stream of a call: DSCP marking (remarked_to on a change), jitter clock basis, path delay source, " +
			"comfort-noise silence and RTCP claims kept apart. applicable false with a reason when the call has no media.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Marking, jitter clock, delay and silence of a call's streams", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			{Code: sdk.CodeInvalidParams, When: "an unknown call_id (no dialog and no stream)"},
			{Code: sdk.CodeInvalidParams, When: "--mcp-max-response-bytes too small for one stream (more streams than fit are left out, counted in streams_omitted)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in mediaDiagnosticsIn) (MediaDiagnostics, error) {
		return mediaDiagnostics(d, c, in.CallID)
	})
}

func mediaDiagnostics(d *deps, c *sdk.Call, callID string) (MediaDiagnostics, error) {
	if callID == "" {
		return MediaDiagnostics{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs")
	}
	src := answer.SourceState(d.capture.Status())
	store := d.capture.Media()
	det, known := d.capture.Dialogs().GetWith(callID, dialog.Options{NoMessages: true})
	var streams []media.StreamInfo
	if store != nil {
		streams = store.StreamsFor(callID)
	}
	if !known && len(streams) == 0 {
		return MediaDiagnostics{}, sdk.UnknownID("call_id", "unknown call_id %q: no dialog and no stream with this Call-ID (list_dialogs lists them)", answer.Clip(callID))
	}
	out := MediaDiagnostics{
		CallID:          callID,
		SourceFlags:     src.Flags(),
		CaptureIdentity: src.Identity,
		SchemaVersion:   mediaDiagnosticsSchemaVersion,
	}
	if len(streams) == 0 {
		out.Reason = noMediaReason(d, det, known)
		return out, nil
	}
	out.Applicable = true
	all := make([]StreamDiagnostics, 0, len(streams))
	for i := range streams {
		all = append(all, streamDiagnostics(c, &streams[i]))
	}
	build := func(k int) MediaDiagnostics {
		o := out
		o.Streams = all[:k]
		if k < len(all) {
			t := true
			o.StreamsOmitted, o.Truncated = len(all)-k, &t
		}
		return o
	}
	k, err := c.FitPage(len(all), 0, "stream", func(k int) any { return build(k) })
	if err != nil {
		return MediaDiagnostics{}, err
	}
	return build(k), nil
}

// noMediaReason says why a call has no stream, in the media diagnosis'
// words (core/analysis: no SDP, never answered, a signaling-only capture
// point, or answered with SDP and no RTP).
func noMediaReason(d *deps, det dialog.Detail, known bool) string {
	store := d.capture.Media()
	if store == nil {
		return "this server keeps no stream store: media is not measured"
	}
	facts := analysis.DialogFacts{CallID: det.CallID}
	if known {
		facts = analysis.FactsFrom(det)
	}
	m := analysis.DiagnoseMedia(facts, store, analysis.Options{})
	switch {
	case m.Reason != "":
		return m.Reason
	case m.NoMedia:
		return "SDP was negotiated and the call answered, but no RTP reached the capture point (the no_media finding)"
	}
	return "no RTP stream is bound to this call"
}

// streamDiagnostics projects one stream. Codec names (SDP text) and the
// RTCP CNAME are fenced; addresses and SSRCs are identifiers, verbatim.
func streamDiagnostics(c *sdk.Call, s *media.StreamInfo) StreamDiagnostics {
	out := StreamDiagnostics{
		SSRC: s.SSRC, Src: s.Src, Dst: s.Dst, Kind: s.Kind,
		PayloadType: s.PayloadType, Packets: s.Packets, Frame: s.Frame,
		Jitter: s.Jitter, Delay: s.Delay,
	}
	if s.Codec != "" {
		out.Codec = c.Fence(s.Codec)
	}
	if q := s.QoS; q != nil {
		dscp, ef := q.DSCP, q.Expedited
		out.QoS = QoS{MarkingObserved: true, DSCP: &dscp, Name: q.Name, Expedited: &ef, RemarkedTo: q.RemarkedTo}
	} else {
		out.QoS = QoS{Note: "no packet of the stream carried an IP header sipnab could read the DSCP from (a HEP envelope without its TOS chunk)"}
	}
	if s.Kind != "fax" {
		sil := media.Silence{}
		if s.Silence != nil {
			sil = *s.Silence
		}
		out.Silence = &sil
	}
	if er := s.EndpointReported; er != nil {
		r := *er
		if r.CNAME != "" {
			r.CNAME = c.Fence(r.CNAME)
		}
		out.EndpointReported = &r
	}
	return out
}
