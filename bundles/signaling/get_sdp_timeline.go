package signaling

import (
	"context"
	"strconv"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sdptimeline"
	"github.com/sipnab/sipnab/sdk"
)

// sdpTimelineSchemaVersion is get_sdp_timeline's response schema version.
const sdpTimelineSchemaVersion = 1

type sdpTimelineIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
}

// SDPTimeline is get_sdp_timeline's answer: every SDP offer and answer of
// one call in capture order (core/sdptimeline decides which is which).
//
// Codec names, and media types or protocols outside the registered
// vocabulary, are SDP text the sender wrote: they are fenced, as every media
// tool fences codecs. Addresses and ports are identifiers, verbatim; mode
// and events are sipnab's own reading.
type SDPTimeline struct {
	// CallID is the dialog read, verbatim.
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// Exchanges are the offers and answers in capture order ([] when the
	// call carried no SDP).
	Exchanges []SDPExchangeOut `json:"exchanges" nonnull:"true" desc:"offers and answers in capture order"`
	// Offers and Answers count the exchanges by direction.
	Offers  int `json:"offers" desc:"offers listed"`
	Answers int `json:"answers" desc:"answers listed"`
	// UnreadableSDP counts SDP bodies that did not parse (not listed).
	UnreadableSDP int `json:"unreadable_sdp,omitempty" desc:"SDP bodies that did not parse (not listed)"`
	// OutsideOfferAnswer counts SDP bodies in transactions outside
	// offer/answer, such as an OPTIONS 200 listing capabilities (not listed).
	OutsideOfferAnswer int `json:"outside_offer_answer,omitempty" desc:"SDP bodies outside offer/answer, e.g. an OPTIONS 200 (not listed)"`
	// HopCopies counts bodies seen again on another hop of a proxy in the
	// same transaction (listed once).
	HopCopies int `json:"hop_copies,omitempty" desc:"bodies seen again on another proxy hop (listed once)"`
	// MessagesNotRetained counts the call's messages past the per-dialog
	// retention cap: their SDP, if any, is missing from the history.
	MessagesNotRetained int `json:"messages_not_retained,omitempty" desc:"messages past the retention cap (their SDP is missing)"`
	// ExchangesOmitted counts the later exchanges left out to fit the
	// byte ceiling.
	ExchangesOmitted int `json:"exchanges_omitted,omitempty" desc:"exchanges cut by the byte cap; get_dialog has all"`
	sdk.SourceFlags
	// CaptureIdentity names the capture the answer came from.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

// SDPExchangeOut is one offer or answer.
type SDPExchangeOut struct {
	// MessageIndex is the carrying message's index (get_message takes it).
	MessageIndex int `json:"message_index" desc:"index of the carrying message (get_message)"`
	// Direction is offer or answer (RFC 3264).
	Direction string `json:"direction" enum:"offer|answer" desc:"offer or answer (RFC 3264)"`
	// Transaction carried it: INVITE, re-INVITE, UPDATE, PRACK or ACK.
	Transaction string `json:"transaction" desc:"INVITE, re-INVITE, UPDATE, PRACK or ACK"`
	// Message is the request method, or the status code of a response.
	Message string `json:"message" desc:"request method, or status code of a response"`
	// Codecs are the primary stream's formats in m= line order (fenced).
	Codecs []string `json:"codecs" desc:"primary stream formats in preference order (fenced SDP text)"`
	// MediaAddr and MediaPort are where the sender asks to receive the
	// primary stream (0.0.0.0 is an RFC 2543 hold; port 0 a disabled
	// stream).
	MediaAddr string `json:"media_addr,omitempty" desc:"connection address of the primary stream"`
	MediaPort int    `json:"media_port" desc:"port of the primary stream; 0 = disabled"`
	// Ptime is the declared packetization in ms; absent when undeclared.
	Ptime int `json:"ptime,omitempty" desc:"declared packetization, ms"`
	// Mode is the primary stream's direction.
	Mode string `json:"mode,omitempty" enum:"sendrecv|sendonly|recvonly|inactive" desc:"direction of the primary stream"`
	// Timestamp is the carrying message's capture time.
	Timestamp time.Time `json:"timestamp" desc:"capture time of the carrying message"`
	// Event is the first of Events; absent when nothing changed.
	Event string `json:"event,omitempty" enum:"T38Switch|T38End|Hold|Resume|MediaAnchorChange|CodecChange|T38Fallback" desc:"what changed against the same party's previous SDP (first of events)"`
	// Events lists every change against the same party's previous SDP.
	Events []string `json:"events,omitempty" desc:"every change against the same party's previous SDP"`
	// Outcome is, on an offer, answered, rejected (a final error and no
	// answer: nothing changed) or no_answer.
	Outcome string `json:"outcome,omitempty" enum:"answered|rejected|no_answer" desc:"offers: answered, rejected or no_answer"`
	// RejectedCode is the final response that refused the offer.
	RejectedCode int `json:"rejected_code,omitempty" desc:"final response code that refused the offer"`
	// ProposedEvents are what a refused offer would have changed: they
	// did not happen (RFC 3261 §14.1).
	ProposedEvents []string `json:"proposed_events,omitempty" desc:"changes a refused offer proposed; they did not happen"`
	// T38 is the fate of a T.38 offer.
	T38 string `json:"t38,omitempty" enum:"accepted|refused|offered" desc:"fate of a T.38 offer"`
	// Src and Dst are the carrying message's addresses.
	Src string `json:"src,omitempty" desc:"sender of the carrying message"`
	Dst string `json:"dst,omitempty" desc:"receiver of the carrying message"`
	// Frame points at the carrying frame; absent when unknown.
	Frame string `json:"frame,omitempty" desc:"evidence pointer of the carrying message"`
	// Streams are every m= line; the primary stream is the first audio one
	// with a port, else the first with a port, else the first.
	Streams []SDPStreamOut `json:"streams" desc:"every m= line"`
	// SDPProblems counts what the parser tolerated in the body.
	SDPProblems int `json:"sdp_problems,omitempty" desc:"problems the SDP parser tolerated in the body"`
}

// SDPStreamOut is one m= line.
type SDPStreamOut struct {
	Type   string   `json:"type" desc:"media type (audio, video, image...; fenced when unregistered)"`
	Port   int      `json:"port" desc:"m= port; 0 = disabled or rejected"`
	Proto  string   `json:"proto" desc:"transport protocol (fenced when unregistered)"`
	Addr   string   `json:"addr,omitempty" desc:"effective connection address"`
	Mode   string   `json:"mode" enum:"sendrecv|sendonly|recvonly|inactive" desc:"effective direction"`
	Ptime  int      `json:"ptime,omitempty" desc:"declared packetization, ms"`
	Codecs []string `json:"codecs" desc:"formats in m= line order (fenced SDP text)"`
	T38    bool     `json:"t38,omitempty" desc:"T.38 fax stream"`
}

func getSDPTimelineTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "get_sdp_timeline",
		Title: "SDP offer/answer history of a call",
		Description: "Every SDP offer and answer of a call in order: codecs, media address/port, ptime, direction, changes " +
			"(hold, resume, T.38 switch, codec or media address change), each offer's outcome.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Offers and answers of one call", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
		},
	}, func(ctx context.Context, c *sdk.Call, in sdpTimelineIn) (SDPTimeline, error) {
		out, err := getSDPTimeline(d, c, in.CallID)
		if err != nil {
			return SDPTimeline{}, err
		}
		return fitSDPTimeline(c, out)
	})
}

// callDetail reads one call with its messages, after the source state (so
// flags that say the source was read whole describe what was read).
func callDetail(d *deps, callID string) (dialog.Detail, sdk.SourceState, error) {
	if callID == "" {
		return dialog.Detail{}, sdk.SourceState{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs or find_problems")
	}
	src := answer.SourceState(d.capture.Status())
	det, ok := d.capture.Dialogs().Get(callID)
	if !ok {
		return dialog.Detail{}, src, answer.UnknownCall("call_id", callID)
	}
	return det, src, nil
}

func getSDPTimeline(d *deps, c *sdk.Call, callID string) (SDPTimeline, error) {
	det, src, err := callDetail(d, callID)
	if err != nil {
		return SDPTimeline{}, err
	}
	tl := sdptimeline.For(&det)
	out := SDPTimeline{
		CallID:              det.CallID,
		Exchanges:           make([]SDPExchangeOut, 0, len(tl.Exchanges)),
		UnreadableSDP:       tl.Unreadable,
		OutsideOfferAnswer:  tl.OutsideOfferAnswer,
		HopCopies:           tl.HopCopies,
		MessagesNotRetained: det.Bounds.MessagesNotRetained,
		SourceFlags:         src.Flags(),
		CaptureIdentity:     src.Identity,
		SchemaVersion:       sdpTimelineSchemaVersion,
	}
	for _, e := range tl.Exchanges {
		if e.Direction == sdptimeline.Offer {
			out.Offers++
		} else {
			out.Answers++
		}
		x := SDPExchangeOut{
			MessageIndex: e.MessageIndex, Direction: e.Direction, Transaction: e.Transaction,
			Message: answer.Unfenced(e.Method), Codecs: fenceCodecs(c, e.Codecs), MediaAddr: e.MediaAddr, MediaPort: e.MediaPort,
			Ptime: e.Ptime, Mode: e.Mode, Timestamp: e.Timestamp, Events: e.Events,
			Src: addrText(e.Src.String(), e.Src.IsValid()), Dst: addrText(e.Dst.String(), e.Dst.IsValid()),
			Frame: e.Frame, Streams: make([]SDPStreamOut, 0, len(e.Streams)), SDPProblems: e.Problems,
			Outcome: e.Outcome, RejectedCode: e.RejectedCode, ProposedEvents: e.Proposed, T38: e.T38,
		}
		if e.StatusCode != 0 {
			x.Message = strconv.Itoa(e.StatusCode)
		}
		if len(e.Events) > 0 {
			x.Event = e.Events[0]
		}
		for _, s := range e.Streams {
			x.Streams = append(x.Streams, SDPStreamOut{
				Type: fenceUnless(c, s.Type, mediaTypes), Port: s.Port, Proto: fenceUnless(c, s.Proto, mediaProtos),
				Addr: s.Addr, Mode: s.Mode, Ptime: s.Ptime, Codecs: fenceCodecs(c, s.Codecs), T38: s.T38,
			})
		}
		out.Exchanges = append(out.Exchanges, x)
	}
	return out, nil
}

// fitSDPTimeline keeps the leading exchanges that fit
// --mcp-max-response-bytes on the wire; exchanges_omitted counts the rest
// (offers and answers count the exchanges listed).
func fitSDPTimeline(c *sdk.Call, whole SDPTimeline) (SDPTimeline, error) {
	build := func(k int) SDPTimeline {
		out := whole
		out.Exchanges = whole.Exchanges[:k]
		out.ExchangesOmitted = len(whole.Exchanges) - k
		out.Offers, out.Answers = 0, 0
		for _, x := range out.Exchanges {
			if x.Direction == sdptimeline.Offer {
				out.Offers++
			} else {
				out.Answers++
			}
		}
		return out
	}
	k, err := c.FitPage(len(whole.Exchanges), 0, "exchange", func(k int) any { return build(k) })
	if err != nil {
		return SDPTimeline{}, err
	}
	return build(k), nil
}

// fenceCodecs fences every codec name: rtpmap names are sender-written.
func fenceCodecs(c *sdk.Call, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = c.Fence(n)
	}
	return out
}

// Registered media types and transport protocols (IANA SDP parameters):
// values from this closed vocabulary are passed verbatim, anything else is
// sender-written text and fenced.
var (
	mediaTypes  = set("audio", "video", "image", "application", "text", "message")
	mediaProtos = set("RTP/AVP", "RTP/SAVP", "RTP/AVPF", "RTP/SAVPF", "UDP/TLS/RTP/SAVP", "UDP/TLS/RTP/SAVPF",
		"TCP/RTP/AVP", "TCP/TLS/RTP/SAVP", "udptl", "UDPTL", "TCP", "TCP/TLS", "UDP", "TCP/MSRP", "TCP/TLS/MSRP",
		"UDP/BFCP", "TCP/BFCP", "TCP/TLS/BFCP", "UDP/DTLS/SCTP", "TCP/DTLS/SCTP", "DTLS/SCTP")
)

func set(v ...string) map[string]bool {
	m := make(map[string]bool, len(v))
	for _, x := range v {
		m[x] = true
	}
	return m
}

func fenceUnless(c *sdk.Call, v string, known map[string]bool) string {
	if known[v] {
		return v
	}
	return c.Fence(v)
}

func addrText(s string, ok bool) string {
	if !ok {
		return ""
	}
	return s
}

// sxPlural renders "1 message" or "3 messages".
func sxPlural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
