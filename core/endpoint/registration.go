package endpoint

import (
	"net/netip"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
)

// Registration is one Call-ID's registration as core/analysis judges it
// (registration_failure and auth_loop, engine.md §11), with what the
// REGISTER transactions measured around it. It is built once here and
// read by describe_endpoint (per dialog) and diagnose_registration.
type Registration struct {
	// Applicable: the Call-ID carries a REGISTER request.
	Applicable bool
	// Requests counts the REGISTER transactions whose request was captured.
	Requests int
	// FinalStatusCode is the final response of the last REGISTER
	// transaction answered (a 401/407 counts); 0 when none was answered.
	FinalStatusCode int
	// Succeeded: a REGISTER got a 2xx.
	Succeeded bool
	// RequestedExpirySec and GrantedExpirySec are what the last answered
	// REGISTER asked for and its 2xx granted (RFC 3261 §10.2.1: the
	// Contact's expires parameter, else the Expires header; §10.3: the
	// 2xx's Contact); nil when not stated.
	RequestedExpirySec, GrantedExpirySec *int64
	// AuthLoop is core/analysis' auth loop on a REGISTER leg; nil when
	// none.
	AuthLoop *analysis.AuthLoop
	// Failure is core/analysis' registration_failure; nil when none.
	Failure *analysis.RegistrationFailure
	// Hints are core/analysis' signaling hints for the dialog.
	Hints []string
	// NotJudged lists detections the capture could not decide.
	NotJudged []analysis.NotJudged
	// MessagesNotRead counts messages past the retention cap.
	MessagesNotRead int
	// Contact is the first REGISTER's Contact against its source; the
	// zero value when no REGISTER request was captured.
	Contact ContactObservation
	// AoR is the first REGISTER's To user (the address of record), the
	// tie to later requests; RegisteredAt when it was sent.
	AoR          string
	RegisteredAt time.Time
	hasContact   bool
}

// HasContact reports whether a REGISTER request was read for Contact.
func (r *Registration) HasContact() bool { return r.hasContact }

// Problem: the registration failed or looped on authentication.
func (r *Registration) Problem() bool { return r.Failure != nil || r.AuthLoop != nil }

// IsAuthLoop: challenged in a loop, as the failure or the auth loop says.
func (r *Registration) IsAuthLoop() bool {
	return r.AuthLoop != nil || r.Failure != nil && r.Failure.Kind == analysis.RegistrationAuthLoop
}

// JudgeRegistration reads one Call-ID's REGISTER transactions and runs
// core/analysis' signaling diagnosis on it (registration_failure and
// auth_loop are computed there, never here). det must carry its messages.
func JudgeRegistration(det *dialog.Detail, opts analysis.Options) Registration {
	var r Registration
	facts := analysis.FactsFrom(*det)
	var last *dialog.TxFacts
	for i := range facts.Signaling.Transactions {
		t := &facts.Signaling.Transactions[i]
		if t.Method != "REGISTER" || t.Requests == 0 {
			continue
		}
		r.Applicable = true
		r.Requests++
		if t.FinalCode >= 200 && t.FinalCode < 300 {
			r.Succeeded = true
		}
		if t.FinalCode != 0 && (last == nil || !t.FinalAt.Before(last.FinalAt)) {
			last = t
		}
	}
	if !r.Applicable {
		return r
	}
	if last != nil {
		r.FinalStatusCode = last.FinalCode
		if last.RequestedExpiry >= 0 {
			v := last.RequestedExpiry
			r.RequestedExpirySec = &v
		}
		if last.GrantedExpiry >= 0 && last.FinalCode >= 200 && last.FinalCode < 300 {
			v := last.GrantedExpiry
			r.GrantedExpirySec = &v
		}
	}
	s, nj := analysis.DiagnoseSignaling(facts, opts)
	r.NotJudged = nj
	if s != nil {
		r.Failure = s.RegistrationFailure
		if s.AuthLoop != nil && s.AuthLoop.Method == "REGISTER" {
			r.AuthLoop = s.AuthLoop
		}
		r.Hints = s.Hints
		r.MessagesNotRead = s.MessagesNotRead
	}
	for i := range det.Messages {
		m := &det.Messages[i]
		if m.Msg == nil || !m.Msg.IsRequest || m.Msg.Method != "REGISTER" {
			continue
		}
		r.Contact = ObserveContact(m.Msg, m.Src.Addr())
		r.AoR = m.Msg.To.User
		r.RegisteredAt = m.TS
		r.hasContact = true
		break
	}
	return r
}

// LaterRequests counts the requests, other than REGISTER, sent to the AoR
// (their To user, compared exactly: RFC 3261 §19.1.4 makes the user part
// case-sensitive) after the REGISTER, by where they went: to the Contact
// host, or to the address the REGISTER came from. A request sent to a
// third address (a proxy, another leg) says nothing and is not counted.
// next yields each dialog's retained messages in turn.
func LaterRequests(o ContactObservation, aor string, after time.Time, next func(fn func([]dialog.Message))) (toContact, toSource int) {
	if aor == "" {
		return 0, 0
	}
	next(func(msgs []dialog.Message) {
		for i := range msgs {
			m := &msgs[i]
			if m.Msg == nil || !m.Msg.IsRequest || m.Msg.Method == "REGISTER" || m.Msg.To.User != aor || m.TS.Before(after) {
				continue
			}
			// A Contact naming the source itself counts in both: the
			// request went where the header said, which is where the
			// REGISTER came from.
			dst := m.Dst.Addr().Unmap()
			if o.contact.IsValid() && dst == o.contact {
				toContact++
			}
			if o.source.IsValid() && dst == o.source {
				toSource++
			}
		}
	})
	return toContact, toSource
}

// ContactAddr is the Contact host's address; invalid for a name.
func (o ContactObservation) ContactAddr() netip.Addr { return o.contact }
