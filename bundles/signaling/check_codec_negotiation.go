package signaling

import (
	"context"
	"fmt"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/sdptimeline"
	"github.com/sipnab/sipnab/sdk"
)

// codecNegotiationSchemaVersion is check_codec_negotiation's response
// schema version.
const codecNegotiationSchemaVersion = 1

type codecNegotiationIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
}

// CodecNegotiation is check_codec_negotiation's answer. The top-level
// offered/answered/common/result describe the call setup: the last offer an
// initial INVITE carried (a retry after a 401/407 supersedes the challenged
// attempt) and the answer that settled it. negotiations lists every offer,
// re-INVITEs and UPDATEs included. Codec names are SDP text and fenced.
type CodecNegotiation struct {
	// CallID is the dialog read, verbatim.
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// Offered, Answered and Common compare the setup offer with its answer
	// (codec names match case-insensitively, with rate and channels).
	Offered  []string `json:"offered" nonnull:"true" desc:"codecs the setup offer listed on enabled streams (fenced)"`
	Answered []string `json:"answered" nonnull:"true" desc:"codecs the answer accepted (fenced)"`
	Common   []string `json:"common" nonnull:"true" desc:"offered codecs the answer accepted, in offer order (fenced)"`
	// Result: ok; no_common_codec (an answer that shares no media codec, or
	// rejects every stream); no_answer (an offer, no SDP answer);
	// rejected (a final error refused the offer, no answer: rejected_code);
	// sdp_present_but_no_codecs (SDP but no codec to compare);
	// no_sdp_in_capture (no offer or answer at all: nothing called for a
	// reply, so do not look for one).
	Result string `json:"result" enum:"ok|no_common_codec|rejected|no_answer|sdp_present_but_no_codecs|no_sdp_in_capture" desc:"outcome of the setup negotiation"`
	// RejectedCode is the final response that refused the setup offer.
	RejectedCode int `json:"rejected_code,omitempty" desc:"final response code that refused the setup offer"`
	// SDPExchangeCount counts the offers and answers of the call.
	SDPExchangeCount int `json:"sdp_exchange_count" desc:"offers and answers in the call (get_sdp_timeline lists them)"`
	// FinalStatusCode is the final response to the call's INVITE; absent
	// when there was none.
	FinalStatusCode int `json:"final_status_code,omitempty" desc:"final response code of the call's INVITE"`
	// OfferMessageIndex and AnswerMessageIndex locate the setup offer and
	// its answer; absent when there is none.
	OfferMessageIndex  *int `json:"offer_message_index,omitempty" desc:"message index of the setup offer"`
	AnswerMessageIndex *int `json:"answer_message_index,omitempty" desc:"message index of the answer to it"`
	// Notes say what the result alone does not (a disabled offer, a
	// capability SDP outside offer/answer, unreadable bodies).
	Notes []string `json:"notes" nonnull:"true" desc:"what the result alone does not say"`
	// Negotiations lists every offer with its answer, setup included.
	Negotiations []NegotiationOut `json:"negotiations" nonnull:"true" desc:"every offer and its answer, in order"`
	sdk.SourceFlags
	// CaptureIdentity names the capture the answer came from.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

// NegotiationOut is one offer and its answer.
type NegotiationOut struct {
	Transaction        string   `json:"transaction" desc:"transaction that carried the offer"`
	OfferMessageIndex  int      `json:"offer_message_index" desc:"message index of the offer"`
	AnswerMessageIndex *int     `json:"answer_message_index,omitempty" desc:"message index of the answer; absent without one"`
	Offered            []string `json:"offered" nonnull:"true" desc:"codecs offered (fenced)"`
	Answered           []string `json:"answered" nonnull:"true" desc:"codecs accepted (fenced)"`
	Common             []string `json:"common" nonnull:"true" desc:"offered codecs accepted (fenced)"`
	Result             string   `json:"result" enum:"ok|no_common_codec|rejected|no_answer|sdp_present_but_no_codecs" desc:"outcome of this offer"`
	RejectedCode       int      `json:"rejected_code,omitempty" desc:"final response code that refused the offer"`
	T38                string   `json:"t38,omitempty" enum:"accepted|refused|offered" desc:"fate of a T.38 offer"`
	Notes              []string `json:"notes,omitempty" desc:"what the result alone does not say"`
}

func checkCodecNegotiationTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "check_codec_negotiation",
		Title: "Offered versus answered codecs of a call",
		Description: "Compares the call's SDP offer with its answer, every re-offer too: offered, answered and common codecs " +
			"and a result (ok, no_common_codec, rejected, no_answer, ...).",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Did the offer and answer agree on a codec", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
		},
	}, func(ctx context.Context, c *sdk.Call, in codecNegotiationIn) (CodecNegotiation, error) {
		return checkCodecNegotiation(d, c, in.CallID)
	})
}

func checkCodecNegotiation(d *deps, c *sdk.Call, callID string) (CodecNegotiation, error) {
	det, src, err := callDetail(d, callID)
	if err != nil {
		return CodecNegotiation{}, err
	}
	tl := sdptimeline.For(&det)
	ck := sdptimeline.Negotiate(&tl)
	out := CodecNegotiation{
		CallID:           det.CallID,
		Offered:          []string{},
		Answered:         []string{},
		Common:           []string{},
		Result:           ck.Result,
		SDPExchangeCount: len(tl.Exchanges),
		FinalStatusCode:  det.FinalStatusCode,
		Notes:            append([]string{}, ck.Notes...),
		Negotiations:     make([]NegotiationOut, 0, len(ck.All)),
		SourceFlags:      src.Flags(),
		CaptureIdentity:  src.Identity,
		SchemaVersion:    codecNegotiationSchemaVersion,
	}
	if n := det.Bounds.MessagesNotRetained; n > 0 {
		out.Notes = append(out.Notes, sxPlural(n, "message")+" past the per-dialog retention cap were not read: later offers or answers may be missing")
	}
	for _, n := range ck.All {
		out.Negotiations = append(out.Negotiations, NegotiationOut{
			Transaction: n.Transaction, OfferMessageIndex: n.OfferMessage, AnswerMessageIndex: n.AnswerMessage,
			Offered: fenceCodecs(c, n.Offered), Answered: fenceCodecs(c, n.Answered), Common: fenceCodecs(c, n.Common),
			Result: n.Result, RejectedCode: n.RejectedCode, T38: n.T38, Notes: n.Notes,
		})
	}
	if s := ck.Setup; s != nil {
		out.Offered, out.Answered, out.Common = fenceCodecs(c, s.Offered), fenceCodecs(c, s.Answered), fenceCodecs(c, s.Common)
		off := s.OfferMessage
		out.OfferMessageIndex, out.AnswerMessageIndex = &off, s.AnswerMessage
		out.RejectedCode = s.RejectedCode
		out.Notes = append(out.Notes, s.Notes...)
	}
	// Later negotiations past the byte ceiling are left out, and a note
	// says how many.
	build := func(k int) CodecNegotiation {
		o := out
		o.Negotiations = out.Negotiations[:k]
		if left := len(out.Negotiations) - k; left > 0 {
			o.Notes = append(out.Notes[:len(out.Notes):len(out.Notes)], fmt.Sprintf("%s left out to fit --mcp-max-response-bytes: get_sdp_timeline lists every offer and answer",
				sxPlural(left, "later negotiation")))
		}
		return o
	}
	k, err := c.FitPage(len(out.Negotiations), 0, "negotiation", func(k int) any { return build(k) })
	if err != nil {
		return CodecNegotiation{}, err
	}
	return build(k), nil
}
