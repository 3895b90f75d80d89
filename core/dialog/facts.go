package dialog

// This file reads the transaction-level facts the signaling diagnosis needs
// (challenges and credentials, REGISTER expiry asked and granted, requests
// retransmitted without a response, ACKs after a 2xx, CANCELs) out of a
// Detail's retained messages. It reads exported data only and changes
// nothing in the store.

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/sip"
)

// Timers the signaling diagnosis measures against the end of the capture
// (RFC 3261 §17, T1 = 500 ms): they are thresholds, not transaction
// machines.
const (
	// TimerH is how long a UAS retransmits a 2xx waiting for its ACK
	// (64*T1); an ACK still missing after it will not come.
	TimerH = 32 * time.Second
	// TimerC is how long a proxy waits for a final response to an INVITE
	// before giving up on it.
	TimerC = 180 * time.Second
)

// maxFactIndexes bounds the message indexes a transaction keeps per list;
// the counts beside them stay exact.
const maxFactIndexes = 16

// maxFactText bounds the sender-written header text kept (Reason, Warning).
const maxFactText = sip.MaxCauseChars

// TxFacts is one transaction of a Call-ID as its retained messages show it:
// the request (all its copies) and the responses tied to it by CSeq number,
// CSeq method and top Via branch. Times are zero and indexes -1 when the
// message was not seen.
type TxFacts struct {
	// Leg is the index of the leg in Detail.Legs (-1: joined none).
	Leg int
	// Method is the CSeq method, upper-cased; CSeq its number; Branch the
	// top Via branch.
	Method string
	CSeq   uint32
	Branch string
	// InDialog: the request carried a To tag (a re-INVITE or another
	// in-dialog request).
	InDialog bool

	// Requests counts the copies of the request (retransmissions
	// included); 0 when the request was not captured.
	Requests       int
	FirstRequestAt time.Time
	LastRequestAt  time.Time
	// RequestIndexes are the message indexes of the first copies (at most
	// 16).
	RequestIndexes []int
	// Authorized: a copy carried Authorization or Proxy-Authorization.
	Authorized bool
	// Unregister: a REGISTER removing bindings (Expires: 0, Contact: *, or
	// every Contact with expires=0).
	Unregister bool
	// RequestedExpiry is the expiry a REGISTER or SUBSCRIBE asked for, in
	// seconds (the first Contact's expires parameter, else Expires); -1
	// when the request named none.
	RequestedExpiry int64
	// requestContact is the URI of the request's first Contact.
	requestContact string

	// Responses counts every response (copies included).
	Responses int
	// FirstProvisionalAt is the first 1xx; FirstRingingAt the first 18x;
	// RingingIndex the index of that 18x.
	FirstProvisionalAt time.Time
	FirstRingingAt     time.Time
	RingingIndex       int
	// Challenges counts 401/407 responses (copies excluded);
	// ChallengeIndexes are their message indexes (at most 16).
	Challenges       int
	ChallengeIndexes []int

	// FinalCode is the final response that decided the transaction (the
	// first final response, or a 2xx arriving after a failure); 0 when none
	// arrived. A 401/407 counts as final here.
	FinalCode   int
	FinalReason string
	FinalAt     time.Time
	FinalIndex  int
	// FinalCopies counts copies of that final response (a 2xx the UAS
	// retransmits until its ACK arrives); FinalIndexes are their indexes
	// (at most 16).
	FinalCopies  int
	FinalIndexes []int
	// FinalReasonHeader and FinalWarning are the Reason and Warning header
	// values of the deciding response, as sent (at most 200 characters);
	// empty when absent.
	FinalReasonHeader string
	FinalWarning      string
	// GrantedExpiry is the expiry a 2xx to a REGISTER or SUBSCRIBE granted,
	// in seconds (the Contact matching the request's, else the only
	// Contact, else Expires); -1 when it named none.
	GrantedExpiry int64
}

// SignalingFacts are the transactions of one Call-ID, in order of first
// sight, read from its retained messages.
type SignalingFacts struct {
	// Read is false when the Detail carried no messages (read with
	// NoMessages while the dialog retained some): nothing below was looked
	// at.
	Read bool
	// NotRetained counts messages past the per-dialog retention cap: the
	// facts cover the retained messages only.
	NotRetained int
	// Transactions are every transaction seen, in order of first sight.
	Transactions []TxFacts
}

// SignalingFactsOf reads the transactions of a Detail's retained messages.
func SignalingFactsOf(det *Detail) SignalingFacts {
	sf := SignalingFacts{NotRetained: det.Bounds.MessagesNotRetained}
	if len(det.Messages) == 0 && det.Retained > 0 {
		return sf
	}
	sf.Read = true
	type key struct {
		branch string
		cseq   uint32
		method string
	}
	// A dialog holds a few transactions: they are searched linearly, and
	// indexed in a map (bounded by the retained messages) past smallTxs.
	var index map[key]int
	find := func(k key) (int, bool) {
		if index != nil {
			i, ok := index[k]
			return i, ok
		}
		for i := range sf.Transactions {
			if t := &sf.Transactions[i]; t.CSeq == k.cseq && t.Method == k.method && t.Branch == k.branch {
				return i, true
			}
		}
		return 0, false
	}
	sf.Transactions = make([]TxFacts, 0, min(len(det.Messages)/2+1, smallTxs))
	for i := range det.Messages {
		msg := &det.Messages[i]
		m := msg.Msg
		if m == nil || !m.CSeq.Valid {
			continue
		}
		method := m.CSeq.Method
		if !isUpper(method) {
			method = strings.ToUpper(method)
		}
		k := key{branch: m.TopBranch(), cseq: m.CSeq.Number, method: method}
		ti, ok := find(k)
		if !ok {
			ti = len(sf.Transactions)
			sf.Transactions = append(sf.Transactions, TxFacts{
				Leg: msg.Leg, Method: k.method, CSeq: k.cseq, Branch: k.branch,
				RequestedExpiry: -1, GrantedExpiry: -1, RingingIndex: -1, FinalIndex: -1,
			})
			if index != nil {
				index[k] = ti
			} else if len(sf.Transactions) > smallTxs {
				index = make(map[key]int, 2*smallTxs)
				for j := range sf.Transactions {
					t := &sf.Transactions[j]
					index[key{branch: t.Branch, cseq: t.CSeq, method: t.Method}] = j
				}
			}
		}
		t := &sf.Transactions[ti]
		if m.IsRequest {
			t.request(msg)
		} else {
			t.response(msg)
		}
	}
	return sf
}

func (t *TxFacts) request(msg *Message) {
	m := msg.Msg
	if t.Requests == 0 {
		t.FirstRequestAt = msg.TS
		t.InDialog = m.To.Tag != ""
		if t.Method == "REGISTER" || t.Method == "SUBSCRIBE" {
			t.RequestedExpiry, t.requestContact = requestedExpiry(m)
		}
		if t.Method == "REGISTER" {
			// a first Contact or Expires asking for time cannot remove
			// every binding, unless the Contact is "*"
			t.Unregister = t.requestContact == "*" || t.RequestedExpiry <= 0 && expiresZero(m)
		}
	}
	t.Requests++
	if msg.TS.After(t.LastRequestAt) {
		t.LastRequestAt = msg.TS
	}
	t.RequestIndexes = addIndex(t.RequestIndexes, msg.Index)
	if _, ok := m.Header(sip.HdrAuthorization); ok {
		t.Authorized = true
	} else if _, ok := m.Header(sip.HdrProxyAuthorization); ok {
		t.Authorized = true
	}
}

func (t *TxFacts) response(msg *Message) {
	m := msg.Msg
	t.Responses++
	code := m.StatusCode
	switch {
	case code >= 100 && code < 200:
		if t.FirstProvisionalAt.IsZero() {
			t.FirstProvisionalAt = msg.TS
		}
		if code >= 180 && t.FirstRingingAt.IsZero() {
			t.FirstRingingAt, t.RingingIndex = msg.TS, msg.Index
		}
		return
	case code < 100 || code > 699:
		return
	}
	if (code == 401 || code == 407) && !msg.Retransmission {
		t.Challenges++
		t.ChallengeIndexes = addIndex(t.ChallengeIndexes, msg.Index)
	}
	if t.FinalCode != 0 && code == t.FinalCode {
		t.FinalCopies++
		t.FinalIndexes = addIndex(t.FinalIndexes, msg.Index)
		return
	}
	// The first final response decides, except that a 2xx after a failure
	// (another branch answered) replaces it.
	if t.FinalCode != 0 && !(code < 300 && t.FinalCode >= 300) {
		return
	}
	t.FinalCode, t.FinalReason, t.FinalAt, t.FinalIndex = code, m.Reason, msg.TS, msg.Index
	t.FinalCopies, t.FinalIndexes = 1, addIndex(nil, msg.Index)
	t.FinalReasonHeader, t.FinalWarning = "", ""
	if v, ok := m.Header(sip.HdrReason); ok {
		t.FinalReasonHeader = capText(v)
	}
	if v, ok := m.Header(sip.HdrWarning); ok {
		t.FinalWarning = capText(v)
	}
	if code < 300 && (t.Method == "REGISTER" || t.Method == "SUBSCRIBE") {
		t.GrantedExpiry = grantedExpiry(m, t.requestContact)
	}
}

func isUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' {
			return false
		}
	}
	return true
}

func addIndex(l []int, i int) []int {
	if len(l) >= maxFactIndexes {
		return l
	}
	return append(l, i)
}

func capText(s string) string {
	n := 0
	for i := range s {
		if n == maxFactText {
			return s[:i]
		}
		n++
	}
	return s
}

// contacts returns the Contact entries of a message as (URI, parameters).
func contacts(m *sip.Message) [][2]string {
	var out [][2]string
	for _, v := range m.HeaderValues(sip.HdrContact) {
		for _, c := range sip.SplitList(v) {
			na, err := sip.ParseNameAddr(c)
			if err != nil && na.URI == "" {
				continue
			}
			out = append(out, [2]string{na.URI, na.Params})
		}
	}
	return out
}

// expiresValue reads an expires value in seconds; -1 when absent or not a
// number.
func expiresValue(v string) int64 {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 10 {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxUint32 {
		return -1
	}
	return n
}

// requestedExpiry is what a REGISTER or SUBSCRIBE asks for: its first
// Contact's expires parameter, else its Expires header (-1: neither).
func requestedExpiry(m *sip.Message) (int64, string) {
	uri := ""
	if c, ok := m.Contact(); ok {
		uri = c.URI
		if v, ok := sip.ParamValue(c.Params, "expires"); ok {
			if n := expiresValue(v); n >= 0 {
				return n, uri
			}
		}
	}
	if v, ok := m.Header(sip.HdrExpires); ok {
		return expiresValue(v), uri
	}
	return -1, uri
}

// grantedExpiry is what a 2xx granted: the expires parameter of the Contact
// matching the request's (a registrar lists every binding of the
// address-of-record), else of the only Contact, else the Expires header
// (-1: none).
func grantedExpiry(m *sip.Message, requestContact string) int64 {
	if c, ok := m.Contact(); ok && requestContact != "" && strings.EqualFold(c.URI, requestContact) {
		// the common case: the first binding listed is the one asked for
		if v, ok := sip.ParamValue(c.Params, "expires"); ok {
			if n := expiresValue(v); n >= 0 {
				return n
			}
		}
	}
	cs := contacts(m)
	pick := -1
	for i, c := range cs {
		if requestContact != "" && strings.EqualFold(c[0], requestContact) {
			pick = i
			break
		}
	}
	if pick < 0 && len(cs) == 1 {
		pick = 0
	}
	if pick >= 0 {
		if v, ok := sip.ParamValue(cs[pick][1], "expires"); ok {
			if n := expiresValue(v); n >= 0 {
				return n
			}
		}
	}
	if v, ok := m.Header(sip.HdrExpires); ok {
		return expiresValue(v)
	}
	return -1
}

// LastMessageAt returns the time of the latest SIP message held (zero when
// the store is empty): the end of the capture as far as signaling goes.
func (s *Store) LastMessageAt() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var last time.Time
	for d := range s.byID.all() {
		if d.updated.After(last) {
			last = d.updated
		}
	}
	return last
}
