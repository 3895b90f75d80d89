// Package sip parses SIP messages tolerantly: it never panics, never
// allocates from an unchecked length, keeps every header with the byte range
// it came from, and flags (rather than drops) a malformed message.
//
// This file holds the public types other packages code against. The parser
// fills them.
package sip

import "strings"

// Limits of the parser (engine.md §4, §17).
const (
	MaxHeaders    = 200      // headers per message; past it the message is flagged
	MaxLineBytes  = 8 * 1024 // an unfolded header line; longer is truncated and flagged
	MaxCauseChars = 200      // termination cause text
	// MaxMethodBytes caps a method token (request line and CSeq). RFC 3261
	// bounds no token, but every registered method is short (the longest
	// is 9 bytes); a longer token is cut here and the message flagged
	// MalMethodLimit, so a sender cannot spend an answer's room, a map key
	// or a report line on one method name.
	MaxMethodBytes = 32
)

// HeaderID is the canonical identity of a header name. Compact forms map to
// the same id as their long form. Unknown names are HdrExtension.
type HeaderID uint8

const (
	HdrExtension HeaderID = iota
	HdrAccept
	HdrAcceptContact // a
	HdrAllow
	HdrAllowEvents // u
	HdrAuthorization
	HdrCallID          // i
	HdrContact         // m
	HdrContentEncoding // e
	HdrContentLength   // l
	HdrContentType     // c
	HdrCSeq
	HdrDiversion
	HdrEvent // o
	HdrExpires
	HdrFrom // f
	HdrHistoryInfo
	HdrIdentity // y
	HdrMaxForwards
	HdrMinSE
	HdrPAssertedIdentity
	HdrPChargingVector
	HdrProxyAuthenticate
	HdrProxyAuthorization
	HdrRAck
	HdrReason
	HdrRecordRoute
	HdrReferTo            // r
	HdrReferredBy         // b
	HdrRejectContact      // j
	HdrRequestDisposition // d
	HdrRequire
	HdrRoute
	HdrRSeq
	HdrServer
	HdrSessionExpires // x
	HdrSessionID
	HdrSubject // s
	HdrSubscriptionState
	HdrSupported // k
	HdrTo        // t
	HdrUserAgent
	HdrVia // v
	HdrWarning
	HdrWWWAuthenticate
	HdrXAsteriskHangupCauseCode
	hdrCount
)

// Header is one logical header line.
type Header struct {
	ID    HeaderID
	Name  string // as spelled on the wire (compact forms kept)
	Value string // unfolded value, leading/trailing whitespace trimmed
	// Start and End are the byte range of the logical line (folded
	// continuation lines included, CRLF excluded) within Message.Raw. Both
	// are -1 for a header that came from no bytes.
	Start, End int
}

// HasRange reports whether the header carries a byte range.
func (h Header) HasRange() bool { return h.Start >= 0 && h.End >= h.Start }

// NameAddr is a From/To/Contact-style value.
type NameAddr struct {
	Display string // display name, quotes removed
	URI     string // the URI without angle brackets
	Scheme  string // sip, sips, tel, ...
	User    string // user part of the URI ("" when absent)
	Host    string // host part (no port)
	Port    int    // 0 when absent
	Tag     string // tag parameter ("" when absent)
	Params  string // header parameters after the URI, raw (";tag=..;x=y")
}

// Via is one Via entry (a Via header may carry several, comma-separated).
type Via struct {
	Protocol  string // "SIP/2.0/UDP"
	Transport string // "UDP", "TCP", "TLS", "WS", ...
	Host      string
	Port      int
	Branch    string
	Received  string
	RPort     string // "" absent; value may be empty when the flag form ";rport" is used
	HasRPort  bool
}

// CSeq is the CSeq header.
type CSeq struct {
	Number uint32
	Method string
	Valid  bool // false when the header was missing or unparseable
}

// Message is one parsed SIP message. It owns Raw; every string and Body
// refer to data derived from Raw and stay valid as long as the Message.
type Message struct {
	// Raw is the message bytes as received (start line through body). Treat
	// it as read-only: header values, names and Body share its memory.
	Raw []byte

	IsRequest  bool
	Method     string // request method as on the wire, upper-cased, cut to MaxMethodBytes; "" for responses
	RequestURI string
	StatusCode int // responses only
	Reason     string
	StartLine  string // the start line as received (junk before it excluded)

	Headers []Header // wire order

	CallID      string
	From, To    NameAddr
	CSeq        CSeq
	Vias        []Via  // top first (the first Contact: Contact(), parsed on demand)
	UserAgent   string // User-Agent on requests; Server on responses when no User-Agent
	ContentType string // media type, lower-cased, parameters dropped
	MaxForwards int    // -1 when absent

	ContentLength   int // declared Content-Length (-1 when absent)
	Body            []byte
	BodyTruncated   bool // declared Content-Length is larger than the bytes present
	JunkPrefixBytes int  // bytes skipped before the start line
	// TrailingBytes counts bytes after a Content-Length-bounded body that are
	// not part of the message (a Content-Length shorter than the data).
	TrailingBytes  int
	HeaderLimitHit bool // more than MaxHeaders headers
	LineLimitHit   bool // a line longer than MaxLineBytes was truncated

	// Malformed lists what is wrong with the message, e.g. "missing Call-ID",
	// "unparseable CSeq", "Content-Length larger than body",
	// "control byte in header". Empty when well formed.
	Malformed []string

	// lim is the limits Parse used (nil for a Message Parse did not make):
	// with Raw they rebuild the Message (Retain).
	lim *Limits
}

// HeaderValues returns the values of every header with the given id, in wire
// order, splitting comma-separated lists where the grammar allows it is the
// caller's choice (see SplitList).
func (m *Message) HeaderValues(id HeaderID) []string {
	var out []string
	for i := range m.Headers {
		if m.Headers[i].ID == id {
			out = append(out, m.Headers[i].Value)
		}
	}
	return out
}

// Header returns the first value of a header and whether it was present.
func (m *Message) Header(id HeaderID) (string, bool) {
	for i := range m.Headers {
		if m.Headers[i].ID == id {
			return m.Headers[i].Value, true
		}
	}
	return "", false
}

// TopBranch is the branch of the top Via ("" when absent).
func (m *Message) TopBranch() string {
	if len(m.Vias) == 0 {
		return ""
	}
	return m.Vias[0].Branch
}

// Contact returns the first element of the first Contact header that has
// one (RFC 3261 §20.10), parsed as ParseNameAddr parses it (a value
// ParseNameAddr rejects still gives the fields it read), and false when the
// message has none.
//
// It is parsed from the header on each call, not at Parse: the ingest path
// (the dialog store, the media path, the duplicate table) never reads it,
// and a Contact raises no Malformed reason, so nothing of the message's
// verdict waits for it. Nothing is cached in the Message either, so readers
// of a stored Message write nothing and may call it concurrently; a caller
// that reads it more than once keeps the result.
func (m *Message) Contact() (NameAddr, bool) {
	for i := range m.Headers {
		if m.Headers[i].ID != HdrContact {
			continue
		}
		if e, _ := nextElem(m.Headers[i].Value, 0); e != "" {
			var na NameAddr
			_ = parseNameAddr(&na, e)
			return na, true
		}
	}
	return NameAddr{}, false
}

// TxMethod is the method of the transaction the message belongs to: the
// request's method, or the CSeq method of a response.
func (m *Message) TxMethod() string {
	if m.IsRequest {
		return m.Method
	}
	return m.CSeq.Method
}

// HeaderNamed returns the first value of a header found by name, case
// insensitively, compact forms included (use it for extension headers such
// as X-Call-ID that have no HeaderID), and whether it was present.
func (m *Message) HeaderNamed(name string) (string, bool) {
	id := LookupHeader(name)
	for i := range m.Headers {
		h := &m.Headers[i]
		if id != HdrExtension {
			if h.ID == id {
				return h.Value, true
			}
		} else if h.ID == HdrExtension && strings.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return "", false
}

// HeaderValuesNamed returns the values of every header with the given name
// (case-insensitive, compact forms included), in wire order.
func (m *Message) HeaderValuesNamed(name string) []string {
	id := LookupHeader(name)
	var out []string
	for i := range m.Headers {
		h := &m.Headers[i]
		if (id != HdrExtension && h.ID == id) || (id == HdrExtension && h.ID == HdrExtension && strings.EqualFold(h.Name, name)) {
			out = append(out, h.Value)
		}
	}
	return out
}
