package analysis

// The signaling half of a dialog's diagnosis (engine.md §11): final_failure,
// auth_loop, retransmissions, ack_missing, abandoned, post_dial_delay and
// registration_failure, each null when clean, with message indexes as
// evidence. Timer H and Timer C are thresholds measured against the end of
// the capture: a timer that had not run out when the capture ended is not
// judged, and the diagnosis says so in not_judged.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sip"
)

// AuthLoopMinChallenges is how many 401/407 without a 2xx make an auth loop.
const AuthLoopMinChallenges = 3

// Auth loop kinds.
const (
	// AuthCredentialFailure: the client answered a challenge with
	// credentials and was challenged again (wrong password, realm or
	// nonce handling).
	AuthCredentialFailure = "credential_failure"
	// AuthSilentDrop: the client never sent credentials (it drops the
	// challenge and starts over).
	AuthSilentDrop = "silent_drop"
)

// Abandoned kinds.
const (
	// AbandonedCancelled: the caller sent CANCEL.
	AbandonedCancelled = "cancelled"
	// AbandonedNoFinalResponse: no final response in the capture Timer C
	// (180 s) after the INVITE.
	AbandonedNoFinalResponse = "no_final_response"
)

// Registration failure kinds.
const (
	// RegistrationRejected: the registrar refused the REGISTER (a final
	// 4xx-6xx, or only challenges and no retry).
	RegistrationRejected = "rejected"
	// RegistrationShortenedExpiry: the registrar granted a shorter expiry
	// than the REGISTER asked for.
	RegistrationShortenedExpiry = "shortened_expiry"
	// RegistrationAuthLoop: the REGISTER was challenged again and again.
	RegistrationAuthLoop = "auth_loop"
)

// AuthLoop is a request challenged at least three times with no 2xx.
type AuthLoop struct {
	// Kind is credential_failure (credentials were sent and challenged
	// again) or silent_drop (credentials were never sent).
	Kind string `json:"kind" enum:"credential_failure|silent_drop"`
	// Method is the request challenged.
	Method string `json:"method"`
	// Challenges counts the 401/407 responses (copies excluded).
	Challenges int `json:"challenges"`
	// AuthorizedRequests counts the attempts that carried credentials.
	AuthorizedRequests int `json:"authorized_requests"`
	// Code is the last challenge (401 or 407).
	Code int `json:"code"`
	// Evidence are the message indexes of the challenges and of the
	// attempts that carried credentials.
	Evidence []int `json:"evidence"`
}

// UnansweredRequest is a request retransmitted without any response, keyed
// on CSeq and top Via branch.
type UnansweredRequest struct {
	Method string `json:"method"`
	CSeq   uint32 `json:"cseq"`
	// Branch is the top Via branch, as sent.
	Branch string `json:"branch,omitempty"`
	// Count counts the copies seen.
	Count int `json:"count"`
	// SpanMs is first to last copy.
	SpanMs int64 `json:"span_ms"`
	// Evidence are the message indexes of the copies (up to 16).
	Evidence []int `json:"evidence"`
	// ICMPCause is the ICMP error that answered the copies instead of a
	// response (icmp_unreachable); absent when none did.
	ICMPCause *ICMPCause `json:"icmp_cause,omitempty"`
}

// AckMissing is a 2xx to an INVITE no ACK followed within Timer H.
type AckMissing struct {
	// CSeq is the number of the INVITE answered.
	CSeq uint32 `json:"cseq"`
	// AnswerCode is the 2xx.
	AnswerCode int `json:"answer_code"`
	// AnswerCopies counts the 2xx and its retransmissions.
	AnswerCopies int `json:"answer_copies"`
	// WaitedMs is from the 2xx to the end of the capture.
	WaitedMs int64 `json:"waited_ms"`
	// TimerHMs is the threshold (32 s).
	TimerHMs int64 `json:"timer_h_ms"`
	// Evidence are the message indexes of the 2xx copies.
	Evidence []int `json:"evidence"`
}

// Abandoned is an INVITE the caller cancelled, or one with no final
// response in the capture Timer C after it was sent.
type Abandoned struct {
	// Kind is cancelled or no_final_response.
	Kind string `json:"kind" enum:"cancelled|no_final_response"`
	// CSeq is the number of the INVITE.
	CSeq uint32 `json:"cseq"`
	// FinalCode is the INVITE's final response after the CANCEL (487, or
	// a 2xx that crossed it); absent when none.
	FinalCode int `json:"final_code,omitempty"`
	// Answered: the call was answered anyway (a 2xx crossed the CANCEL, or
	// another attempt was answered).
	Answered bool `json:"answered"`
	// WaitedMs (no_final_response) is from the INVITE to the end of the
	// capture; TimerCMs the threshold (180 s).
	WaitedMs int64 `json:"waited_ms,omitempty"`
	TimerCMs int64 `json:"timer_c_ms,omitempty"`
	// Evidence are message indexes: the CANCEL copies and the INVITE's
	// final response, or the INVITE copies.
	Evidence []int `json:"evidence"`
}

// PostDialDelay is INVITE → first 18x over the threshold (the row's
// pdd_ms: a 100 Trying does not count).
type PostDialDelay struct {
	PDDMs       float64 `json:"pdd_ms"`
	ThresholdMs float64 `json:"threshold_ms"`
	// Evidence are the message indexes of the INVITE and the 18x.
	Evidence []int `json:"evidence"`
}

// RegistrationFailure is a REGISTER that did not leave a binding as asked.
type RegistrationFailure struct {
	// Kind is rejected, shortened_expiry or auth_loop.
	Kind string `json:"kind" enum:"rejected|shortened_expiry|auth_loop"`
	// Code is the final response (or the last challenge); absent when
	// none.
	Code int `json:"code,omitempty"`
	// RequestedExpirySec and GrantedExpirySec are what the REGISTER asked
	// for and what the 2xx granted; absent when not stated.
	RequestedExpirySec *int64 `json:"requested_expiry_sec,omitempty"`
	GrantedExpirySec   *int64 `json:"granted_expiry_sec,omitempty"`
	// Evidence are message indexes: the REGISTER and its final response,
	// or the challenges.
	Evidence []int `json:"evidence"`
}

// NotJudged is a detection the capture could not decide.
type NotJudged struct {
	Detection string `json:"detection"`
	Reason    string `json:"reason"`
}

// Problem reports whether any signaling detection fired.
func (s *SignalingDiagnosis) Problem() bool {
	return s != nil && (s.FinalFailure != nil || s.SlowSetup != nil || s.PostDialDelay != nil || s.AuthLoop != nil ||
		len(s.Retransmissions) > 0 || s.AckMissing != nil || s.Abandoned != nil || s.RegistrationFailure != nil ||
		len(s.ICMPUnreachable) > 0)
}

// LegFacts is one leg of a dialog as diagnosis reads it.
type LegFacts struct {
	// Family is the leg's state machine (INVITE, REGISTER, SUBSCRIBE,
	// generic); Method the method that opened it; State its state.
	Family string
	Method string
	State  string
}

// sigCtx is one dialog's signaling facts with the capture end resolved.
type sigCtx struct {
	d    *DialogFacts
	txs  []dialog.TxFacts
	end  time.Time
	opts Options
	s    *SignalingDiagnosis
	nj   []NotJudged
	// open caches opening(leg), computed once per leg.
	open [][]*dialog.TxFacts
}

// opening returns the transactions that open or retry a leg: its opening
// method, re-INVITEs excluded.
func (c *sigCtx) opening(leg int) []*dialog.TxFacts {
	if leg < 0 || leg >= len(c.d.Legs) {
		return nil
	}
	if c.open == nil {
		c.open = make([][]*dialog.TxFacts, len(c.d.Legs))
	} else if c.open[leg] != nil {
		return c.open[leg]
	}
	method := c.d.Legs[leg].Method
	out := []*dialog.TxFacts{}
	for i := range c.txs {
		t := &c.txs[i]
		if t.Leg != leg || t.Method != method || method == "ACK" || (method == "INVITE" && t.InDialog) {
			continue
		}
		out = append(out, t)
	}
	c.open[leg] = out
	return out
}

func isChallenge(code int) bool { return code == 401 || code == 407 }

// hintMethod names a method in a hint: hints are sipnab's own text and
// carry nothing a sender wrote, so a method outside the registered set is
// "a request".
func hintMethod(m string) string {
	switch m {
	case "INVITE", "ACK", "BYE", "CANCEL", "REGISTER", "OPTIONS", "PRACK", "SUBSCRIBE", "NOTIFY",
		"PUBLISH", "INFO", "REFER", "MESSAGE", "UPDATE":
		return m
	}
	return "a request"
}

// outcome is how a leg's opening transactions ended: the last final
// response that is not a challenge, else (only challenged) the last
// challenge; nil when no final response arrived.
func outcome(txs []*dialog.TxFacts) (last *dialog.TxFacts, onlyChallenged bool) {
	var lastAny *dialog.TxFacts
	later := func(a, b *dialog.TxFacts) bool { return b == nil || !a.FinalAt.Before(b.FinalAt) }
	for _, t := range txs {
		if t.FinalCode == 0 {
			continue
		}
		if later(t, lastAny) {
			lastAny = t
		}
		if !isChallenge(t.FinalCode) && later(t, last) {
			last = t
		}
	}
	if last == nil && lastAny != nil {
		return lastAny, true
	}
	return last, false
}

func sortedIndexes(lists ...[]int) []int {
	out := []int{}
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func dur(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}

func (c *sigCtx) notJudged(det, reason string) {
	for _, n := range c.nj {
		if n.Detection == det {
			return
		}
	}
	c.nj = append(c.nj, NotJudged{Detection: det, Reason: reason})
}

func (c *sigCtx) hint(format string, a ...any) {
	c.s.Hints = append(c.s.Hints, fmt.Sprintf(format, a...))
}

// finalFailure: the INVITE's final response when the Call-ID has one (the
// row's final_status_code), else the first leg whose opening transactions
// ended on 4xx-6xx (REGISTER, SUBSCRIBE, OPTIONS, PUBLISH...).
func (c *sigCtx) finalFailure() {
	d := c.d
	var t *dialog.TxFacts
	code, phrase, method := 0, "", ""
	if d.HasFinal {
		if d.FinalCode < 400 || d.FinalCode > 699 {
			return
		}
		code, phrase, method = d.FinalCode, d.FinalReason, "INVITE"
		for i := range c.txs {
			x := &c.txs[i]
			if x.Method == "INVITE" && !x.InDialog && x.FinalCode == code && (t == nil || !x.FinalAt.Before(t.FinalAt)) {
				t = x
			}
		}
	} else {
		for li := range d.Legs {
			last, only := outcome(c.opening(li))
			if only && c.retriedLater(li) {
				continue // the retry under a new tag decides (last transaction)
			}
			if last != nil && last.FinalCode >= 400 && last.FinalCode <= 699 {
				t, code, phrase, method = last, last.FinalCode, last.FinalReason, last.Method
				break
			}
		}
		if t == nil {
			return
		}
	}
	ff := &FinalFailure{Code: code, Reason: phrase, Class: sip.StatusClass(code), Method: method, Evidence: []int{}}
	if t != nil {
		ff.ReasonHeader, ff.Warning = t.FinalReasonHeader, t.FinalWarning
		if t.FinalIndex >= 0 {
			ff.Evidence = []int{t.FinalIndex}
		}
	}
	c.s.FinalFailure = ff
	switch ff.Class {
	case sip.ClassChallenge:
		c.hint("ended on a %d challenge: credentials were asked and the retry never succeeded", code)
	case sip.ClassCanceled:
		c.hint("the caller canceled before an answer (487)")
	case sip.ClassDeclined:
		c.hint("the called party declined (%d)", code)
	default:
		switch {
		case code == 488 || code == 415:
			c.hint("%d: the offer was not acceptable; compare the codecs offered with what the far end supports", code)
		case code == 404 || code == 484:
			c.hint("%d: the number or address did not route; check the dial plan", code)
		case code == 408 || code == 480:
			c.hint("%d: the called party was unreachable or did not answer", code)
		case code == 403:
			c.hint("403: the request was refused; check the account, its credentials and what it may do")
		case code == 489:
			c.hint("489: the event package is not supported by the far end")
		case code >= 500 && code < 600:
			c.hint("%d: a server failed; look at the element that sent it", code)
		default:
			c.hint("ended on %d", code)
		}
	}
	if method != "INVITE" {
		c.s.Hints[len(c.s.Hints)-1] += fmt.Sprintf(" (%s)", hintMethod(method))
	}
	if ff.Warning != "" {
		c.hint("the failure carries a Warning header: it names the agent that refused and why")
	}
}

// authLoop checks one leg: at least three challenges and no 2xx.
func (c *sigCtx) authLoop(leg int) *AuthLoop {
	txs := c.opening(leg)
	n := 0
	for _, t := range txs {
		if t.FinalCode >= 200 && t.FinalCode < 300 {
			return nil
		}
		n += t.Challenges
	}
	if n < AuthLoopMinChallenges {
		return nil
	}
	var a AuthLoop
	var evid [][]int
	var last *dialog.TxFacts
	for _, t := range txs {
		if t.FinalCode >= 200 && t.FinalCode < 300 {
			return nil
		}
		a.Challenges += t.Challenges
		if t.Challenges > 0 {
			evid = append(evid, t.ChallengeIndexes)
			if last == nil || !t.FinalAt.Before(last.FinalAt) {
				last = t
			}
		}
		if t.Authorized {
			a.AuthorizedRequests++
			evid = append(evid, t.RequestIndexes[:min(1, len(t.RequestIndexes))])
		}
	}
	if a.Challenges < AuthLoopMinChallenges || last == nil {
		return nil
	}
	a.Method = c.d.Legs[leg].Method
	a.Code = last.FinalCode
	if !isChallenge(a.Code) {
		a.Code = 0
		for _, t := range txs {
			if isChallenge(t.FinalCode) {
				a.Code = t.FinalCode
			}
		}
	}
	a.Kind = AuthSilentDrop
	if a.AuthorizedRequests > 0 {
		a.Kind = AuthCredentialFailure
	}
	a.Evidence = sortedIndexes(evid...)
	return &a
}

func (c *sigCtx) authLoops() {
	for li := range c.d.Legs {
		if a := c.authLoop(li); a != nil {
			c.s.AuthLoop = a
			if a.Kind == AuthCredentialFailure {
				c.hint("%s challenged %d times with no success although credentials were sent: check the password, the realm and how the client handles the nonce", hintMethod(a.Method), a.Challenges)
			} else {
				c.hint("%s challenged %d times and never answered with credentials: the client is not configured to authenticate", hintMethod(a.Method), a.Challenges)
			}
			return
		}
	}
}

// retransmissions lists requests retransmitted without any response: the
// store's account (every message, retention cap or not), with the copies'
// indexes from the retained messages.
func (c *sigCtx) retransmissions() {
	for _, u := range c.d.Unanswered {
		r := UnansweredRequest{Method: u.Method, CSeq: u.CSeq, Branch: u.Branch, Count: u.Count, SpanMs: u.SpanMs, Evidence: []int{}}
		for i := range c.txs {
			t := &c.txs[i]
			if t.Method == u.Method && t.CSeq == u.CSeq && t.Branch == u.Branch {
				r.Evidence = append(r.Evidence, t.RequestIndexes...)
				break
			}
		}
		r.ICMPCause = c.icmpCause(r.Evidence)
		c.s.Retransmissions = append(c.s.Retransmissions, r)
	}
	if n := len(c.s.Retransmissions); n > 0 {
		r := c.s.Retransmissions[0]
		if x := r.ICMPCause; x != nil {
			c.hint("%s (CSeq %d) was sent %d times over %.1f s with no response: %d copies were answered by ICMP %s from %s instead (icmp_unreachable)", hintMethod(r.Method), r.CSeq, r.Count, float64(r.SpanMs)/1000, x.Errors, strings.ReplaceAll(x.Kind, "_", " "), x.Reporter)
		} else {
			c.hint("%s (CSeq %d) was sent %d times over %.1f s with no response at all: the far end is unreachable or its answers do not come back (firewall, NAT, wrong Via)", hintMethod(r.Method), r.CSeq, r.Count, float64(r.SpanMs)/1000)
		}
		if n > 1 {
			c.hint("%d requests in all were retransmitted without a response", n)
		}
	}
}

// ackMissing: a 2xx to an INVITE (re-INVITEs included) with no ACK of the
// same CSeq in the leg, judged only once the capture runs Timer H past it.
func (c *sigCtx) ackMissing() {
	for i := range c.txs {
		t := &c.txs[i]
		if t.Method != "INVITE" || t.FinalCode < 200 || t.FinalCode >= 300 {
			continue
		}
		acked := false
		for j := range c.txs {
			a := &c.txs[j]
			if a.Method == "ACK" && a.CSeq == t.CSeq && a.Requests > 0 && (a.Leg == t.Leg || t.Leg < 0 || a.Leg < 0) {
				acked = true
				break
			}
		}
		if acked {
			continue
		}
		waited := c.end.Sub(t.FinalAt)
		if waited < dialog.TimerH {
			c.notJudged("ack_missing", fmt.Sprintf("no ACK for the %d to INVITE CSeq %d, but the capture ends %s after it, before Timer H (32 s)", t.FinalCode, t.CSeq, dur(max(waited, 0))))
			continue
		}
		if c.s.AckMissing == nil {
			c.s.AckMissing = &AckMissing{
				CSeq: t.CSeq, AnswerCode: t.FinalCode, AnswerCopies: t.FinalCopies,
				WaitedMs: waited.Milliseconds(), TimerHMs: dialog.TimerH.Milliseconds(),
				Evidence: append([]int{}, t.FinalIndexes...),
			}
			c.hint("the %d to INVITE CSeq %d was never acknowledged (%d copies sent, no ACK in the %s that followed): the ACK is lost on its way back, typically a NAT or a wrong Contact/Record-Route; the call drops after Timer H", t.FinalCode, t.CSeq, t.FinalCopies, dur(waited))
		}
	}
}

// abandoned: an opening INVITE the caller cancelled, else one with no
// final response Timer C after it was sent.
func (c *sigCtx) abandoned() {
	for i := range c.txs {
		x := &c.txs[i]
		if x.Method != "CANCEL" {
			continue
		}
		var inv *dialog.TxFacts
		for j := range c.txs {
			y := &c.txs[j]
			if y.Method == "INVITE" && y.CSeq == x.CSeq && (y.Branch == x.Branch || x.Branch == "" || y.Branch == "") {
				inv = y
				break
			}
		}
		if inv != nil && inv.InDialog {
			continue // a cancelled re-INVITE does not abandon the call
		}
		ab := &Abandoned{Kind: AbandonedCancelled, CSeq: x.CSeq, Answered: c.d.Answered}
		ev := [][]int{x.RequestIndexes}
		if inv != nil {
			ab.FinalCode = inv.FinalCode
			if inv.FinalCode >= 200 && inv.FinalCode < 300 {
				ab.Answered = true
			}
			if inv.FinalIndex >= 0 {
				ev = append(ev, []int{inv.FinalIndex})
			}
		}
		ab.Evidence = sortedIndexes(ev...)
		c.s.Abandoned = ab
		if ab.Answered {
			c.hint("the caller cancelled INVITE CSeq %d, but the call was answered anyway (the CANCEL crossed a 2xx): both sides may disagree about whether the call exists", x.CSeq)
		} else {
			c.hint("the caller cancelled INVITE CSeq %d before an answer", x.CSeq)
		}
		return
	}
	if c.d.HasFinal {
		return
	}
	for i := range c.txs {
		t := &c.txs[i]
		if t.Method != "INVITE" || t.InDialog || t.Requests == 0 || t.FinalCode != 0 {
			continue
		}
		waited := c.end.Sub(t.FirstRequestAt)
		if waited < dialog.TimerC {
			c.notJudged("abandoned", fmt.Sprintf("INVITE CSeq %d has no final response, but the capture ends %s after it, before Timer C (180 s): the call may still have been ringing", t.CSeq, dur(max(waited, 0))))
			return
		}
		c.s.Abandoned = &Abandoned{
			Kind: AbandonedNoFinalResponse, CSeq: t.CSeq, WaitedMs: waited.Milliseconds(),
			TimerCMs: dialog.TimerC.Milliseconds(), Evidence: append([]int{}, t.RequestIndexes...),
		}
		c.hint("INVITE CSeq %d had no final response in the %s the capture shows after it (Timer C is 180 s): the call was abandoned, or its answer never reached the capture point", t.CSeq, dur(waited))
		return
	}
}

// postDialDelay: the row's PDD (the routed INVITE to the first 18x) over
// the run's threshold. After a 401/407 the routed INVITE is the
// credentialed retry: the caller's wait between the challenge and the
// retry is not part of the PDD and never raises slow setup
// (docs/call-timing.md). The evidence is that INVITE and its first 18x.
func (c *sigCtx) postDialDelay() {
	d := c.d
	if !d.HasPDD || d.PDD <= c.opts.SlowSetup {
		return
	}
	p := &PostDialDelay{PDDMs: ms(d.PDD), ThresholdMs: ms(c.opts.SlowSetup)}
	var inv, ring *dialog.TxFacts
	for i := range c.txs {
		t := &c.txs[i]
		if t.Method != "INVITE" || t.InDialog {
			continue
		}
		// The routed INVITE: the first one sent at the clock's start (the
		// first INVITE when the clock never restarted).
		if inv == nil && len(t.RequestIndexes) > 0 && (d.InviteAt.IsZero() || !t.FirstRequestAt.Before(d.InviteAt)) {
			inv = t
		}
		if t.RingingIndex >= 0 && !t.FirstRingingAt.Before(d.InviteAt) && (ring == nil || t.FirstRingingAt.Before(ring.FirstRingingAt)) {
			ring = t
		}
	}
	var ev []int
	if inv != nil {
		ev = append(ev, inv.RequestIndexes[0])
	}
	if ring != nil {
		ev = append(ev, ring.RingingIndex)
	}
	p.Evidence = sortedIndexes(ev)
	c.s.PostDialDelay = p
	c.s.SlowSetup = &SlowSetup{PDDMs: p.PDDMs, ThresholdMs: p.ThresholdMs}
	c.hint("post-dial delay %.1f s exceeds %s s", d.PDD.Seconds(), strconv.FormatFloat(c.opts.SlowSetup.Seconds(), 'f', -1, 64))
}

// registration: the first REGISTER leg that failed, was challenged in a
// loop, or was granted less than it asked. A leg only ever challenged that
// a later REGISTER leg retried (credentials under a new From tag) is not
// judged: the registration follows its last transaction
// (docs/data-model.md).
func (c *sigCtx) registration() {
	for li, l := range c.d.Legs {
		if l.Method != "REGISTER" {
			continue
		}
		if _, only := outcome(c.opening(li)); only && c.retriedLater(li) {
			continue
		}
		if a := c.authLoop(li); a != nil {
			c.s.RegistrationFailure = &RegistrationFailure{Kind: RegistrationAuthLoop, Code: a.Code, Evidence: a.Evidence}
			c.hint("the registration never succeeded: challenged %d times (%s)", a.Challenges, strings.ReplaceAll(a.Kind, "_", " "))
			return
		}
		last, only := outcome(c.opening(li))
		if last == nil {
			continue
		}
		r := &RegistrationFailure{Code: last.FinalCode}
		if last.RequestedExpiry >= 0 {
			v := last.RequestedExpiry
			r.RequestedExpirySec = &v
		}
		req := last.RequestIndexes[:min(1, len(last.RequestIndexes))]
		switch {
		case last.FinalCode >= 400 || only:
			r.Kind = RegistrationRejected
			r.Evidence = sortedIndexes(req, []int{last.FinalIndex})
			c.s.RegistrationFailure = r
			if only {
				c.hint("the registration was only challenged (%d) and no retry with credentials followed in the capture: the phone is not registered", last.FinalCode)
			} else {
				c.hint("the registrar refused the registration (%d): the phone is not registered", last.FinalCode)
			}
			return
		case last.FinalCode >= 200 && last.FinalCode < 300 && !last.Unregister &&
			last.RequestedExpiry >= 0 && last.GrantedExpiry >= 0 && last.GrantedExpiry < last.RequestedExpiry:
			g := last.GrantedExpiry
			r.Kind, r.GrantedExpirySec = RegistrationShortenedExpiry, &g
			r.Evidence = sortedIndexes(req, []int{last.FinalIndex})
			c.s.RegistrationFailure = r
			c.hint("the registrar granted %d s of the %d s asked: the phone must refresh sooner, or its binding lapses", g, last.RequestedExpiry)
			return
		}
	}
}

// retriedLater reports whether a leg after leg li opened by the same
// method has a final response to its opening requests: the retry of a
// challenged request under a new From tag.
func (c *sigCtx) retriedLater(li int) bool {
	for lj := li + 1; lj < len(c.d.Legs); lj++ {
		if c.d.Legs[lj].Method != c.d.Legs[li].Method {
			continue
		}
		if last, _ := outcome(c.opening(lj)); last != nil {
			return true
		}
	}
	return false
}

// diagnoseSignalingFull runs every signaling detection on one dialog; it
// returns nil when nothing fired and there is nothing to hint, and the
// detections it could not decide.
func diagnoseSignalingFull(d *DialogFacts, src []time.Time, opts Options) (*SignalingDiagnosis, []NotJudged) {
	var s SignalingDiagnosis
	c := &sigCtx{d: d, txs: d.Signaling.Transactions, opts: opts, s: &s}
	c.end = opts.CaptureEnd
	if d.LastAt.After(c.end) {
		c.end = d.LastAt
	}
	for _, t := range src {
		if t.After(c.end) {
			c.end = t
		}
	}
	c.finalFailure()
	c.retransmissions()
	c.icmpUnreachable()
	if d.Signaling.Read {
		c.authLoops()
		c.ackMissing()
		c.abandoned()
		c.registration()
	} else {
		skipped := []string{"auth_loop", "ack_missing", "abandoned", "registration_failure"}
		if !d.HasFinal {
			skipped = append([]string{"final_failure"}, skipped...)
		}
		for _, det := range skipped {
			c.notJudged(det, "the dialog was read without its messages")
		}
	}
	c.postDialDelay()
	if d.Signaling.NotRetained > 0 {
		s.MessagesNotRead = d.Signaling.NotRetained
		c.hint("%d messages past the per-dialog retention cap were not read: the detections cover the retained ones", d.Signaling.NotRetained)
	}
	if d.InfoDTMF > 0 {
		c.hint("%d DTMF digit(s) sent as SIP INFO (values masked)", d.InfoDTMF)
	}
	if !s.Problem() && len(s.Hints) == 0 {
		return nil, c.nj
	}
	if s.Hints == nil {
		s.Hints = []string{}
	}
	return &s, c.nj
}

// DiagnoseSignaling runs the signaling half of Diagnose alone on one
// dialog: the same detections (final_failure, auth_loop,
// registration_failure, ...) with no media read, for a caller that asks
// only about signaling (core/endpoint's registration questions). It returns
// nil when nothing fired and there is nothing to hint, and the detections
// the capture could not decide.
func DiagnoseSignaling(d DialogFacts, opts Options) (*SignalingDiagnosis, []NotJudged) {
	return diagnoseSignalingFull(&d, nil, opts.withDefaults())
}
