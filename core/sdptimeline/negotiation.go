package sdptimeline

import "fmt"

// Negotiation results (mcp-surface §3.2, check_codec_negotiation).
const (
	// ResultOK: the answer accepted at least one offered media codec.
	ResultOK = "ok"
	// ResultNoCommonCodec: an answer came back, but it shares no media
	// codec with the offer (or rejected every stream with port 0).
	ResultNoCommonCodec = "no_common_codec"
	// ResultNoAnswer: an offer was captured and neither an answer nor a
	// final response refusing it.
	ResultNoAnswer = "no_answer"
	// ResultRejected: the offer's transaction ended with a final error
	// (488 Not Acceptable Here, 606 Not Acceptable, 491, a 401/407
	// challenge...) and no answer; RejectedCode holds the code. The session
	// stays as it was (RFC 3261 §14.1).
	ResultRejected = "rejected"
	// ResultNoCodecs: SDP was captured, but no offer listed a codec to
	// compare (no m= line with a format, or every body was unreadable).
	ResultNoCodecs = "sdp_present_but_no_codecs"
	// ResultNoSDP: no message of the dialog carried an offer or answer
	// (SDP outside offer/answer, such as an OPTIONS 200 listing
	// capabilities, is noted, not compared). Kept apart from
	// no_answer: reporting one for the other sends the reader hunting a
	// reply that nothing ever called for.
	ResultNoSDP = "no_sdp_in_capture"
)

// Negotiation is one offer and the answer that settled it.
type Negotiation struct {
	// OfferMessage is the message index of the offer.
	OfferMessage int `json:"offer_message_index" desc:"message index of the offer"`
	// AnswerMessage is the message index of the answer; absent without one.
	AnswerMessage *int `json:"answer_message_index,omitempty" desc:"message index of the answer; absent without one"`
	// Transaction carried the offer (INVITE, re-INVITE, UPDATE, ...).
	Transaction string `json:"transaction" desc:"transaction that carried the offer"`
	// Offered lists the codecs of the offer's enabled streams (every
	// stream when all are disabled), in order, once each.
	Offered []string `json:"offered" desc:"codecs offered, in order"`
	// Answered lists the codecs of the answer's accepted streams (port
	// not 0); empty without an answer.
	Answered []string `json:"answered" desc:"codecs the answer accepted"`
	// Common lists the offered codecs the answer accepted, in offer order.
	Common []string `json:"common" desc:"offered codecs the answer accepted, in offer order"`
	// Result is ok, no_common_codec, rejected, no_answer or
	// sdp_present_but_no_codecs.
	Result string `json:"result" enum:"ok|no_common_codec|rejected|no_answer|sdp_present_but_no_codecs" desc:"outcome of this offer"`
	// RejectedCode is the final response that refused the offer (result
	// rejected only).
	RejectedCode int `json:"rejected_code,omitempty" desc:"final response code that refused the offer"`
	// T38 is the fate of a T.38 offer: accepted, refused or offered.
	T38 string `json:"t38,omitempty" desc:"fate of a T.38 offer"`
	// Notes say what the result alone does not.
	Notes []string `json:"notes,omitempty" desc:"what the result alone does not say"`
}

// Check is a dialog's codec negotiation.
type Check struct {
	// Setup is the negotiation of the call setup: the last offer carried
	// by an initial INVITE transaction (a retry after a 401/407 challenge
	// supersedes the challenged attempt), else the first offer; nil when
	// no offer was captured.
	Setup *Negotiation
	// Notes apply to the dialog as a whole.
	Notes []string
	// All lists every offer's negotiation in order, Setup first.
	All []Negotiation
	// Result is Setup's result, or no_sdp_in_capture /
	// sdp_present_but_no_codecs when there is no offer.
	Result string
}

// Negotiate pairs every offer of a timeline with the last answer to it (a
// 200 after a 183 settles the offer) and compares their codecs by CodecKey.
// A negotiation is ok only when a common codec carries media:
// telephone-event or comfort noise alone do not make a call.
func Negotiate(tl *Timeline) Check {
	var c Check
	var refusedT38 *Exchange // the last T.38 offer refused
	for i := range tl.Exchanges {
		off := &tl.Exchanges[i]
		if off.Direction != Offer {
			continue
		}
		n := Negotiation{OfferMessage: off.MessageIndex, Transaction: off.Transaction, Common: []string{}}
		offered, answered := newCodecSet(), newCodecSet()
		enabled := 0
		total := 0
		for _, s := range off.Streams {
			total += len(s.Codecs)
			if s.Port != 0 {
				enabled++
				offered.add(s.Codecs...)
			}
		}
		if enabled == 0 && len(off.Streams) > 0 {
			for _, s := range off.Streams {
				offered.add(s.Codecs...)
			}
			n.Notes = append(n.Notes, "every media stream of the offer has port 0: offered but not to be used (RFC 3264 §5.1), so the offer proposes no usable media")
		}
		var ans *Exchange
		for j := i + 1; j < len(tl.Exchanges); j++ {
			if tl.Exchanges[j].Direction == Answer && tl.Exchanges[j].AnswersExchange == i {
				ans = &tl.Exchanges[j]
			}
		}
		accepted := 0
		if ans != nil {
			idx := ans.MessageIndex
			n.AnswerMessage = &idx
			for _, s := range ans.Streams {
				if s.Port != 0 {
					accepted++
					answered.add(s.Codecs...)
				}
			}
			for _, o := range offered.list {
				if answered.seen[CodecKey(o)] {
					n.Common = append(n.Common, o)
				}
			}
		}
		n.Offered, n.Answered = offered.list, answered.list
		n.T38 = off.T38
		switch {
		case off.Outcome == OutcomeRejected:
			n.Result, n.RejectedCode = ResultRejected, off.RejectedCode
			n.Notes = append(n.Notes, fmt.Sprintf("refused with %d and no SDP answer: the session stays as it was (RFC 3261 §14.1)", off.RejectedCode))
		case total == 0:
			n.Result = ResultNoCodecs
		case ans == nil:
			n.Result = ResultNoAnswer
		case !anyMedia(n.Common):
			n.Result = ResultNoCommonCodec
			if accepted == 0 && len(ans.Streams) > 0 {
				n.Notes = append(n.Notes, "the answer rejected every media stream (port 0)")
			} else if len(n.Common) > 0 {
				n.Notes = append(n.Notes, "the only codecs in common carry no media (telephone-event, comfort noise, redundancy or FEC)")
			}
		default:
			n.Result = ResultOK
		}
		if off.T38 == T38Refused && off.Outcome == OutcomeAnswered {
			n.Notes = append(n.Notes, "the answer declined the T.38 image stream (port 0 or absent): no switch to fax")
		}
		for _, e := range off.Events {
			if e == EventT38Fallback && refusedT38 != nil {
				how := "its answer declined the image stream"
				if refusedT38.RejectedCode != 0 {
					how = fmt.Sprintf("refused with %d", refusedT38.RejectedCode)
				}
				n.Notes = append(n.Notes, fmt.Sprintf("fallback to audio: the T.38 offer at message %d was %s", refusedT38.MessageIndex, how))
			}
		}
		if off.T38 == T38Refused {
			refusedT38 = off
		}
		c.All = append(c.All, n)
	}
	switch {
	case len(c.All) > 0:
		c.Setup = &c.All[0]
		for i := range c.All {
			if c.All[i].Transaction == "INVITE" {
				c.Setup = &c.All[i]
			}
		}
		c.Result = c.Setup.Result
	case len(tl.Exchanges) == 0 && tl.Unreadable == 0:
		c.Result = ResultNoSDP
	default:
		c.Result = ResultNoCodecs
	}
	if tl.Unreadable > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d SDP bodies did not parse and are not compared", tl.Unreadable))
	}
	if tl.OutsideOfferAnswer > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d SDP bodies outside offer/answer (e.g. an OPTIONS 200 listing capabilities) are not compared", tl.OutsideOfferAnswer))
	}
	return c
}

func anyMedia(codecs []string) bool {
	for _, c := range codecs {
		if IsMediaCodec(c) {
			return true
		}
	}
	return false
}

// codecSet collects codec names once each (by CodecKey), in order.
type codecSet struct {
	list []string
	seen map[string]bool
}

func newCodecSet() *codecSet { return &codecSet{list: []string{}, seen: map[string]bool{}} }

func (s *codecSet) add(names ...string) {
	for _, n := range names {
		if k := CodecKey(n); !s.seen[k] {
			s.seen[k] = true
			s.list = append(s.list, n)
		}
	}
}
