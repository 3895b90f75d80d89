package dialog

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// Summary is the list row of one Call-ID: the list_dialogs row
// (DialogSummary) every surface projects dialogs through (--json-run,
// --json-dialogs, MCP). Fields absent from the wire were not measured.
//
// The row describes the Call-ID's primary leg: its call (first INVITE-family
// leg) when it holds one, else its first leg (docs/data-model.md).
type Summary struct {
	// CallID is the dialog's Call-ID, verbatim.
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// State is the primary leg's state.
	State string `json:"state" enum:"Trying|Ringing|InCall|Completed|Cancelled|Failed|Redirected|Registered|Expired|Pending|Active|Terminated|Transferring" desc:"dialog state"`
	// Method is the method that opened the primary leg: INVITE whenever
	// the Call-ID holds a call.
	Method string `json:"method" desc:"method that opened the dialog (INVITE if it holds a call)"`
	// MsgCount counts every SIP message of the Call-ID, retransmissions
	// included, capture duplicates not (they are Timing.Duplicates: the
	// frames tshark counts for the Call-ID are MsgCount + Duplicates).
	MsgCount int `json:"msg_count" desc:"SIP messages in the dialog, retransmissions included, duplicates not"`
	// FromUser is the user part of the From URI; absent when none.
	FromUser string `json:"from_user,omitempty" desc:"user part of the From URI"`
	// ToUser is the user part of the To URI; absent when none.
	ToUser string `json:"to_user,omitempty" desc:"user part of the To URI"`
	// DurationSec is the span from the first to the last message, seconds.
	DurationSec float64 `json:"duration_sec" desc:"seconds from the first to the last message"`
	// CreatedAt is the time of the first message (it never moves).
	CreatedAt time.Time `json:"created_at" desc:"time of the first message"`
	// UpdatedAt is the time of the latest message.
	UpdatedAt time.Time `json:"updated_at" desc:"time of the latest message"`
	// Timing holds the transaction timing of the call.
	Timing Timing `json:"timing" desc:"transaction timing"`
	// Frame points at the frame the dialog opened in; absent when unknown.
	Frame string `json:"frame,omitempty" desc:"evidence pointer <source>#<ordinal>@<digest> of the opening frame"`
	// FinalStatusCode is the final response to the INVITE that opened (or
	// retried) the call; absent on dialogs without an answered INVITE
	// transaction. Challenges count only when nothing else followed.
	FinalStatusCode int `json:"final_status_code,omitempty" desc:"final response code of the call's INVITE"`
	// Challenges counts the 401/407 answers to the primary leg's opening
	// requests; absent when none. A challenge answered by a credentialed
	// retry is counted here, never reported as the outcome.
	Challenges int `json:"challenges,omitempty" desc:"401/407 received"`
	// OtherLegs are the Call-ID's other legs (a REGISTER before the call,
	// a second dialog under the Call-ID), compactly; absent when the
	// Call-ID holds one leg.
	OtherLegs []LegBrief `json:"other_legs,omitempty" desc:"other legs of the Call-ID"`
	// InputOrigin says how the opening message reached sipnab.
	InputOrigin string `json:"input_origin,omitempty" enum:"wire|hep|uprobe" desc:"how the opening message reached sipnab"`
	// Ended is false for an answered call still in progress (state InCall:
	// no BYE) when the capture ended; absent on every other dialog, whose
	// state says how it ended. Set by Store.MarkInProgress.
	Ended *bool `json:"ended,omitempty" desc:"false: call still in progress (InCall) at capture end"`
	// DurationToCaptureEndMs is such a call's duration up to the end of the
	// capture: its answer (2xx) to the capture's latest packet, SIP or RTP,
	// in ms. duration_sec keeps its meaning (first to last SIP message) and
	// timing.duration_ms (answer to BYE) stays absent: the call had not
	// ended. Present only with ended false.
	DurationToCaptureEndMs *int64 `json:"duration_to_capture_end_ms,omitempty" desc:"with ended false: 2xx to the capture's last packet (SIP or RTP), ms"`
}

// LegBrief is a leg other than the primary one, as a row lists it.
type LegBrief struct {
	Method string `json:"method,omitempty" desc:"opening method"`
	State  string `json:"state" desc:"state"`
	// FinalStatusCode is the final response of the leg's last opening
	// transaction (see Detail.Legs).
	FinalStatusCode int `json:"final_status_code,omitempty" desc:"final code"`
	Challenges      int `json:"challenges,omitempty" desc:"401/407 received"`
}

// Timing is the row's timing subset. Absent values were not measured.
type Timing struct {
	// PDDMs is the post-dial delay: the INVITE that was routed to the
	// first 18x sent back to the caller (a 100 Trying does not count),
	// milliseconds. After a 401/407 the routed INVITE is the credentialed
	// retry: the challenge ended the first INVITE's delay (RFC 6076 §4.3),
	// and the caller's wait is AuthWaitMs. Through a proxy seen on both
	// sides, the caller's side counts. See docs/call-timing.md.
	PDDMs *int64 `json:"pdd_ms,omitempty" desc:"post-dial delay: INVITE to first 18x, ms"`
	// SetupMs is the routed INVITE to the first 2xx, milliseconds.
	SetupMs *int64 `json:"setup_ms,omitempty" desc:"setup time: INVITE to 2xx, ms"`
	// AuthWaitMs is the caller's wait from each 401/407 to its
	// credentialed retry, summed, milliseconds; in neither PDD nor setup.
	// Absent when no challenged INVITE was retried.
	AuthWaitMs *int64 `json:"auth_wait_ms,omitempty" desc:"401/407 to retry, ms"`
	// Retransmits counts retransmitted messages in the dialog: messages
	// re-sent by their sender (RFC 3261 §17), capture duplicates excluded.
	Retransmits int `json:"retransmits" desc:"retransmitted messages"`
	// Duplicates counts the dialog's capture duplicates: the same bytes
	// seen again within the duplicate window (a mirrored copy, a second
	// interface, a second HEP agent). They are not in msg_count and move
	// nothing. Absent when none.
	Duplicates int `json:"duplicates,omitempty" desc:"capture duplicates (not retransmissions)"`
	// DurationMs is the answered call's duration (answer to BYE), ms.
	DurationMs *int64 `json:"duration_ms,omitempty" desc:"answered call duration: 2xx to BYE, ms"`
}

// TimingDetail is the full timing of a call. Absent values were not
// measured.
type TimingDetail struct {
	// InviteAt is the INVITE that was routed (after a 401/407, the
	// credentialed retry); FirstInviteAt the challenged first INVITE,
	// present only then. Every delay below starts at InviteAt.
	InviteAt      *time.Time `json:"invite_at,omitempty" desc:"routed INVITE (retry after 401/407)"`
	FirstInviteAt *time.Time `json:"first_invite_at,omitempty" desc:"challenged INVITE"`
	TryingAt      *time.Time `json:"trying_at,omitempty" desc:"first 100 Trying"`
	RingingAt     *time.Time `json:"ringing_at,omitempty" desc:"first 18x"`
	AnsweredAt    *time.Time `json:"answered_at,omitempty" desc:"first 2xx to the INVITE"`
	EndedAt       *time.Time `json:"ended_at,omitempty" desc:"BYE (or its 2xx when the BYE was not captured)"`
	TryingMs      *int64     `json:"trying_ms,omitempty" desc:"INVITE to 100 Trying, ms"`
	PDDMs         *int64     `json:"pdd_ms,omitempty" desc:"INVITE to first 18x, ms"`
	SetupMs       *int64     `json:"setup_ms,omitempty" desc:"INVITE to 2xx, ms"`
	// AuthWaitMs is the caller's waits from a 401/407 to its credentialed
	// retry, summed; in no delay.
	AuthWaitMs *int64 `json:"auth_wait_ms,omitempty" desc:"401/407 to retry, ms"`
	RingMs     *int64 `json:"ring_ms,omitempty" desc:"first 18x to the final response, ms"`
	TeardownMs *int64 `json:"teardown_ms,omitempty" desc:"BYE to its 2xx, ms"`
	DurationMs *int64 `json:"duration_ms,omitempty" desc:"2xx to BYE, ms"`
	// ClockSuspect: a message of the dialog carried an unusable capture
	// timestamp (wall clock substituted), so these numbers may be wrong.
	ClockSuspect bool `json:"clock_suspect,omitempty" desc:"a timestamp was substituted; timing may be wrong"`
}

// LegView is one leg of a Call-ID.
type LegView struct {
	Tag          string `json:"tag,omitempty" desc:"tag of the side that opened the leg"`
	Family       string `json:"family" enum:"INVITE|REGISTER|SUBSCRIBE|generic" desc:"state machine of the leg"`
	Method       string `json:"method,omitempty" desc:"method that opened the leg"`
	State        string `json:"state" desc:"leg state"`
	Primary      bool   `json:"primary,omitempty" desc:"the row's leg"`
	OnlyChalleng bool   `json:"only_challenged,omitempty" desc:"the opening request was only ever challenged (401/407) and nothing followed"`
	// FinalStatusCode is the final response of the leg's last opening
	// transaction: an INVITE leg's first 2xx when answered, else the last
	// non-challenge final response, else the last challenge.
	FinalStatusCode int          `json:"final_status_code,omitempty" desc:"final code"`
	Challenges      int          `json:"challenges,omitempty" desc:"401/407 received"`
	MsgCount        int          `json:"msg_count" desc:"messages of the leg"`
	CreatedAt       time.Time    `json:"created_at" desc:"first message of the leg"`
	UpdatedAt       time.Time    `json:"updated_at" desc:"latest message of the leg"`
	FromUser        string       `json:"from_user,omitempty" desc:"From user of the leg's first message"`
	ToUser          string       `json:"to_user,omitempty" desc:"To user of the leg's first message"`
	Forks           []Fork       `json:"forks" desc:"remote tags that answered"`
	ForksDropped    int          `json:"forks_dropped,omitempty" desc:"remote tags past the per-leg cap"`
	Transitions     []Transition `json:"transitions" desc:"state changes, oldest first"`
	// TransitionsDropped counts changes past the per-leg cap.
	TransitionsDropped int `json:"transitions_dropped,omitempty" desc:"state changes past the per-leg cap"`
}

// Unanswered is a request retransmitted without any response.
type Unanswered struct {
	CSeq   uint32    `json:"cseq" desc:"CSeq number"`
	Method string    `json:"method" desc:"CSeq method"`
	Branch string    `json:"branch,omitempty" desc:"top Via branch"`
	Count  int       `json:"count" desc:"copies of the request seen"`
	First  time.Time `json:"first" desc:"first copy"`
	Last   time.Time `json:"last" desc:"last copy"`
	SpanMs int64     `json:"span_ms" desc:"first to last copy, ms"`
}

// DTMF is one digit sent as SIP INFO. The digit is masked unless the reader
// asked for it.
type DTMF struct {
	At         time.Time `json:"at" desc:"time of the INFO"`
	Digit      string    `json:"digit" desc:"the digit; \"x\" when masked"`
	DurationMs int       `json:"duration_ms,omitempty" desc:"signalled duration, ms"`
	Frame      string    `json:"frame,omitempty" desc:"evidence pointer of the INFO"`
}

// Bounds reports what per-dialog caps shed. Zero fields are omitted.
type Bounds struct {
	MessagesNotRetained   int `json:"messages_not_retained,omitempty" desc:"messages past the retention cap (counted, not kept)"`
	LegsDropped           int `json:"legs_dropped,omitempty" desc:"messages that would have opened a leg past the leg cap"`
	TransactionsDropped   int `json:"transactions_dropped,omitempty" desc:"messages whose transaction was past the transaction cap"`
	IdentitiesNotRemember int `json:"identities_not_remembered,omitempty" desc:"retransmission identities past the cap (not remembered)"`
	DTMFDropped           int `json:"dtmf_dropped,omitempty" desc:"INFO DTMF digits past the cap"`
}

// Detail is everything the store knows about one Call-ID. Messages are
// rebuilt from the stored bytes on every call (each Detail has its own
// *sip.Message values, equal to what the parser returned); ask with
// Options.NoMessages when they are not needed.
type Detail struct {
	Summary
	// FinalReason is the reason phrase of the final status; absent with it.
	FinalReason string `json:"final_reason,omitempty" desc:"reason phrase of the final status"`
	// Family is the primary leg's state machine.
	Family string `json:"family" desc:"state machine of the primary leg"`
	// TimingDetail is the full timing of the primary leg.
	TimingDetail TimingDetail `json:"timing_detail" desc:"full call timing"`
	// Legs are the dialogs inside the Call-ID, in order of first sight;
	// the one marked primary is the leg the row describes (the first
	// INVITE-family leg, else the first leg; docs/data-model.md).
	Legs []LegView `json:"legs" desc:"dialogs inside the Call-ID"`
	// Termination is the last cause the signaling named; absent when none.
	Termination *Cause `json:"termination,omitempty" desc:"why the call ended, as signaled"`
	// RetransmittedNoResponse lists requests retransmitted without any
	// response (empty: looked, none).
	RetransmittedNoResponse []Unanswered `json:"retransmitted_no_response" desc:"requests retransmitted without a response"`
	// InfoDTMF lists digits sent as SIP INFO (empty: looked, none).
	InfoDTMF []DTMF `json:"info_dtmf" desc:"DTMF digits sent as SIP INFO"`
	// ICMPErrors are the ICMP/ICMPv6 errors that quote the dialog's
	// messages (icmp.go), up to MaxICMPPerDialog; ICMPErrorCount counts
	// them all. Absent when none was seen: a capture filtered to SIP's
	// ports holds no ICMP, so absence proves nothing.
	ICMPErrors     []ICMPError `json:"icmp_errors,omitempty" desc:"ICMP errors quoting this dialog's messages"`
	ICMPErrorCount int         `json:"icmp_error_count,omitempty" desc:"ICMP errors quoting this dialog (all, kept or not)"`
	// Malformed counts messages the parser flagged.
	Malformed int `json:"malformed" desc:"messages flagged malformed"`
	// Retained counts the messages kept (at most the per-dialog cap).
	Retained int `json:"messages_retained" desc:"messages kept"`
	// Bounds says what per-dialog caps shed.
	Bounds Bounds `json:"bounds" desc:"what per-dialog caps shed"`
	// Messages are the retained messages in arrival order.
	Messages []Message `json:"-"`
}

// Options tune a Detail.
type Options struct {
	// RevealDigits shows INFO DTMF digits instead of masking them.
	RevealDigits bool
	// NoMessages leaves Detail.Messages empty.
	NoMessages bool
	// Scratch, when set, is where the messages are rebuilt (Scratch).
	Scratch *Scratch
}

// Scratch is memory a reader lends GetWith to rebuild a dialog's messages
// in, so that reading dialog after dialog allocates no Message and no
// header array per message: the Detail's Messages slice and their
// *sip.Message are the Scratch's, overwritten by the next read with it.
// What stays valid is every string, Raw and Body of those messages (views
// into the bytes the store keeps, or their own) and the rest of the
// Detail. The zero Scratch is ready; it is not safe for concurrent use.
// It holds as many messages as the largest dialog read with it (at most
// the per-dialog retention cap).
type Scratch struct {
	views []Message
	msgs  []sip.Message
}

// messages returns n Message views and n sip.Messages to rebuild into.
func (sc *Scratch) messages(n int) ([]Message, []sip.Message) {
	if len(sc.msgs) < n {
		sc.msgs = append(sc.msgs, make([]sip.Message, n-len(sc.msgs))...)
		sc.views = make([]Message, len(sc.msgs))
	}
	return sc.views[:n], sc.msgs[:n]
}

func msBetween(a, b stamp) *int64 {
	if a.isZero() || b.isZero() || b.before(a) {
		return nil
	}
	v := b.time().Sub(a.time()).Milliseconds()
	return &v
}

func tp(s stamp) *time.Time {
	if s.isZero() {
		return nil
	}
	t := s.time()
	return &t
}

func (d *dialog) timing() TimingDetail {
	var td TimingDetail
	td.ClockSuspect = d.clockSuspect
	l := d.primary()
	if l == nil || l.family != FamilyInvite {
		return td
	}
	ended := l.byeAt
	if ended.isZero() {
		ended = l.byeOKAt
	}
	td.InviteAt, td.TryingAt, td.RingingAt = tp(l.inviteAt), tp(l.tryingAt), tp(l.ringingAt)
	td.AnsweredAt, td.EndedAt = tp(l.answeredAt), tp(ended)
	td.FirstInviteAt = tp(l.firstInviteAt)
	if l.authRetries > 0 {
		w := l.authWait.Milliseconds()
		td.AuthWaitMs = &w
	}
	td.TryingMs = msBetween(l.inviteAt, l.tryingAt)
	td.PDDMs = msBetween(l.inviteAt, l.ringingAt)
	td.SetupMs = msBetween(l.inviteAt, l.answeredAt)
	td.RingMs = msBetween(l.ringingAt, l.finalAt)
	td.TeardownMs = msBetween(l.byeAt, l.byeOKAt)
	td.DurationMs = msBetween(l.answeredAt, ended)
	return td
}

// boxes hands out the four optional timing values of many rows from
// shared blocks, one allocation per boxBlock rows instead of one per row.
// The zero value is ready; a nil *boxes allocates per row.
type boxes struct {
	free [][4]int64
}

const boxBlock = 512

func (b *boxes) next() *[4]int64 {
	if b == nil {
		return new([4]int64)
	}
	if len(b.free) == 0 {
		b.free = make([][4]int64, boxBlock)
	}
	p := &b.free[0]
	b.free = b.free[1:]
	return p
}

// rowTiming is the row's timing subset, its four optional values in one
// box taken from b.
func (d *dialog) rowTiming(b *boxes) Timing {
	t := Timing{Retransmits: int(d.retrans), Duplicates: int(d.dups)}
	l := d.primary()
	if l == nil || l.family != FamilyInvite {
		return t
	}
	ended := l.byeAt
	if ended.isZero() {
		ended = l.byeOKAt
	}
	var vals [4]int64
	var ok [4]bool
	for i, p := range [3][2]stamp{{l.inviteAt, l.ringingAt}, {l.inviteAt, l.answeredAt}, {l.answeredAt, ended}} {
		if !p[0].isZero() && !p[1].isZero() && !p[1].before(p[0]) {
			vals[i], ok[i] = p[1].time().Sub(p[0].time()).Milliseconds(), true
		}
	}
	if l.authRetries > 0 {
		vals[3], ok[3] = l.authWait.Milliseconds(), true
	}
	if !ok[0] && !ok[1] && !ok[2] && !ok[3] {
		return t
	}
	box := b.next()
	*box = vals
	if ok[0] {
		t.PDDMs = &box[0]
	}
	if ok[1] {
		t.SetupMs = &box[1]
	}
	if ok[2] {
		t.DurationMs = &box[2]
	}
	if ok[3] {
		t.AuthWaitMs = &box[3]
	}
	return t
}

func (d *dialog) summary() Summary { return d.summaryWith(nil) }

// summaryWith is summary taking the timing box from b.
func (d *dialog) summaryWith(b *boxes) Summary {
	s := d.rowWith(b)
	if !d.firstFrame.IsZero() {
		s.Frame = d.firstFrame.String()
	}
	return s
}

// rowWith is summaryWith without Frame (EachRow's rows: the writer appends
// the pointer itself instead of a string made per row).
func (d *dialog) rowWith(b *boxes) Summary {
	s := Summary{
		CallID:    d.callID,
		MsgCount:  d.msgCount,
		CreatedAt: d.created,
		UpdatedAt: d.updated,
	}
	if d.msgCount > 1 {
		s.DurationSec = float64(d.updated.Sub(d.created).Milliseconds()) / 1000
	}
	if l := d.primary(); l != nil {
		s.State = l.effectiveState().String()
		s.Method = l.method
		s.FromUser, s.ToUser = l.fromUser, l.toUser
		s.Challenges = d.challenges()
	}
	if len(d.legs) > 1 {
		s.OtherLegs = make([]LegBrief, 0, len(d.legs)-1)
		for i, l := range d.legs {
			if i == int(d.prim) {
				continue
			}
			lb := LegBrief{Method: l.method, State: l.effectiveState().String(), Challenges: int(l.challenges)}
			if t := d.legFinal(i); t != nil {
				lb.FinalStatusCode = t.finalCode
			}
			s.OtherLegs = append(s.OtherLegs, lb)
		}
	}
	s.Timing = d.rowTiming(b)
	s.FinalStatusCode = int(d.finalCode)
	s.InputOrigin = d.firstOrigin.String()
	return s
}

func (d *dialog) detail(opt Options) Detail {
	det := Detail{Summary: d.summary(), TimingDetail: d.timing()}
	if _, reason, ok := d.finalStatus(); ok {
		det.FinalReason = reason
	}
	if l := d.primary(); l != nil {
		det.Family = l.family.String()
	}
	det.Legs = make([]LegView, 0, len(d.legs))
	for i, l := range d.legs {
		fc := 0
		if t := d.legFinal(i); t != nil {
			fc = t.finalCode
		}
		det.Legs = append(det.Legs, LegView{
			Tag: l.tag, Family: l.family.String(), Method: l.method,
			State:           l.effectiveState().String(),
			Primary:         i == int(d.prim),
			OnlyChalleng:    l.onlyChallenged(),
			FinalStatusCode: fc, Challenges: int(l.challenges),
			MsgCount: int(l.msgCount), CreatedAt: l.created.time(), UpdatedAt: l.updated.time(),
			FromUser: l.fromUser, ToUser: l.toUser,
			Forks:        forksOf(l.forks),
			ForksDropped: int(l.forksDropped),
			Transitions:  transitionViews(l.transitions), TransitionsDropped: int(l.transitionsDropped),
		})
	}
	if d.cause != nil {
		c := *d.cause
		if !c.frame.IsZero() {
			c.FrameRef = c.frame.String()
		}
		det.Termination = &c
	}
	det.RetransmittedNoResponse = []Unanswered{}
	for _, t := range d.txOrder {
		if t.reqCount > 1 && t.respCount == 0 && t.key.method != "ACK" {
			det.RetransmittedNoResponse = append(det.RetransmittedNoResponse, Unanswered{
				CSeq: t.key.cseq, Method: t.key.method, Branch: t.key.branch, Count: int(t.reqCount),
				First: t.firstReq.time(), Last: t.lastReq.time(), SpanMs: t.lastReq.time().Sub(t.firstReq.time()).Milliseconds(),
			})
		}
	}
	var rare dialogRare
	if d.rare != nil {
		rare = *d.rare
	}
	dtmf := rare.dtmf
	det.InfoDTMF = make([]DTMF, 0, len(dtmf))
	for _, e := range dtmf {
		x := DTMF{At: e.at, Digit: "x", DurationMs: e.duration}
		if opt.RevealDigits {
			x.Digit = e.digit
		}
		if !e.frame.IsZero() {
			x.Frame = e.frame.String()
		}
		det.InfoDTMF = append(det.InfoDTMF, x)
	}
	det.Malformed = int(d.malformed)
	det.Retained = len(d.msgs)
	det.Bounds = Bounds{
		MessagesNotRetained: int(d.msgsDropped), LegsDropped: int(d.legsDropped),
		TransactionsDropped: int(d.txDropped), IdentitiesNotRemember: int(rare.seenDropped),
		DTMFDropped: int(rare.dtmfDropped),
	}
	if !opt.NoMessages {
		if opt.Scratch != nil {
			views, msgs := opt.Scratch.messages(len(d.msgs))
			for i := range d.msgs {
				views[i] = d.messageInto(i, &msgs[i])
			}
			det.Messages = views
		} else {
			det.Messages = make([]Message, len(d.msgs))
			for i := range d.msgs {
				det.Messages[i] = d.message(i)
			}
		}
	}
	return det
}

// Lookup returns the row of one Call-ID.
func (s *Store) Lookup(callID string) (Summary, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.lookup(callID)
	if d == nil {
		return Summary{}, false
	}
	return d.summary(), true
}

// MarkInProgress completes a row for the end of the capture (end: the
// capture's latest packet, SIP or RTP; analysis.CaptureEnd): the row of an
// answered call still in progress (state InCall, no BYE) whose answer is
// not after end gets Ended false and DurationToCaptureEndMs, its answer to
// end. Any other row, and every row when end is zero, is left as it is.
// The row must be a copy the caller owns.
func (s *Store) MarkInProgress(r *Summary, end time.Time) {
	if end.IsZero() || r.State != InCall.String() {
		return
	}
	s.mu.RLock()
	d := s.lookup(r.CallID)
	var answered time.Time
	if d != nil {
		if l := d.primary(); l != nil && l.family == FamilyInvite {
			answered = l.answeredAt.time()
		}
	}
	s.mu.RUnlock()
	if answered.IsZero() || end.Before(answered) {
		return
	}
	ended := false
	ms := end.Sub(answered).Milliseconds()
	r.Ended, r.DurationToCaptureEndMs = &ended, &ms
}

// Get returns everything known about one Call-ID (digits masked).
func (s *Store) Get(callID string) (Detail, bool) { return s.GetWith(callID, Options{}) }

// GetWith returns everything known about one Call-ID.
func (s *Store) GetWith(callID string, opt Options) (Detail, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.lookup(callID)
	if d == nil {
		return Detail{}, false
	}
	det := d.detail(opt)
	s.icmp.into(&det)
	return det, true
}

// Order is a listing order.
type Order uint8

const (
	// ByCreated orders by created_at, then Call-ID (list_dialogs: the key
	// never moves).
	ByCreated Order = iota
	// ByUpdated orders by updated_at, then Call-ID (tail_dialogs).
	ByUpdated
)

func (o Order) key(s *Summary) time.Time {
	if o == ByUpdated {
		return s.UpdatedAt
	}
	return s.CreatedAt
}

func (o Order) cmp(a, b *Summary) int {
	if c := o.key(a).Compare(o.key(b)); c != 0 {
		return c
	}
	return strings.Compare(a.CallID, b.CallID)
}

// rowKey is a dialog's position in a listing.
type rowKey struct {
	at time.Time
	id string
	d  *dialog
}

func (o Order) cmpKey(a, b rowKey) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// keys returns every dialog's listing key, sorted. The read lock is held
// only to copy the keys: in created_at order from the store's index (no
// sort), in updated_at order from the recency list walked oldest first, so
// the sort meets rows already (nearly) in order.
func (s *Store) keys(o Order) []rowKey {
	if o != ByUpdated {
		s.mu.RLock()
		ds := s.created.merged(make([]*dialog, 0, s.created.len()))
		s.mu.RUnlock()
		keys := make([]rowKey, len(ds))
		for i, d := range ds {
			// created_at and the Call-ID never change: no lock needed
			keys[i] = rowKey{at: d.created, id: d.callID, d: d}
		}
		return keys
	}
	s.mu.RLock()
	keys := make([]rowKey, 0, s.byID.len())
	for d := s.lru.back(); d != nil; d = s.lru.before(d) {
		keys = append(keys, rowKey{at: d.updated, id: d.callID, d: d})
	}
	s.mu.RUnlock()
	slices.SortFunc(keys, o.cmpKey)
	return keys
}

// EachSummary calls fn with the rows of Summaries(o), one at a time, without
// building the whole list: rows are made a chunk at a time under the read
// lock, and fn runs with the lock released. It stops at fn's first error
// and returns it. A dialog evicted during the walk is skipped.
func (s *Store) EachSummary(o Order, fn func(*Summary) error) error {
	return s.eachRow(o, true, func(r *Summary, _ packet.FrameRef) error { return fn(r) })
}

// EachRow is EachSummary for a writer that writes the row's frame pointer
// itself, and keeps nothing of a row past fn (its timing values are
// overwritten by a later chunk's): in created_at order each row's Frame is left empty and fn gets
// the pointer it would hold (the zero FrameRef when Frame would be absent),
// so no string is made per row. A row may instead come with Frame set and
// a zero FrameRef (ByUpdated): the row's pointer is Frame when set, else
// the FrameRef.
func (s *Store) EachRow(o Order, fn func(*Summary, packet.FrameRef) error) error {
	return s.eachRow(o, false, fn)
}

// eachRow walks the rows for EachSummary (withFrame: Frame set) and EachRow.
// The rows' timing values come from shared blocks (boxes): for
// EachSummary, fresh ones, so a row a caller keeps keeps its values; for
// EachRow, one block reused chunk after chunk.
func (s *Store) eachRow(o Order, withFrame bool, fn func(*Summary, packet.FrameRef) error) error {
	if o == ByUpdated {
		// rows may move while they are read: Summaries sorts them again
		rows := s.Summaries(o)
		for i := range rows {
			// Frame stays set (EachRow's other form): this order is the
			// tail's, not a batch writer's
			if err := fn(&rows[i], packet.FrameRef{}); err != nil {
				return err
			}
		}
		return nil
	}
	// The created_at order is the index's (keys(ByCreated) without its
	// copy of every key: a reader's memory at the end of a run).
	s.mu.RLock()
	ds := s.created.merged(make([]*dialog, 0, s.created.len()))
	s.mu.RUnlock()
	rows := make([]Summary, 0, min(chunk, len(ds)))
	var refs []packet.FrameRef
	if !withFrame {
		refs = make([]packet.FrameRef, 0, min(chunk, len(ds)))
	}
	var b boxes
	var blk [][4]int64 // EachRow: one block of boxes, a chunk's, reused
	if !withFrame {
		blk = make([][4]int64, min(chunk, len(ds)))
	}
	for i := 0; i < len(ds); i += chunk {
		rows, refs = rows[:0], refs[:0]
		if !withFrame {
			b.free = blk
		}
		s.mu.RLock()
		for _, d := range ds[i:min(i+chunk, len(ds))] {
			if d.gone {
				continue
			}
			if withFrame {
				rows = append(rows, d.summaryWith(&b))
			} else {
				rows = append(rows, d.rowWith(&b))
				refs = append(refs, d.firstFrame)
			}
		}
		s.mu.RUnlock()
		for j := range rows {
			var ref packet.FrameRef
			if !withFrame {
				ref = refs[j]
			}
			if err := fn(&rows[j], ref); err != nil {
				return err
			}
		}
	}
	return nil
}

// Summaries returns every row, sorted.
func (s *Store) Summaries(o Order) []Summary {
	var ds []*dialog
	if o == ByUpdated {
		keys := s.keys(o)
		ds = make([]*dialog, len(keys))
		for i := range keys {
			ds[i] = keys[i].d
		}
	} else {
		s.mu.RLock()
		ds = s.created.merged(make([]*dialog, 0, s.created.len()))
		s.mu.RUnlock()
	}
	rows := make([]Summary, len(ds))
	n := 0
	var b boxes
	for i := 0; i < len(ds); i += chunk {
		s.mu.RLock()
		for _, d := range ds[i:min(i+chunk, len(ds))] {
			if !d.gone {
				rows[n] = d.summaryWith(&b)
				n++
			}
		}
		s.mu.RUnlock()
	}
	clear(rows[n:])
	rows = rows[:n]
	// a dialog updated between the two locks may have moved in
	// updated_at order
	if o == ByUpdated {
		slices.SortStableFunc(rows, func(a, b Summary) int { return o.cmp(&a, &b) })
	}
	return rows
}

// chunk is how many rows are built per read-lock hold, so a long listing
// never holds the writer off for long.
const chunk = 512

// CallIDs returns every Call-ID held, in created_at order.
func (s *Store) CallIDs() []string {
	keys := s.keys(ByCreated)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.id
	}
	return out
}

// Counts tallies the Call-IDs held by row state.
type Counts struct {
	// Total is the number of Call-IDs held.
	Total int
	// ByState counts rows per state name.
	ByState map[string]int
	// Active counts rows in an active state (Trying, Ringing, InCall,
	// Pending, Active, Transferring) updated at or after the given time.
	Active int
	// ActiveCalls counts the InCall rows among them.
	ActiveCalls int
}

// Count tallies the rows by state without building them. activeSince
// bounds Active (the active-idle window); the zero time counts every row in
// an active state.
func (s *Store) Count(activeSince time.Time) Counts {
	c := Counts{ByState: map[string]int{}}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for d := s.lru.front(); d != nil; d = s.lru.after(d) {
		c.Total++
		st := StateNone
		if l := d.primary(); l != nil {
			st = l.effectiveState()
		}
		c.ByState[st.String()]++
		switch st {
		case Trying, Ringing, InCall, Pending, Active, Transferring:
			if activeSince.IsZero() || !d.updated.Before(activeSince) {
				c.Active++
				if st == InCall {
					c.ActiveCalls++
				}
			}
		}
	}
	return c
}

// Cursor is a position in a listing: the sort timestamp and Call-ID of the
// last row returned. Its text form is "<RFC 3339>|<Call-ID>"; a bare
// timestamp (no Call-ID) pages strictly after that instant.
type Cursor struct {
	At     time.Time
	CallID string
	HasID  bool
}

// CursorLayout is the fixed-width UTC layout of a cursor's timestamp, so
// cursors compare correctly as text.
const CursorLayout = "2006-01-02T15:04:05.000000000Z"

// String renders the cursor.
func (c Cursor) String() string {
	s := c.At.UTC().Format(CursorLayout)
	if c.HasID {
		s += "|" + c.CallID
	}
	return s
}

var errCursor = errors.New("invalid cursor: want the next_cursor of an earlier page")

// ParseCursor reads "<RFC 3339>|<Call-ID>" or a bare RFC 3339 timestamp.
func ParseCursor(s string) (Cursor, error) {
	ts, id, hasID := strings.Cut(s, "|")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Cursor{}, errCursor
	}
	return Cursor{At: t, CallID: id, HasID: hasID}, nil
}

// after reports whether a row sorts strictly after the cursor.
func (c Cursor) after(o Order, s *Summary) bool {
	k := o.key(s)
	if !c.HasID {
		return k.After(c.At)
	}
	if k.Equal(c.At) {
		return s.CallID > c.CallID
	}
	return k.After(c.At)
}

// Query selects a page of rows.
type Query struct {
	Order Order
	// After, when set, starts the page strictly after this cursor.
	After *Cursor
	// Limit caps the rows returned; <= 0 returns every match.
	Limit int
	// Match, when set, keeps only the rows it accepts.
	Match func(*Summary) bool
}

// Page is one page of rows.
type Page struct {
	Rows []Summary
	// TotalMatched counts every row matching Query.Match, whatever the
	// cursor.
	TotalMatched int
	// More: rows remain after this page.
	More bool
	// Next is the cursor of the last row returned (valid when More).
	Next Cursor
}

// List returns a page of rows in the query's order. The read lock is taken
// in short holds: once to copy the listing keys, then per chunk of rows
// built.
func (s *Store) List(q Query) Page {
	keys := s.keys(q.Order)
	var p Page
	if q.Match == nil {
		start := 0
		if q.After != nil {
			start, _ = slices.BinarySearchFunc(keys, *q.After, func(k rowKey, c Cursor) int {
				if r := k.at.Compare(c.At); r != 0 {
					return r
				}
				if !c.HasID {
					return -1 // every row at the cursor's instant is behind it
				}
				if k.id <= c.CallID {
					return -1
				}
				return 1
			})
		}
		end := len(keys)
		if q.Limit > 0 && start+q.Limit < end {
			end = start + q.Limit
		}
		s.mu.RLock()
		for _, k := range keys[start:end] {
			if !k.d.gone {
				p.Rows = append(p.Rows, k.d.summary())
			}
		}
		s.mu.RUnlock()
		p.TotalMatched = len(keys)
		p.More = end < len(keys)
	} else {
		for i := 0; i < len(keys); i += chunk {
			s.mu.RLock()
			for _, k := range keys[i:min(i+chunk, len(keys))] {
				if k.d.gone {
					continue
				}
				r := k.d.summary()
				if !q.Match(&r) {
					continue
				}
				p.TotalMatched++
				if q.After != nil && !q.After.after(q.Order, &r) {
					continue
				}
				if q.Limit > 0 && len(p.Rows) >= q.Limit {
					p.More = true
					continue
				}
				p.Rows = append(p.Rows, r)
			}
			s.mu.RUnlock()
		}
	}
	if p.More && len(p.Rows) > 0 {
		last := &p.Rows[len(p.Rows)-1]
		p.Next = Cursor{At: q.Order.key(last), CallID: last.CallID, HasID: true}
	}
	return p
}

func transitionViews(ts []transition) []Transition {
	out := make([]Transition, len(ts))
	for i := range ts {
		out[i] = ts[i].view()
	}
	return out
}

// forksOf copies a leg's forks out as readers see them (an empty list, not
// nil, when none).
func forksOf(fs []fork) []Fork {
	out := make([]Fork, len(fs))
	for i := range fs {
		out[i] = Fork{Tag: fs[i].tag, Messages: int(fs[i].messages), LastStatus: int(fs[i].lastStatus)}
	}
	return out
}
