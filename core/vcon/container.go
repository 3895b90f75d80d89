// Package vcon builds draft-ietf-vcon-vcon-core observer containers from a
// dialog the capture holds, and checks containers against the working
// group's vendored JSON Schema (validate.go, schema/SOURCE.md). It knows
// nothing of MCP: bundles/vcon serves it.
//
// The container is an observer's record (engine.md §16 "vCon export"):
// sipnab saw the signaling on the wire and vouches for no identity, so the
// parties come from From and To only (validation "none", no name, no url),
// sipnab's own observer party is last, and the container is never signed
// (JWS) or encrypted (JWE) and carries no consent attachment.
package vcon

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/media"
)

// Syntax is the vCon syntax version the containers declare (the schema's
// const for "vcon").
const Syntax = "0.4.0"

// Attachment purposes and the analysis schema token.
const (
	PurposeTrace        = "sip-message-trace"
	PurposeCompleteness = "sipnab-capture-completeness"
	// TraceSchema names the trace body's shape (one object per message).
	TraceSchema = "sipnab-sip-message-trace-1"
	Vendor      = "sipnab"
)

// Media states of a container (Completeness.Media).
const (
	MediaCarried       = "carried"
	MediaOverBudget    = "refused-over-budget"
	MediaNoneDecodable = "none-decodable"
	MediaNotConsidered = "not-considered"
)

// Omission is one kind of thing the container lacks, counted.
type Omission struct {
	Kind  string `json:"kind" desc:"what is missing: sip_messages_not_retained, rtp_streams_not_carried, audio_frames_not_retained"`
	Count uint64 `json:"count" desc:"how many"`
	Unit  string `json:"unit" desc:"what count counts: messages, streams, frames"`
}

// CaptureAccount is the capture-wide account of what the observer read and
// shed, as the engine's status gives it when the container is built.
type CaptureAccount struct {
	FramesRead        uint64 `json:"frames_read" desc:"frames read from every source"`
	FramesUndecodable uint64 `json:"frames_undecodable" desc:"frames that could not be decoded"`
	// SIPPortGated is absent without a port gate (nothing gated, nothing
	// measured).
	SIPPortGated    *uint64 `json:"sip_port_gated,omitempty" desc:"SIP messages set aside by the port gate (absent: no gate)"`
	DialogsEvicted  uint64  `json:"dialogs_evicted" desc:"dialogs evicted at the dialog cap"`
	DialogsRefused  uint64  `json:"dialogs_refused" desc:"new Call-IDs refused at the dialog cap"`
	SourceExhausted bool    `json:"source_exhausted" desc:"every source was read to its end"`
	// BlindSpots names every reason the observer may have missed something:
	// the engine's incomplete_reasons, the dialog's own caps, media not
	// carried. Always present; empty only when none applies.
	BlindSpots []string `json:"blind_spots" desc:"what the observer may have missed (engine incomplete_reasons, the dialog's caps, media not carried); always present"`
}

// Completeness is the container's caveat: one value written into the
// analysis object, the sipnab-capture-completeness attachment and the
// tool's answer, so the three cannot contradict each other.
type Completeness struct {
	Note string `json:"note" desc:"one sentence: what the container holds and lacks"`
	// Media: carried | refused-over-budget | none-decodable | not-considered.
	Media     string `json:"media" enum:"carried|refused-over-budget|none-decodable|not-considered" desc:"whether the call's audio is in the container"`
	MediaNote string `json:"media_note" desc:"why media is as it is"`
	// Complete: the trace holds every SIP message of the Call-ID and the
	// capture was read whole with nothing shed (engine status complete).
	// It speaks of the signaling; media has its own field.
	Complete  bool           `json:"complete" desc:"every SIP message of the Call-ID is in the trace and the capture was read whole with nothing shed (signaling; media is the media field)"`
	Omissions []Omission     `json:"omissions" desc:"what the container lacks, counted; empty: nothing"`
	Capture   CaptureAccount `json:"capture" desc:"the capture-wide account when the container was built"`
}

// Party is a vCon Party Object.
type Party struct {
	Tel        string `json:"tel,omitempty"`
	SIP        string `json:"sip,omitempty"`
	Mailto     string `json:"mailto,omitempty"`
	Name       string `json:"name,omitempty"`
	Type       string `json:"type,omitempty"`
	Validation string `json:"validation"`
}

// Dialog is a vCon Dialog Object.
type Dialog struct {
	Type        string   `json:"type"`
	Start       string   `json:"start"`
	Duration    *float64 `json:"duration,omitempty"`
	Parties     []int    `json:"parties"`
	Disposition string   `json:"disposition,omitempty"`
	Mediatype   string   `json:"mediatype,omitempty"`
	Filename    string   `json:"filename,omitempty"`
	Encoding    string   `json:"encoding,omitempty"`
	Body        string   `json:"body,omitempty"`
	ContentHash string   `json:"content_hash,omitempty"`
	Application string   `json:"application,omitempty"`
}

// Attachment is a vCon Attachment Object with a JSON body.
type Attachment struct {
	Purpose   string `json:"purpose"`
	Start     string `json:"start"`
	Party     int    `json:"party"`
	Dialog    int    `json:"dialog"`
	Mediatype string `json:"mediatype"`
	Encoding  string `json:"encoding"`
	Body      any    `json:"body"`
}

// Analysis is a vCon Analysis Object with a JSON body.
type Analysis struct {
	Type       string `json:"type"`
	Dialog     int    `json:"dialog"`
	Attachment int    `json:"attachment"`
	Vendor     string `json:"vendor"`
	Product    string `json:"product"`
	Schema     string `json:"schema"`
	Mediatype  string `json:"mediatype"`
	Encoding   string `json:"encoding"`
	Body       any    `json:"body"`
}

// Container is the observer container sipnab writes.
type Container struct {
	Vcon        string       `json:"vcon"`
	UUID        string       `json:"uuid"`
	CreatedAt   string       `json:"created_at"`
	Parties     []Party      `json:"parties"`
	Dialog      []Dialog     `json:"dialog"`
	Analysis    []Analysis   `json:"analysis"`
	Attachments []Attachment `json:"attachments"`
}

// TraceMessage is one SIP message of the sip-message-trace attachment.
// The message's bytes are always Base64URL (RFC 4648 §5, unpadded): every
// byte kept, and no sender-written text in the clear. A container is
// pipeline data, but export_vcon hands it to a model inline, and the
// fencing contract (docs/mcp-protocol.md; a body is fenced or not shown
// as text) would otherwise change the record and its digest. Text is read
// by analyze_vcon from containers other writers made.
type TraceMessage struct {
	Index          int    `json:"index"`
	Time           string `json:"time"`
	Src            string `json:"src"`
	Dst            string `json:"dst"`
	Transport      string `json:"transport"`
	Frame          string `json:"frame,omitempty"`
	Retransmission bool   `json:"retransmission,omitempty"`
	Text           string `json:"text,omitempty"`
	Base64URL      string `json:"base64url,omitempty"`
}

// Trace is the sip-message-trace attachment's body.
type Trace struct {
	Schema              string         `json:"schema"`
	CallID              string         `json:"call_id"`
	MessagesTotal       int            `json:"messages_total"`
	MessagesNotRetained int            `json:"messages_not_retained"`
	Messages            []TraceMessage `json:"messages"`
}

// Input is what one container is built from.
type Input struct {
	// Detail is the dialog with its messages (dialog.Store.Get).
	Detail dialog.Detail
	// Status is the engine's status when the container is built.
	Status engine.Status
	// Media says whether the media store retains audio (--retain-audio)
	// and how many RTP streams the call has; MediaStore false: no media
	// store at all.
	MediaStore    bool
	RetainAudio   bool
	StreamsOfCall int
	// MediaOmitted: the caller asked for no audio (export_vcon media
	// "omit").
	MediaOmitted bool
	// Audio is the call's retained audio (media.Store.AudioFor), oldest
	// stream first; MaxInlineMedia the largest WAV inlined, bytes before
	// base64url (Options.MaxInlineMedia).
	Audio          []media.StreamAudio
	MaxInlineMedia int64
	// ResponseBudget, when set, is the answer's byte ceiling
	// (--mcp-max-response-bytes): a WAV whose base64url text and its
	// container would not fit is refused like one over MaxInlineMedia.
	ResponseBudget int64
}

// containerReserve is what a container around its inline WAV is assumed
// to need under ResponseBudget (the trace of a call, its caveat twice,
// the answer's envelope); the SIP trace is added to it.
const containerReserve = 8 << 10

// DefaultMaxInlineMedia is --vcon-max-inline-media's default: 5 MiB of WAV
// (about 5.5 minutes of the stereo 8 kHz 16-bit file RenderWAV writes).
const DefaultMaxInlineMedia = 5 << 20

// Options are the host's vCon settings, handed to the vcon bundle as a
// service.
type Options struct {
	// MaxInlineMedia is --vcon-max-inline-media: the largest WAV a
	// container inlines, in bytes before base64url; a larger one is
	// refused (media refused-over-budget), never truncated. 0 inlines
	// none.
	MaxInlineMedia int64
}

// Built is one container with its canonical bytes and caveat.
type Built struct {
	Container    Container
	Completeness Completeness
	// Canonical is the container as compact JSON with every object's
	// members sorted by name, written by Go's encoding/json (its escaping:
	// <, >, & and U+2028/U+2029 as \u escapes, invalid UTF-8 never occurs
	// since trace text is valid UTF-8 or base64url). Digest is its
	// SHA-256, hex.
	Canonical []byte
	Digest    string
}

// UUID returns the container's UUIDv8 (RFC 9562 §5.8): the first 16 bytes
// of SHA-256 over the capture's node, the capture anchor and the Call-ID,
// NUL-separated, with the version (8) and variant (10) bits set. The
// anchor is the evidence pointer of the dialog's opening frame
// (<source>#<ordinal>@<frame digest>, docs/cli-output.md), which names this
// capture's copy of the dialog: the same dialog of the same capture file
// gets the same id across loads and restarts (a pipeline deduplicates by
// it), another capture of the same Call-ID another. Without a pointer (a
// source that gives none) the anchor is the capture instance, stable for
// the loaded capture only.
func UUID(node, instance, callID string) string {
	h := sha256.Sum256([]byte(node + "\x00" + instance + "\x00" + callID))
	b := h[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	x := hex.EncodeToString(b)
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// Anchor is the capture anchor of a dialog's UUID (see UUID): its opening
// frame's evidence pointer, else the capture instance.
func Anchor(det dialog.Detail, st engine.Status) string {
	if det.Frame != "" {
		return det.Frame
	}
	return "instance:" + st.Identity.Instance
}

func rfc3339(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00") }

// Build makes the observer container of one dialog.
func Build(in Input) (Built, error) {
	det := in.Detail
	st := in.Status
	from, to := endpoints(det)
	parties := []Party{party(from), party(to), {Name: Vendor, Type: "observer", Validation: "none"}}
	const observer = 2

	dlg := dialogObject(det)
	wav := inlineMedia(&in, &dlg, UUID(st.Identity.Node, Anchor(det, st), det.CallID))
	comp := completeness(in, wav)
	trace := traceOf(det)
	start := rfc3339(det.CreatedAt)
	c := Container{
		Vcon:      Syntax,
		UUID:      UUID(st.Identity.Node, Anchor(det, st), det.CallID),
		CreatedAt: rfc3339(det.UpdatedAt),
		Parties:   parties,
		Dialog:    []Dialog{dlg},
		Attachments: []Attachment{
			{Purpose: PurposeTrace, Start: start, Party: observer, Dialog: 0, Mediatype: "application/json", Encoding: "json", Body: trace},
			{Purpose: PurposeCompleteness, Start: start, Party: observer, Dialog: 0, Mediatype: "application/json", Encoding: "json", Body: comp},
		},
		Analysis: []Analysis{{Type: "report", Dialog: 0, Attachment: 0, Vendor: Vendor, Product: "sipnab",
			Schema: PurposeCompleteness, Mediatype: "application/json", Encoding: "json", Body: comp}},
	}
	canon, err := Canonical(c)
	if err != nil {
		return Built{}, err
	}
	sum := sha256.Sum256(canon)
	return Built{Container: c, Completeness: comp, Canonical: canon, Digest: hex.EncodeToString(sum[:])}, nil
}

// Canonical returns v as compact JSON with object members sorted by name
// (encoding/json writes a map's keys sorted), numbers as first written.
func Canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	doc, err := decode(b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// Decoded returns canonical bytes as a generic JSON object (numbers as
// json.Number, so they re-encode verbatim).
func Decoded(canon []byte) (map[string]any, error) {
	v, err := decode(canon)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("container is not a JSON object")
	}
	return m, nil
}

// endpoints are the From and To of the dialog's first request (the
// opening request of the Call-ID), else of its first message.
func endpoints(det dialog.Detail) (from, to dialogAddr) {
	for i := range det.Messages {
		m := det.Messages[i].Msg
		if m != nil && m.IsRequest {
			return dialogAddr{m.From.Scheme, m.From.URI, m.From.User}, dialogAddr{m.To.Scheme, m.To.URI, m.To.User}
		}
	}
	if len(det.Messages) > 0 && det.Messages[0].Msg != nil {
		m := det.Messages[0].Msg
		return dialogAddr{m.From.Scheme, m.From.URI, m.From.User}, dialogAddr{m.To.Scheme, m.To.URI, m.To.User}
	}
	return dialogAddr{}, dialogAddr{}
}

type dialogAddr struct{ scheme, uri, user string }

// party is a Party Object of a From or To address: a sip/sips URI as
// "sip", a tel URI's number as "tel" (RFC 3966), a mailto as "mailto";
// another scheme gives no address. Never a name (the display name is the
// sender's claim) and validation "none" (the observer validated nothing).
func party(a dialogAddr) Party {
	p := Party{Validation: "none"}
	switch strings.ToLower(a.scheme) {
	case "sip", "sips":
		p.SIP = a.uri
	case "tel":
		p.Tel = a.user
		if p.Tel == "" {
			p.Tel = strings.TrimPrefix(a.uri, "tel:")
		}
	case "mailto":
		p.Mailto = a.uri
	}
	return p
}

// dialogObject is the container's one Dialog Object. An answered call
// (final 2xx to its INVITE) is a "recording" dialog: the conversation
// happened, its media is carried or not as completeness says. Every other
// dialog is "incomplete" with a disposition (core-04 §4.3's enum): no
// answer (no final response, 408, 480, 487 or a CANCEL), busy (486, 600),
// congestion (503), failed (any other final, and any dialog that is no
// call: REGISTER, OPTIONS..., which set up no conversation).
func dialogObject(det dialog.Detail) Dialog {
	d := Dialog{Start: rfc3339(det.CreatedAt), Parties: []int{0, 1}, Application: "sip"}
	dur := det.DurationSec
	d.Duration = &dur
	code := det.FinalStatusCode
	if det.Method == "INVITE" && code >= 200 && code < 300 {
		d.Type = "recording"
		return d
	}
	d.Type = "incomplete"
	switch {
	case det.Method != "INVITE":
		d.Disposition = "failed"
	case code == 0 || code == 408 || code == 480 || code == 487 || det.State == "Cancelled":
		d.Disposition = "no-answer"
	case code == 486 || code == 600:
		d.Disposition = "busy"
	case code == 503:
		d.Disposition = "congestion"
	default:
		d.Disposition = "failed"
	}
	return d
}

func traceOf(det dialog.Detail) Trace {
	t := Trace{Schema: TraceSchema, CallID: det.CallID, MessagesTotal: det.MsgCount,
		MessagesNotRetained: det.Bounds.MessagesNotRetained, Messages: make([]TraceMessage, 0, len(det.Messages))}
	for i := range det.Messages {
		m := &det.Messages[i]
		tm := TraceMessage{Index: m.Index, Time: rfc3339(m.TS), Src: m.Src.String(), Dst: m.Dst.String(),
			Transport: m.Transport.String(), Retransmission: m.Retransmission}
		if !m.Frame.IsZero() {
			tm.Frame = m.Frame.String()
		}
		var raw []byte
		if m.Msg != nil {
			raw = m.Msg.Raw
		}
		tm.Base64URL = base64.RawURLEncoding.EncodeToString(raw)
		t.Messages = append(t.Messages, tm)
	}
	return t
}

// inlined is what inlineMedia decided.
type inlined struct {
	state, note string
	// carried counts the streams in the WAV (its channels with a stream);
	// evicted the frames of theirs the retention ring let go (silence in
	// the WAV).
	carried int
	evicted uint64
}

// inlineMedia puts the call's retained audio into the recording dialog as
// a base64url WAV (RFC 4648 §5, unpadded) with its SHA-512 content_hash
// ("sha512-" + base64url digest, the schema's algorithm-hash form), when
// the caller did not omit it, the server retains audio, the dialog is an
// answered call and the WAV fits MaxInlineMedia. Over the budget it is
// refused whole, never truncated.
func inlineMedia(in *Input, dlg *Dialog, id string) inlined {
	switch {
	case in.MediaOmitted:
		return inlined{state: MediaNotConsidered, note: "media \"omit\" was asked: the container carries no audio by request"}
	case !in.MediaStore:
		return inlined{state: MediaNotConsidered, note: "no media store: the run reads no RTP, so the container carries no audio"}
	case !in.RetainAudio:
		return inlined{state: MediaNotConsidered, note: "the server keeps no call audio without --retain-audio, so the container carries none; a container without audio is not a conversation without audio"}
	case dlg.Type != "recording":
		return inlined{state: MediaNotConsidered, note: "the dialog is not an answered call (" + dlg.Type + "): no conversation to record, so no audio is inlined"}
	case len(in.Audio) == 0:
		if in.StreamsOfCall == 0 {
			return inlined{state: MediaNoneDecodable, note: "audio is retained (--retain-audio) but the call has no RTP stream in the capture"}
		}
		return inlined{state: MediaNoneDecodable, note: fmt.Sprintf("audio is retained (--retain-audio) but none of the call's %d RTP streams left G.711 audio in the retention ring (another codec, or let go at the audio byte budget)", in.StreamsOfCall)}
	}
	w := media.RenderWAV(in.Audio)
	if int64(len(w.Bytes)) > in.MaxInlineMedia {
		return inlined{state: MediaOverBudget, note: fmt.Sprintf("the call's WAV is %d bytes, over --vcon-max-inline-media %d: refused whole, never truncated (export_audio writes it to a file)", len(w.Bytes), in.MaxInlineMedia)}
	}
	if in.ResponseBudget > 0 {
		text := int64(base64.RawURLEncoding.EncodedLen(len(w.Bytes)))
		trace := int64(containerReserve)
		for i := range in.Detail.Messages {
			if m := in.Detail.Messages[i].Msg; m != nil {
				trace += int64(len(m.Raw))*6/5 + 256 // JSON escaping, the row's fields
			}
		}
		if text+trace > in.ResponseBudget {
			return inlined{state: MediaOverBudget, note: fmt.Sprintf("the call's WAV is %d bytes (%d as base64url): with its container it would not fit --mcp-max-response-bytes %d, so it is refused whole, never truncated (export_audio writes it to a file)", len(w.Bytes), text, in.ResponseBudget)}
		}
	}
	sum := sha512.Sum512(w.Bytes)
	dlg.Mediatype = "audio/x-wav"
	dlg.Filename = id + ".wav"
	dlg.Encoding = "base64url"
	dlg.Body = base64.RawURLEncoding.EncodeToString(w.Bytes)
	dlg.ContentHash = "sha512-" + base64.RawURLEncoding.EncodeToString(sum[:])
	carried, evicted := 0, uint64(0)
	for _, ch := range w.Channels {
		if ch.SSRC != "" {
			carried++
			evicted += ch.FramesEvicted
		}
	}
	return inlined{state: MediaCarried, carried: carried, evicted: evicted, note: fmt.Sprintf("%d bytes of WAV (%s), %.0f ms, %d stream(s) of the call's retained audio; frames the retention ring let go are silence in it (export_audio's channel account)", len(w.Bytes), media.WAVFormat, w.DurationMs, carried)}
}

// completeness builds the one caveat value.
func completeness(in Input, wav inlined) Completeness {
	st := in.Status
	det := in.Detail
	acc := CaptureAccount{
		FramesRead: st.FramesRead, FramesUndecodable: st.UndecodableFrames,
		DialogsEvicted: st.Dialogs.Evicted, DialogsRefused: st.Dialogs.Refused,
		SourceExhausted: st.SourceExhausted, BlindSpots: []string{},
	}
	if st.NotAnalyzed != nil {
		n := st.NotAnalyzed.SIPMessages
		acc.SIPPortGated = &n
	}
	acc.BlindSpots = append(acc.BlindSpots, st.IncompleteReasons...)
	omissions := []Omission{}
	if n := det.Bounds.MessagesNotRetained; n > 0 {
		omissions = append(omissions, Omission{Kind: "sip_messages_not_retained", Count: uint64(n), Unit: "messages"})
		acc.BlindSpots = appendOnce(acc.BlindSpots, "dialog_messages_not_retained")
	}
	if det.Bounds.LegsDropped > 0 {
		acc.BlindSpots = appendOnce(acc.BlindSpots, "dialog_legs_dropped")
	}
	c := Completeness{Media: wav.state, MediaNote: wav.note}
	if n := in.StreamsOfCall - wav.carried; n > 0 {
		omissions = append(omissions, Omission{Kind: "rtp_streams_not_carried", Count: uint64(n), Unit: "streams"})
	}
	if wav.evicted > 0 {
		omissions = append(omissions, Omission{Kind: "audio_frames_not_retained", Count: wav.evicted, Unit: "frames"})
		acc.BlindSpots = appendOnce(acc.BlindSpots, "audio_frames_not_retained")
	}
	if wav.state != MediaCarried {
		acc.BlindSpots = appendOnce(acc.BlindSpots, "media_not_carried")
	}
	c.Omissions = omissions
	c.Capture = acc
	c.Complete = st.Complete && det.Bounds == (dialog.Bounds{}) && len(det.Messages) == det.MsgCount
	switch {
	case c.Complete:
		c.Note = fmt.Sprintf("observer record of %d SIP messages, all of the Call-ID's, from a capture read whole with nothing shed; media %s", len(det.Messages), c.Media)
	default:
		c.Note = fmt.Sprintf("observer record of %d of the Call-ID's %d SIP messages; signaling may be incomplete (blind_spots say why); media %s", len(det.Messages), det.MsgCount, c.Media)
	}
	return c
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
