// Package callreport is the per-call report generator: one model of one
// call (Build) and its renderings, shared by every surface that shows a
// single call: get_dialog_report (JSON, Markdown, text), render_ladder and
// the --call-report command line, which prints CallReport.
//
// The model reads the capture's status first and its stores after, so a
// document whose run says complete describes stores read after the load
// ended. A rendered document ends with an INCOMPLETE RUN block whenever the
// source was not read whole or the call's messages were not all kept; in
// CallReport it follows the ladder, so no line of the drawing moves.
//
// Rendered documents interleave sipnab's own analysis with text the sender
// wrote (display names, reason phrases, cause text, codec names). They are
// not fenced (fencing the whole document would tell a reader to distrust the
// analysis too); the text is printed without control or bidi characters,
// with the fence code points rewritten to ASCII brackets, cut to a bounded
// length and, in Markdown, escaped so it cannot format the document.
// Call-IDs are identifiers, not sender text to neutralize: a document shows
// them whole, with invisible characters (controls, bidi and other format
// characters, the fence code points) written as visible \uXXXX escapes
// rather than dropped, so the shown text, put in a JSON string, is the
// Call-ID again (textsafe.ID; in Markdown inside a code span).
// Surfaces that hand a document to an agent add the provenance note.
package callreport

import (
	"net/netip"
	"slices"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/sdptimeline"
)

// Format selects a rendering.
type Format int

const (
	// Text is plain text for a terminal or a ticket.
	Text Format = iota
	// Markdown is CommonMark.
	Markdown
)

// DefaultMaxLegs bounds the legs a ladder draws.
const DefaultMaxLegs = 8

// MaxGuesses bounds the timing guesses a report names (on a busy proxy
// every call has many).
const MaxGuesses = 5

// Options tune Build.
type Options struct {
	// Correlator finds the call's other legs (identifier matches only) for
	// the ladder; nil builds one over the capture's dialog store with the
	// default settings. Give the same one to every surface that must print
	// the same bytes.
	Correlator *correlate.Correlator
	// MaxLegs bounds the legs drawn, the call itself included (8).
	MaxLegs int
	// Diagnosis tunes the diagnosis.
	Diagnosis analysis.Options
}

// Run says how much of the source the model saw.
type Run struct {
	// SourceExhausted: the source was read to its end.
	SourceExhausted bool
	// SourceStoppedEarly: reading stopped before the end (a truncated file,
	// a fault).
	SourceStoppedEarly bool
	// StoppedOnRequest: reading was stopped on request (a frame limit).
	StoppedOnRequest bool
	// Errors say why a source stopped early.
	Errors []string
}

// Whole reports whether the source was read to its end without stopping
// early.
func (r Run) Whole() bool { return r.SourceExhausted && !r.SourceStoppedEarly && !r.StoppedOnRequest }

// Leg is one dialog drawn in a call's ladder.
type Leg struct {
	// Label is the leg's letter in the ladder (A for the call itself).
	Label string
	// Detail is the dialog, messages included.
	Detail dialog.Detail
	// Strategy and Score say how the leg was tied to the call (empty for
	// the call itself).
	Strategy correlate.Strategy
	Score    int
	// Parent is the Call-ID the leg was found from.
	Parent string
	// Streams are the leg's RTP streams.
	Streams []media.StreamInfo
	// Endpoints are the media endpoints its SDP announced.
	Endpoints []media.Endpoint
}

// Guess is a leg tied to the call by timing alone: named, never drawn.
type Guess struct {
	CallID string
	GapMs  int64
}

// Call is everything one report says about one call.
type Call struct {
	// Run is the read the stores came from.
	Run Run
	// Detail is the call's dialog, messages included.
	Detail dialog.Detail
	// Diagnosis is the call's verdict.
	Diagnosis analysis.DialogDiagnosis
	// Streams are the call's RTP streams.
	Streams []media.StreamInfo
	// SDP is the offer/answer timeline (core/sdptimeline, the history
	// get_sdp_timeline lists).
	SDP []sdptimeline.Exchange
	// Transactions are the call's transactions in order of first message.
	Transactions []Transaction
	// Legs are the dialogs the ladder draws: the call first, then its legs
	// found by identifier matches (breadth first).
	Legs []Leg
	// LegsTruncated: more legs were found than MaxLegs.
	LegsTruncated bool
	// Guesses are legs tied to the call only by timing: named, not drawn
	// (the nearest MaxGuesses; GuessesMore counts the rest).
	Guesses     []Guess
	GuessesMore int
	// Quote, when set, marks each sender-written value the report sections
	// show whole (the From and To name-addrs, the final reason phrase, the
	// final failure's reason, the termination cause text, stream codec
	// names), after textsafe has made it one clean line: get_dialog_report
	// passes the fence (sdk.Fence through its call) so an agent reads each
	// value inside the untrusted-capture-data markers. nil shows them
	// sanitized only (--call-report, render_ladder: the same bytes; the
	// ladder's labels are cut to its columns and cannot carry markers).
	// Sentences sipnab writes around sender text (diagnosis hints, evidence
	// clauses) are never quoted: their sender text is sanitized, and the
	// answer carries the provenance note.
	Quote func(string) string
}

// quote applies Quote to a sender-written value ("" stays "").
func (c *Call) quote(s string) string {
	if c.Quote == nil || s == "" {
		return s
	}
	return c.Quote(s)
}

// Build assembles the model of one call. ok is false when the store holds
// no such Call-ID.
func Build(c *engine.Capture, callID string, opt Options) (*Call, bool) {
	// Status first, stores after: flags that say the source was read whole
	// describe stores read after the load ended.
	st := c.Status()
	det, ok := c.Dialogs().Get(callID)
	if !ok {
		return nil, false
	}
	if opt.MaxLegs <= 0 {
		opt.MaxLegs = DefaultMaxLegs
	}
	cr := opt.Correlator
	if cr == nil {
		cr = correlate.New(c.Dialogs(), correlate.Config{})
	}
	ms := c.Media()
	call := &Call{
		Run: Run{SourceExhausted: st.SourceExhausted, SourceStoppedEarly: st.SourceStoppedEarly,
			StoppedOnRequest: st.StoppedOnRequest, Errors: st.Errors},
		Detail: det,
	}
	var src analysis.MediaSource = media.NewStore(media.Config{})
	if ms != nil {
		src = ms
	}
	// a call still in progress at capture end: ended false and its
	// duration to the capture's end, as list_dialogs and --json-run say
	c.Dialogs().MarkInProgress(&call.Detail.Summary, analysis.CaptureEnd(c.Dialogs(), src))
	det = call.Detail
	call.Diagnosis = analysis.Diagnose(analysis.FactsFrom(det), src, opt.Diagnosis)
	call.Streams = streamsOf(src, callID)
	call.SDP = sdpTimeline(det.Messages)
	call.Transactions = transactions(det.Messages)
	offerFates(call.Transactions, call.SDP)

	call.Legs = []Leg{{Label: "A", Detail: det, Streams: call.Streams, Endpoints: src.EndpointsFor(callID)}}
	if tree, ok := cr.Tree(callID, 1<<10); ok {
		for _, n := range tree.Nodes[1:] {
			if n.Edge == nil {
				continue
			}
			if !n.Edge.IdentifierMatch {
				if n.Parent == callID {
					if len(call.Guesses) < MaxGuesses {
						call.Guesses = append(call.Guesses, Guess{CallID: n.CallID, GapMs: n.Edge.GapMs})
					} else {
						call.GuessesMore++
					}
				}
				continue
			}
			if len(call.Legs) >= opt.MaxLegs {
				call.LegsTruncated = true
				continue
			}
			ld, ok := c.Dialogs().Get(n.CallID)
			if !ok {
				continue
			}
			call.Legs = append(call.Legs, Leg{
				Label: legLabel(len(call.Legs)), Detail: ld, Strategy: n.Edge.Strategy, Score: n.Edge.Score,
				Parent: n.Parent, Streams: streamsOf(src, n.CallID), Endpoints: src.EndpointsFor(n.CallID),
			})
		}
		call.LegsTruncated = call.LegsTruncated || tree.Truncated
	}
	return call, true
}

// sdpTimeline is a dialog's offer/answer history, never nil.
func sdpTimeline(msgs []dialog.Message) []sdptimeline.Exchange {
	tl := sdptimeline.Build(msgs)
	if tl.Exchanges == nil {
		return []sdptimeline.Exchange{}
	}
	return tl.Exchanges
}

func legLabel(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return "L" + itoa(i+1)
}

// streamsOf returns a dialog's RTP streams, oldest first (UDPTL fax flows
// are kept: they are the call's media too).
func streamsOf(src analysis.MediaSource, callID string) []media.StreamInfo {
	s := src.StreamsFor(callID)
	slices.SortStableFunc(s, func(a, b media.StreamInfo) int { return a.FirstSeen.Compare(b.FirstSeen) })
	return s
}

// Response is one distinct response of a transaction.
type Response struct {
	Code   int
	Reason string
	// After is the time from the request's first copy (from the
	// transaction's first message when the request was not captured).
	After time.Duration
	// Copies counts this response and its retransmissions.
	Copies int
}

// Transaction is one request and its responses, keyed by CSeq number and
// method and the top Via branch (so the hops of a stateful proxy are
// separate transactions).
type Transaction struct {
	// Method is the CSeq method.
	Method string
	// CSeq is the CSeq number.
	CSeq uint32
	// RequestSeen: the request itself was captured.
	RequestSeen bool
	// Copies counts the request and its retransmissions.
	Copies int
	// Src and Dst are the request's addresses (a response's, reversed,
	// when the request was not captured).
	Src, Dst netip.AddrPort
	// Start is the first message of the transaction.
	Start time.Time
	// Responses are the distinct responses, in arrival order.
	Responses []Response
	// Offer says what became of the SDP offer the request carried when
	// that is news: refused (with its code, T.38 refused) or an audio
	// re-offer after a refused T.38 (offerFate). Empty otherwise.
	Offer string

	reqIndex int // the request's message index (-1: not captured)
}

// maxTransactions bounds the transactions a report lists (a dialog keeps at
// most 500 messages, so this is a ceiling, not a cut).
const maxTransactions = 500

func transactions(msgs []dialog.Message) []Transaction {
	type txKey struct {
		cseq   uint32
		method string
		branch string
	}
	var out []Transaction
	idx := map[txKey]int{}
	for i := range msgs {
		m := &msgs[i]
		msg := m.Msg
		if msg == nil || !msg.CSeq.Valid {
			continue
		}
		k := txKey{msg.CSeq.Number, msg.CSeq.Method, msg.TopBranch()}
		j, ok := idx[k]
		if !ok {
			if len(out) >= maxTransactions {
				continue
			}
			t := Transaction{Method: msg.CSeq.Method, CSeq: msg.CSeq.Number, Start: m.TS, Src: m.Src, Dst: m.Dst, reqIndex: -1}
			if !msg.IsRequest {
				t.Src, t.Dst = m.Dst, m.Src
			}
			out = append(out, t)
			j = len(out) - 1
			idx[k] = j
		}
		t := &out[j]
		if msg.IsRequest {
			if !t.RequestSeen {
				t.RequestSeen, t.Start, t.Src, t.Dst, t.reqIndex = true, m.TS, m.Src, m.Dst, m.Index
			}
			t.Copies++
			continue
		}
		if n := len(t.Responses); n > 0 && t.Responses[n-1].Code == msg.StatusCode {
			t.Responses[n-1].Copies++
			continue
		}
		t.Responses = append(t.Responses, Response{Code: msg.StatusCode, Reason: msg.Reason, After: m.TS.Sub(t.Start), Copies: 1})
	}
	return out
}

// offerFates notes on each transaction whose request carried an offer
// what became of that offer when it is news (offerFate).
func offerFates(txs []Transaction, sdp []sdptimeline.Exchange) {
	byIndex := make(map[int]int, len(txs))
	for i := range txs {
		if txs[i].reqIndex >= 0 {
			byIndex[txs[i].reqIndex] = i
		}
	}
	for i := range sdp {
		if j, ok := byIndex[sdp[i].MessageIndex]; ok {
			txs[j].Offer = offerFate(&sdp[i])
		}
	}
}
