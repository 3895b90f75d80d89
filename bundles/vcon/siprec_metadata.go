package vcon

import (
	"context"
	"fmt"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/vcon"
	"github.com/sipnab/sipnab/sdk"
)

// siprecSchemaVersion is siprec_metadata's response schema version.
const siprecSchemaVersion = 1

type siprecMetadataIn struct {
	CallID string `json:"call_id" desc:"Call-ID of the recording session (the SRC's INVITE to the SRS), verbatim"`
}

// SIPRECParticipant is one participant of the recorded session.
type SIPRECParticipant struct {
	ParticipantID string `json:"participant_id" desc:"the metadata's participant_id, verbatim"`
	AoR           string `json:"aor" desc:"the participant's address of record (nameID aor), fenced; empty when the metadata gives none"`
	Name          string `json:"name,omitempty" desc:"the participant's name, fenced; absent when the metadata gives none"`
}

// SIPRECStream is one recorded stream.
type SIPRECStream struct {
	StreamID string `json:"stream_id" desc:"the metadata's stream_id, verbatim"`
	Label    string `json:"label" desc:"the stream's label: the a=label of the SDP m= line carrying it (RFC 4574)"`
	// ParticipantID is the participant whose participantstreamassoc
	// sends the stream; empty when none does.
	ParticipantID string `json:"participant_id" desc:"the participant sending the stream (participantstreamassoc send); empty when none"`
	// SDPMedia is the SDP m= line with the same label; absent when the SDP
	// of the same message has none.
	SDPMedia *SIPRECSDPMedia `json:"sdp_media,omitempty" desc:"the m= line labelled so in the same message's SDP; absent when none is"`
}

// SIPRECSDPMedia is the SDP m= line a stream's label names.
type SIPRECSDPMedia struct {
	Index int    `json:"index" desc:"0-based position of the m= line"`
	Media string `json:"media" desc:"media type (audio, video...)"`
	Port  int    `json:"port" desc:"its port"`
}

// SIPREC is the recording metadata (RFC 7866 §6.1, RFC 7865).
type SIPREC struct {
	SessionID    string              `json:"session_id" desc:"the recorded session's session_id (the first session element)"`
	Mode         string              `json:"mode" desc:"datamode: complete, or partial (an update carrying only what changed)"`
	Sessions     int                 `json:"sessions" desc:"session elements in the metadata"`
	Participants []SIPRECParticipant `json:"participants" desc:"participants in document order (the first 256)"`
	Streams      []SIPRECStream      `json:"streams" desc:"recorded streams in document order (the first 256)"`
	// Dropped counts rows past the caps.
	ParticipantsDropped int `json:"participants_dropped,omitempty" desc:"participants past the 256 kept"`
	StreamsDropped      int `json:"streams_dropped,omitempty" desc:"streams past the 256 kept"`
}

// SIPRECMetadata is siprec_metadata's answer.
type SIPRECMetadata struct {
	SchemaVersion int    `json:"schema_version" desc:"response schema version (1)"`
	CallID        string `json:"call_id" desc:"the Call-ID asked about"`
	// Recorded: a message of the Call-ID carries recording metadata that
	// parses. false: Reason says what was looked at.
	Recorded bool   `json:"recorded" desc:"a message of the Call-ID carries SIPREC metadata that parses"`
	Reason   string `json:"reason,omitempty" desc:"with recorded false: what was looked at and why it is not a recording session"`
	// SIPREC is the latest readable metadata; absent with recorded false.
	SIPREC *SIPREC `json:"siprec,omitempty" desc:"the metadata of the latest message carrying a readable one"`
	// Frame is the evidence pointer of that message.
	Frame string `json:"frame,omitempty" desc:"evidence pointer of the message the metadata came from"`
	// MetadataMessages counts the messages carrying a metadata part;
	// Unreadable those whose part did not parse.
	MetadataMessages int `json:"metadata_messages" desc:"messages of the Call-ID carrying an application/rs-metadata+xml part"`
	Unreadable       int `json:"metadata_unreadable,omitempty" desc:"of those, parts that did not parse (hostile or broken XML)"`
	// RequiresSIPREC: Require: siprec or a +sip.src Contact was seen.
	RequiresSIPREC bool `json:"requires_siprec" desc:"a request carried Require: siprec or a Contact with +sip.src (RFC 7866 §6.1.1)"`
	// Complete: every message of the Call-ID was retained and looked at.
	Complete        bool                `json:"complete" desc:"every message of the Call-ID was kept and looked at, and the source was read whole"`
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	sdk.SourceFlags
}

func siprecMetadataTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "siprec_metadata",
		Title: "SIPREC metadata of a call",
		Description: "A recording session's SIPREC metadata (RFC 7866): the application/rs-metadata+xml part beside the SDP — " +
			"session_id, mode, participants (aor, name; fenced) and streams (label, the participant sending it, the SDP m= line " +
			"with that a=label). recorded false with a reason when the Call-ID carries none.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Is this call a recording session?", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
		},
	}, func(ctx context.Context, c *sdk.Call, in siprecMetadataIn) (SIPRECMetadata, error) {
		return siprecMetadata(d, c, in)
	})
}

func siprecMetadata(d *deps, c *sdk.Call, in siprecMetadataIn) (SIPRECMetadata, error) {
	if in.CallID == "" {
		return SIPRECMetadata{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs")
	}
	src := answer.SourceState(d.capture.Status())
	det, ok := d.capture.Dialogs().Get(in.CallID)
	if !ok {
		return SIPRECMetadata{}, answer.UnknownCall("call_id", in.CallID)
	}
	f, found := vcon.FindMetadata(det)
	out := SIPRECMetadata{
		SchemaVersion: siprecSchemaVersion, CallID: in.CallID, Recorded: found,
		MetadataMessages: f.Carrying, Unreadable: f.Unreadable, RequiresSIPREC: f.RequireSIPREC,
		Complete:        src.Exhausted && !src.StoppedEarly && len(det.Messages) == det.MsgCount,
		CaptureIdentity: src.Identity, SourceFlags: src.Flags(),
	}
	if !found {
		switch {
		case f.Carrying > 0:
			// The parser's error quotes sender text: hygiene, no markers.
			out.Reason = fmt.Sprintf("%d message(s) carry an %s part and none parses; the latest error: %s",
				f.Carrying, vcon.MetadataMediaType, answer.Unfenced(f.LastError))
		case f.RequireSIPREC:
			out.Reason = fmt.Sprintf("a request asks for SIPREC (Require: siprec or +sip.src) but none of the %d retained messages carries an %s part",
				len(det.Messages), vcon.MetadataMediaType)
		default:
			out.Reason = fmt.Sprintf("none of the %d retained messages carries an %s part (RFC 7866 §6.1): not a recording session as seen here",
				len(det.Messages), vcon.MetadataMediaType)
		}
		if !out.Complete {
			out.Reason += "; messages of the Call-ID were not retained or the source was not read whole, so a later one may carry it"
		}
		return out, nil
	}
	md := f.Metadata
	rec := &SIPREC{SessionID: md.SessionID, Mode: answer.Unfenced(md.Mode), Sessions: md.Sessions,
		Participants: make([]SIPRECParticipant, 0, len(md.Participants)), Streams: make([]SIPRECStream, 0, len(md.Streams)),
		ParticipantsDropped: md.ParticipantsDropped, StreamsDropped: md.StreamsDropped}
	for _, p := range md.Participants {
		sp := SIPRECParticipant{ParticipantID: p.ID}
		if p.AoR != "" {
			sp.AoR = c.Fence(p.AoR)
		}
		if p.Name != "" {
			sp.Name = c.Fence(p.Name)
		}
		rec.Participants = append(rec.Participants, sp)
	}
	for _, s := range md.Streams {
		ss := SIPRECStream{StreamID: s.ID, Label: answer.Unfenced(s.Label), ParticipantID: s.ParticipantID}
		if l, ok := f.Labels[s.Label]; ok && s.Label != "" {
			ss.SDPMedia = &SIPRECSDPMedia{Index: l.Index, Media: answer.Unfenced(l.Media), Port: l.Port}
		}
		rec.Streams = append(rec.Streams, ss)
	}
	out.SIPREC = rec
	out.Frame = f.Frame
	return out, nil
}
