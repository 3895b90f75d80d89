package dialog

import "strings"

// State is a dialog state. The thirteen named states are the ones every
// surface reports (mcp-surface.md §7); StateNone is the state of a leg before
// its first message and is never reported.
type State uint8

const (
	StateNone State = iota
	Trying
	Ringing
	InCall
	Completed
	Cancelled
	Failed
	Redirected
	Registered
	Expired
	Pending
	Active
	Terminated
	Transferring
	stateCount
)

var stateNames = [...]string{
	"", "Trying", "Ringing", "InCall", "Completed", "Cancelled", "Failed",
	"Redirected", "Registered", "Expired", "Pending", "Active", "Terminated",
	"Transferring",
}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return ""
}

// StateNames lists the thirteen reportable state names in table order.
func StateNames() []string { return append([]string(nil), stateNames[1:]...) }

// ParseState reads a state name. The spelling "Canceled" (used by some
// surfaces) is normalized to Cancelled; matching is exact otherwise (the
// filter DSL's state values are case-sensitive).
func ParseState(s string) (State, bool) {
	if s == "Canceled" {
		return Cancelled, true
	}
	for i := 1; i < len(stateNames); i++ {
		if stateNames[i] == s {
			return State(i), true
		}
	}
	return StateNone, false
}

// Family says which state machine governs a leg. It is chosen by the method
// that opened the leg (the seed) and never changes.
type Family uint8

const (
	// FamilyInvite: a call being set up, up, or torn down. Seeded by INVITE,
	// and by ACK, BYE, CANCEL and PRACK, which presuppose an INVITE dialog
	// and therefore mean the capture began mid-call.
	FamilyInvite Family = iota
	// FamilyRegister: a REGISTER binding.
	FamilyRegister
	// FamilySubscribe: a subscription (SUBSCRIBE/NOTIFY, RFC 6665). A NOTIFY
	// seeds one too.
	FamilySubscribe
	// FamilyGeneric: everything with no machine of its own (OPTIONS,
	// MESSAGE, PUBLISH, INFO, UPDATE, REFER, extension methods).
	FamilyGeneric
	familyCount
)

var familyNames = [...]string{"INVITE", "REGISTER", "SUBSCRIBE", "generic"}

func (f Family) String() string {
	if int(f) < len(familyNames) {
		return familyNames[f]
	}
	return ""
}

// FamilyOf returns the family a leg opened by method belongs to.
func FamilyOf(method string) Family {
	switch strings.ToUpper(method) {
	case "INVITE", "ACK", "BYE", "CANCEL", "PRACK":
		return FamilyInvite
	case "REGISTER":
		return FamilyRegister
	case "SUBSCRIBE", "NOTIFY":
		return FamilySubscribe
	default:
		return FamilyGeneric
	}
}

// Arrival is an arriving message reduced to what decides a transition: a
// request's method (with the NOTIFY Subscription-State and the re-INVITE
// distinction), or a response's transaction (its CSeq method, with the
// re-INVITE and de-registration distinctions) and status class.
type Arrival uint8

// Request arrivals.
const (
	ReqInvite           Arrival = iota // INVITE without a To tag
	ReqReInvite                        // INVITE with a To tag (inside a dialog)
	ReqAck                             // ACK
	ReqBye                             // BYE
	ReqCancel                          // CANCEL
	ReqPrack                           // PRACK
	ReqUpdate                          // UPDATE
	ReqInfo                            // INFO
	ReqRefer                           // REFER
	ReqNotifyActive                    // NOTIFY, Subscription-State: active
	ReqNotifyPending                   // NOTIFY, Subscription-State: pending
	ReqNotifyTerminated                // NOTIFY, Subscription-State: terminated
	ReqNotify                          // NOTIFY without a known Subscription-State
	ReqSubscribe                       // SUBSCRIBE
	ReqRegister                        // REGISTER
	ReqOther                           // OPTIONS, MESSAGE, PUBLISH, extension methods
	reqCount
)

var reqNames = [...]string{
	"INVITE", "re-INVITE", "ACK", "BYE", "CANCEL", "PRACK", "UPDATE", "INFO",
	"REFER", "NOTIFY(active)", "NOTIFY(pending)", "NOTIFY(terminated)",
	"NOTIFY", "SUBSCRIBE", "REGISTER", "other request",
}

// Tx is the transaction a response answers, named by its CSeq method.
type Tx uint8

const (
	TxInvite     Tx = iota // an INVITE that opens (or retries) the call
	TxReInvite             // an INVITE inside an established dialog
	TxBye                  // BYE
	TxCancel               // CANCEL
	TxPrack                // PRACK
	TxInDialog             // UPDATE, INFO
	TxRefer                // REFER
	TxRegister             // REGISTER
	TxUnregister           // REGISTER with expiry 0 (removes the binding)
	TxSubscribe            // SUBSCRIBE
	TxNotify               // NOTIFY
	TxOther                // any other method (OPTIONS, MESSAGE, PUBLISH, ...)
	TxNone                 // no parseable CSeq: no transaction
	txCount
)

var txNames = [...]string{
	"INVITE", "re-INVITE", "BYE", "CANCEL", "PRACK", "UPDATE/INFO", "REFER",
	"REGISTER", "REGISTER(expires=0)", "SUBSCRIBE", "NOTIFY", "other", "no CSeq",
}

func (t Tx) String() string {
	if int(t) < len(txNames) {
		return txNames[t]
	}
	return ""
}

// Status is a response status class.
type Status uint8

const (
	S100       Status = iota // 100 Trying
	S18x                     // 180-189 (Ringing, Session Progress, Queued, ...)
	S1xx                     // any other provisional (101-179, 190-199)
	S2xx                     // success
	S3xx                     // redirection
	SChallenge               // 401, 407
	S487                     // 487 Request Terminated
	SFail                    // any other 4xx-6xx
	statusCount
)

var statusNames = [...]string{"100", "18x", "1xx", "2xx", "3xx", "401/407", "487", "4xx-6xx"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return ""
}

// StatusOf classifies a status code.
func StatusOf(code int) Status {
	switch {
	case code == 100:
		return S100
	case code >= 180 && code <= 189:
		return S18x
	case code < 200:
		return S1xx
	case code < 300:
		return S2xx
	case code < 400:
		return S3xx
	case code == 401 || code == 407:
		return SChallenge
	case code == 487:
		return S487
	default:
		return SFail
	}
}

// RespArrival builds the arrival of a response.
func RespArrival(t Tx, s Status) Arrival {
	return reqCount + Arrival(uint8(t)*uint8(statusCount)+uint8(s))
}

const arrivalCount = reqCount + Arrival(uint8(txCount)*uint8(statusCount))

// IsResponse reports whether the arrival is a response.
func (a Arrival) IsResponse() bool { return a >= reqCount }

// Response splits a response arrival into its transaction and status class.
func (a Arrival) Response() (Tx, Status, bool) {
	if a < reqCount || a >= arrivalCount {
		return 0, 0, false
	}
	i := uint8(a - reqCount)
	return Tx(i / uint8(statusCount)), Status(i % uint8(statusCount)), true
}

func (a Arrival) String() string {
	if a < reqCount {
		return reqNames[a]
	}
	if t, s, ok := a.Response(); ok {
		return s.String() + " to " + t.String()
	}
	return ""
}
