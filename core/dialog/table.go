package dialog

// Cell is one entry of the transition table: the state after the arrival and
// why. Every cell carries a reason, the no-ops included, so a reader can
// disagree with a specific rule rather than with an absence.
type Cell struct {
	Next   State
	Change bool // Next differs from the current state
	Reason string
}

// table is the dense transition table, keyed (family, arrival, state). It is
// total: init fills every cell from decide, and TestTableTotal checks that no
// cell is empty.
var table [familyCount][arrivalCount][stateCount]Cell

func init() {
	for f := Family(0); f < familyCount; f++ {
		for a := Arrival(0); a < arrivalCount; a++ {
			for s := State(0); s < stateCount; s++ {
				c := decide(f, a, s)
				c.Change = c.Next != s
				table[f][a][s] = c
			}
		}
	}
}

// Decide returns the table cell for an arrival in a leg of family f
// currently in state s.
func Decide(f Family, a Arrival, s State) Cell {
	if f >= familyCount || a >= arrivalCount || s >= stateCount {
		return Cell{Next: s, Reason: "out of range: no such family, arrival or state"}
	}
	return table[f][a][s]
}

func to(s State, reason string) Cell   { return Cell{Next: s, Reason: reason} }
func stay(s State, reason string) Cell { return Cell{Next: s, Reason: reason} }

// foreign reports whether a state never occurs in a leg of family f. The
// table still answers for such cells (a capture is hostile input and the
// function is total), with a reason saying so.
func foreign(f Family, s State) bool {
	switch f {
	case FamilyInvite:
		switch s {
		case Registered, Expired, Pending, Active, Terminated:
			return true
		}
	case FamilyRegister:
		switch s {
		case StateNone, Trying, Registered, Failed, Expired:
			return false
		}
		return true
	case FamilySubscribe:
		switch s {
		case StateNone, Trying, Pending, Active, Terminated, Failed:
			return false
		}
		return true
	case FamilyGeneric:
		switch s {
		case StateNone, Trying, Completed, Failed:
			return false
		}
		return true
	}
	return false
}

// decide is the rule set behind the table. It reads only its arguments.
func decide(f Family, a Arrival, s State) Cell {
	if foreign(f, s) {
		article := "a "
		if f == FamilyInvite {
			article = "an "
		}
		return stay(s, article+f.String()+" dialog never enters this state; nothing changes")
	}
	switch f {
	case FamilyInvite:
		return inviteCell(a, s)
	case FamilyRegister:
		return registerCell(a, s)
	case FamilySubscribe:
		return subscribeCell(a, s)
	default:
		return genericCell(a, s)
	}
}

// undecided: the INVITE has no outcome yet.
func undecided(s State) bool { return s == StateNone || s == Trying || s == Ringing }

// up: the call is answered and not ended.
func up(s State) bool { return s == InCall || s == Transferring }

func inviteCell(a Arrival, s State) Cell {
	if a.IsResponse() {
		t, st, _ := a.Response()
		return inviteResponse(t, st, s)
	}
	switch a {
	case ReqInvite:
		switch {
		case s == StateNone:
			return to(Trying, "INVITE opens the call")
		case undecided(s):
			return stay(s, "another INVITE while the call is being set up belongs to the same attempt")
		case up(s):
			return stay(s, "an INVITE without a To tag cannot change an answered call (a repeated or forked attempt)")
		default:
			return to(Trying, "a new INVITE after the outcome starts a new attempt (retry after redirect, 422, 491 or cancellation)")
		}
	case ReqReInvite:
		switch {
		case s == StateNone:
			return to(InCall, "a re-INVITE proves a confirmed dialog: the capture began mid-call")
		case undecided(s):
			return to(InCall, "a re-INVITE proves the dialog was confirmed; its 2xx was not captured")
		case up(s):
			return stay(s, "a re-INVITE renegotiates the session; the call stays up")
		default:
			return stay(s, "a re-INVITE after the call ended does not revive it")
		}
	case ReqAck:
		if s == StateNone {
			return to(InCall, "an ACK seeds a call: the capture began after the answer")
		}
		return stay(s, "an ACK confirms a final response already accounted for")
	case ReqBye:
		switch {
		case s == StateNone:
			return to(Completed, "a BYE seeds a call that is ending: the capture began mid-call")
		case undecided(s), up(s):
			return to(Completed, "BYE ends the call")
		case s == Completed:
			return stay(s, "the call already ended; another BYE adds nothing")
		default:
			return stay(s, "the attempt already has an outcome; a BYE cannot change it")
		}
	case ReqCancel:
		switch {
		case s == StateNone:
			return to(Cancelled, "a CANCEL seeds a call being abandoned: its INVITE was not captured")
		case undecided(s):
			return to(Cancelled, "CANCEL abandons the attempt (a 2xx that beat it still answers the call)")
		case up(s):
			return stay(s, "a late CANCEL cannot un-answer a call")
		default:
			return stay(s, "the attempt already has an outcome; a CANCEL changes nothing")
		}
	case ReqPrack:
		if s == StateNone {
			return to(Ringing, "a PRACK seeds a call in its early phase: it acknowledges a reliable provisional response")
		}
		return stay(s, "PRACK acknowledges a provisional response; the state is unchanged")
	case ReqUpdate, ReqInfo:
		if s == StateNone {
			return stay(s, "UPDATE and INFO never open an INVITE dialog (they seed a generic one)")
		}
		return stay(s, "UPDATE and INFO work inside the call; the state is unchanged")
	case ReqRefer:
		if s == InCall {
			return to(Transferring, "REFER asks the peer to transfer the call")
		}
		return stay(s, "a REFER outside an established call starts no transfer")
	case ReqNotifyTerminated:
		if s == Transferring {
			return to(InCall, "the transfer's implicit subscription ended (RFC 3515): the call carries on until its BYE")
		}
		return stay(s, "a NOTIFY in a call reports event state, not call state")
	case ReqNotifyActive, ReqNotifyPending, ReqNotify:
		return stay(s, "a NOTIFY in a call reports event state, not call state")
	default: // SUBSCRIBE, REGISTER, other
		return stay(s, "this request opens its own transaction and decides no call")
	}
}

func inviteResponse(t Tx, st Status, s State) Cell {
	switch t {
	case TxInvite:
		return inviteFinal(st, s)
	case TxReInvite:
		switch {
		case s == StateNone:
			return to(InCall, "a response to a re-INVITE seeds a confirmed call")
		case undecided(s) && st == S2xx:
			return to(InCall, "a re-INVITE's 2xx proves the dialog was confirmed")
		case st == S2xx:
			return stay(s, "a 2xx to a re-INVITE confirms a session change, not the call state")
		case st >= S3xx:
			return stay(s, "a rejected re-INVITE leaves the call as it was")
		default:
			return stay(s, "a provisional answer to a re-INVITE changes nothing")
		}
	case TxBye:
		switch {
		case s == StateNone:
			return to(Completed, "a response to BYE seeds a call that has ended")
		case st == S2xx && (undecided(s) || up(s)):
			return to(Completed, "2xx to BYE ends the call even when the BYE was not captured")
		case st == S2xx && s == Completed:
			return stay(s, "the call already ended; the answer to its BYE adds nothing")
		case st == S2xx:
			return stay(s, "the attempt already has an outcome; the answer to a BYE cannot change it")
		default:
			return stay(s, "a provisional or failed answer to a BYE changes nothing (the BYE itself ends the call)")
		}
	case TxCancel:
		switch {
		case s == StateNone:
			return to(Cancelled, "a response to CANCEL seeds a call being abandoned")
		case st == S2xx:
			return stay(s, "2xx to CANCEL only confirms the CANCEL arrived; it does not answer the call")
		default:
			return stay(s, "an answer to a CANCEL decides nothing; the INVITE's final response does")
		}
	case TxPrack:
		if s == StateNone {
			return to(Ringing, "a response to PRACK seeds a call in its early phase")
		}
		return stay(s, "an answer to PRACK changes nothing")
	case TxRefer:
		switch {
		case st == S2xx && s == InCall:
			return to(Transferring, "the REFER was accepted: the transfer is under way")
		case st >= S3xx && s == Transferring && st != SChallenge:
			return to(InCall, "the REFER was refused: the call continues")
		default:
			return stay(s, "this answer to a REFER moves no transfer")
		}
	case TxNone:
		return stay(s, "a response without a parseable CSeq names no transaction")
	default: // UPDATE/INFO, REGISTER, SUBSCRIBE, NOTIFY, other
		if s == StateNone {
			return stay(s, "this response's transaction never opens an INVITE dialog")
		}
		return stay(s, "an answer to a transaction other than the INVITE decides nothing about the call")
	}
}

func inviteFinal(st Status, s State) Cell {
	switch st {
	case S100:
		if s == StateNone {
			return to(Trying, "a 100 Trying seeds a call being set up: its INVITE was not captured")
		}
		return stay(s, "100 Trying is hop-by-hop and changes nothing")
	case S18x:
		switch {
		case s == StateNone || s == Trying:
			return to(Ringing, "a 18x provisional response: the callee is alerting")
		case s == Ringing:
			return stay(s, "already ringing")
		case up(s):
			return stay(s, "a late provisional response cannot un-answer a call")
		default:
			return stay(s, "a provisional response after the outcome does not reopen the attempt")
		}
	case S1xx:
		if s == StateNone {
			return to(Trying, "a provisional response seeds a call being set up")
		}
		return stay(s, "a provisional response other than 18x carries no alerting")
	case S2xx:
		switch {
		case undecided(s):
			return to(InCall, "2xx to INVITE answers the call")
		case s == Cancelled:
			return to(InCall, "a 2xx that beat the CANCEL answers the call (RFC 3261 §9.1)")
		case s == Failed || s == Redirected:
			return to(InCall, "a 2xx after a failure means another branch answered: the call is up")
		case up(s):
			return stay(s, "another 2xx (a retransmission or a second branch) keeps the call up")
		default: // Completed
			return stay(s, "a 2xx to INVITE after the call ended is a late retransmission")
		}
	case S3xx:
		switch {
		case undecided(s):
			return to(Redirected, "3xx redirects the call")
		case up(s):
			return stay(s, "a late redirect cannot un-answer a call")
		default:
			return stay(s, "the attempt already has an outcome")
		}
	case SChallenge:
		switch {
		case s == StateNone:
			return to(Trying, "a challenge seeds a call being set up; challenges are intermediate")
		case undecided(s):
			return stay(s, "a challenge is intermediate: the caller retries with credentials (the call reads Failed only if nothing follows)")
		default:
			return stay(s, "a challenge after the outcome changes nothing")
		}
	case S487:
		switch {
		case undecided(s):
			return to(Cancelled, "487 Request Terminated: the attempt was cancelled")
		case s == Cancelled:
			return stay(s, "487 confirms the cancellation")
		case up(s):
			return stay(s, "a late 487 cannot un-answer a call")
		default:
			return stay(s, "the attempt already has an outcome")
		}
	default: // SFail
		switch {
		case undecided(s):
			return to(Failed, "a 4xx-6xx final response fails the call")
		case s == Cancelled:
			return stay(s, "the attempt was already cancelled")
		case up(s):
			return stay(s, "a failure from another branch or a late response cannot un-answer a call")
		default:
			return stay(s, "the attempt already has an outcome")
		}
	}
}

func registerCell(a Arrival, s State) Cell {
	if !a.IsResponse() {
		if a != ReqRegister {
			if s == StateNone {
				return stay(s, "only REGISTER opens a registration")
			}
			return stay(s, "a request other than REGISTER does not change a registration")
		}
		switch s {
		case StateNone:
			return to(Trying, "REGISTER opens a registration")
		case Trying:
			return stay(s, "another REGISTER while one is pending (a retry or credentials) waits for its answer")
		case Registered:
			return stay(s, "a refresh keeps the binding until the registrar answers")
		default: // Failed, Expired
			return to(Trying, "a new REGISTER is a new attempt")
		}
	}
	t, st, _ := a.Response()
	if t != TxRegister && t != TxUnregister {
		if s == StateNone {
			return stay(s, "only a REGISTER transaction opens a registration")
		}
		return stay(s, "an answer to a transaction that is not a REGISTER changes no registration")
	}
	if t == TxUnregister && st == S2xx {
		if s == Expired {
			return stay(s, "the binding is already removed")
		}
		return to(Expired, "2xx to a REGISTER with expiry 0 removes the binding")
	}
	switch st {
	case S100, S18x, S1xx:
		if s == StateNone {
			return to(Trying, "a provisional response seeds a registration in progress")
		}
		return stay(s, "a provisional response binds nothing yet")
	case S2xx:
		if s == Registered {
			return stay(s, "a refresh was accepted; the binding stands")
		}
		return to(Registered, "2xx to REGISTER: the binding is in place")
	case SChallenge:
		switch s {
		case StateNone:
			return to(Trying, "a challenge seeds a registration in progress; challenges are intermediate")
		case Trying:
			return stay(s, "a challenge is intermediate: the client re-registers with credentials (reads Failed only if nothing follows)")
		case Registered:
			return stay(s, "a challenged refresh leaves the standing binding")
		default:
			return stay(s, "a challenge after the outcome changes nothing")
		}
	default: // S3xx, S487, SFail
		switch s {
		case StateNone, Trying:
			return to(Failed, "the registrar refused the binding")
		case Registered:
			return to(Failed, "the registrar refused the refresh: the registration follows its last transaction (the earlier binding is not renewed, RFC 3261 §10.3)")
		default:
			return stay(s, "the registration already has an outcome")
		}
	}
}

func subscribeCell(a Arrival, s State) Cell {
	if a.IsResponse() {
		t, st, _ := a.Response()
		switch t {
		case TxSubscribe:
			return subscribeResponse(st, s)
		case TxNotify:
			if s == StateNone {
				return to(Active, "an answered NOTIFY seeds a running subscription")
			}
			return stay(s, "an answer to a NOTIFY changes nothing")
		default:
			if s == StateNone {
				return stay(s, "this response's transaction never opens a subscription")
			}
			return stay(s, "an answer to a transaction other than SUBSCRIBE or NOTIFY changes no subscription")
		}
	}
	switch a {
	case ReqSubscribe:
		switch s {
		case StateNone:
			return to(Trying, "SUBSCRIBE opens a subscription")
		case Terminated, Failed:
			return to(Trying, "a new SUBSCRIBE after the end is a new attempt")
		default:
			return stay(s, "a refresh or retry waits for its answer or NOTIFY")
		}
	case ReqNotifyActive:
		switch s {
		case StateNone, Trying, Pending:
			return to(Active, "NOTIFY with Subscription-State active: the subscription is running")
		case Active:
			return stay(s, "the subscription is already active")
		default:
			return stay(s, "a NOTIFY after the end does not revive the subscription")
		}
	case ReqNotifyPending:
		switch s {
		case StateNone, Trying, Active:
			return to(Pending, "NOTIFY with Subscription-State pending: awaiting authorization")
		case Pending:
			return stay(s, "the subscription is already pending")
		default:
			return stay(s, "a NOTIFY after the end does not revive the subscription")
		}
	case ReqNotifyTerminated:
		switch s {
		case Terminated:
			return stay(s, "the subscription already ended")
		case Failed:
			return stay(s, "the subscription was refused; a terminating NOTIFY changes nothing")
		default:
			return to(Terminated, "NOTIFY with Subscription-State terminated ends the subscription")
		}
	case ReqNotify:
		switch s {
		case StateNone, Trying:
			return to(Active, "a NOTIFY proves the subscription exists (RFC 6665 §4.1.2)")
		default:
			return stay(s, "a NOTIFY without a known Subscription-State changes nothing")
		}
	default:
		if s == StateNone {
			return stay(s, "only SUBSCRIBE or NOTIFY opens a subscription")
		}
		return stay(s, "only SUBSCRIBE, NOTIFY and their answers move a subscription")
	}
}

func subscribeResponse(st Status, s State) Cell {
	switch st {
	case S100, S18x, S1xx:
		if s == StateNone {
			return to(Trying, "a provisional response seeds a subscription in progress")
		}
		return stay(s, "a provisional response decides nothing")
	case S2xx:
		switch s {
		case StateNone, Trying:
			return to(Active, "2xx to SUBSCRIBE: the subscription is accepted")
		case Pending:
			return stay(s, "the notifier reported the subscription pending; its NOTIFY decides")
		case Active:
			return stay(s, "a refresh was accepted")
		default:
			return stay(s, "an accepted refresh after the end does not revive the subscription")
		}
	case SChallenge:
		switch s {
		case StateNone:
			return to(Trying, "a challenge seeds a subscription in progress; challenges are intermediate")
		case Trying:
			return stay(s, "a challenge is intermediate: the subscriber retries with credentials (reads Failed only if nothing follows)")
		default:
			return stay(s, "a challenge to a refresh leaves the subscription as it was")
		}
	default: // S3xx, S487, SFail
		switch s {
		case StateNone, Trying, Pending:
			return to(Failed, "the notifier refused the subscription")
		case Active:
			return stay(s, "a refused refresh leaves the subscription until it expires")
		default:
			return stay(s, "the subscription already has an outcome")
		}
	}
}

func genericCell(a Arrival, s State) Cell {
	if !a.IsResponse() {
		switch {
		case a == ReqAck:
			return stay(s, "an ACK opens no transaction")
		case s == StateNone:
			return to(Trying, "the request opens a standalone transaction")
		case s == Trying:
			return stay(s, "another request while one is pending waits for its answer")
		default:
			return to(Trying, "a new request starts a new transaction")
		}
	}
	// A standalone dialog has one kind of transaction, so even a response
	// whose CSeq is unreadable is decided by its status.
	_, st, _ := a.Response()
	switch st {
	case S100, S18x, S1xx:
		if s == StateNone {
			return to(Trying, "a provisional response seeds a transaction in progress")
		}
		return stay(s, "a provisional response decides nothing")
	case S2xx:
		if s == Completed {
			return stay(s, "the transaction already completed")
		}
		return to(Completed, "2xx completes the transaction")
	case SChallenge:
		switch s {
		case StateNone:
			return to(Trying, "a challenge seeds a transaction in progress; challenges are intermediate")
		case Trying:
			return stay(s, "a challenge is intermediate: the client retries with credentials (reads Failed only if nothing follows)")
		default:
			return stay(s, "a challenge after the outcome changes nothing")
		}
	default:
		if s == Failed {
			return stay(s, "the transaction already failed")
		}
		return to(Failed, "the request was refused")
	}
}
