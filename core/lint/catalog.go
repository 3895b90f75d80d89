package lint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Severity says how much attention a finding deserves. It orders from
// quietest (Info) to loudest (Error), which is what a severity floor compares.
type Severity uint8

// Severities, quietest first.
const (
	Info Severity = iota
	Notice
	Warning
	Error
)

var severityNames = [...]string{"info", "notice", "warning", "error"}

// String returns the lowercase name.
func (s Severity) String() string {
	if int(s) < len(severityNames) {
		return severityNames[s]
	}
	return "unknown"
}

// MarshalText renders the lowercase name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// SeverityNames lists the four severities, quietest first.
func SeverityNames() []string { return append([]string(nil), severityNames[:]...) }

// ParseSeverity reads a severity name (exact, lowercase).
func ParseSeverity(name string) (Severity, bool) {
	for i, n := range severityNames {
		if n == name {
			return Severity(i), true
		}
	}
	return 0, false
}

// Basis says what kind of claim a rule makes.
type Basis string

// Bases.
const (
	// Must: the cited section says MUST or MUST NOT and the traffic disobeys.
	Must Basis = "must"
	// Should: the cited section says SHOULD or RECOMMENDED; deviating is legal.
	Should Basis = "should"
	// Interop: nothing forbids it, deployed equipment mishandles it anyway.
	Interop Basis = "interop"
	// Observation: the SDP declaration and the observed RTP disagree.
	Observation Basis = "observation"
)

// Scope says what a rule needs in order to run.
type Scope string

// Scopes.
const (
	// ScopeMessage rules read one SIP message alone.
	ScopeMessage Scope = "message"
	// ScopeDialog rules read a dialog's messages against each other.
	ScopeDialog Scope = "dialog"
	// ScopeMedia rules read the dialog's SDP against the RTP attributed to it.
	ScopeMedia Scope = "media"
)

// dialogScopedSIP are the SIP rules that need the whole dialog: the id
// prefix cannot say so, so they are named.
var dialogScopedSIP = map[string]bool{
	"SIP-3261-8.1.1.2-TO-TAG-IN-INITIAL-REQUEST": true,
	"SIP-3261-17.1.1.3-ACK-CSEQ-MISMATCH":        true,
	"SIP-3262-4-PRACK-MISSING":                   true,
}

// ScopeOf derives a rule's scope from its id: OBS- is media; SDP- and the
// three dialog-scoped SIP rules are dialog; everything else is message.
func ScopeOf(id string) Scope {
	switch {
	case strings.HasPrefix(id, "OBS-"):
		return ScopeMedia
	case strings.HasPrefix(id, "SDP-"), dialogScopedSIP[id]:
		return ScopeDialog
	}
	return ScopeMessage
}

// Rule is one catalogue entry: everything static about a rule.
type Rule struct {
	// ID is the stable identifier FAMILY-RFC-SECTION-SLUG.
	ID string `json:"rule_id"`
	// Title names the defect in one line.
	Title string `json:"title"`
	// Severity is how loudly the rule reports.
	Severity Severity `json:"severity"`
	// Basis is what kind of claim the rule makes.
	Basis Basis `json:"basis"`
	// Scope is what the rule reads (derived from the id).
	Scope Scope `json:"scope"`
	// RFC is the number of the RFC the rule cites.
	RFC int `json:"rfc"`
	// Section is the cited section as printed in the RFC ("8.1.1.7", "20").
	Section string `json:"section"`
	// Citation says in a few words (at most a short quote) what the section
	// requires.
	Citation string `json:"citation"`
	// FiresWhen says exactly what the rule checks on the data.
	FiresWhen string `json:"fires_when"`
	// URL links to the cited section on rfc-editor.org.
	URL string `json:"url"`
	// Rulesets are the selectors that include the rule.
	Rulesets []string `json:"rulesets"`
}

// CatalogVersion numbers the catalogue; it moves when a rule is added,
// removed or changes meaning.
const CatalogVersion = 2

// RuleCount is the size of the catalogue.
const RuleCount = 43

type entry struct {
	id, title string
	sev       Severity
	basis     Basis
	citation  string
	fires     string
}

// entries is the catalogue, in listing order: message-scoped SIP rules,
// dialog-scoped SIP rules, SDP rules, OBS rules. RFC and section come from
// the id (rfcSection), so the two can never disagree.
var entries = []entry{
	{"SIP-3261-8.1.1-MANDATORY-HEADER-MISSING", "mandatory header field absent", Error, Must,
		"A request must carry at minimum To, From, CSeq, Call-ID, Max-Forwards and Via; a response copies To, From, Call-ID, CSeq and Via from its request (§8.2.6.2). Max-Forwards has its own rule.",
		"a request or response has no Call-ID, CSeq, From, To or Via header"},
	{"SIP-3261-20.16-CSEQ-MALFORMED", "CSeq header field unparseable", Error, Must,
		"CSeq holds a single decimal sequence number and the request method; without both the message cannot be matched to its transaction.",
		"a CSeq header is present but is not <number> <method> with a number below 2^32"},
	{"SIP-3261-20.14-CONTENT-LENGTH-MISMATCH", "Content-Length exceeds the body present", Error, Must,
		"Content-Length gives the size of the message body in octets; a larger value than the bytes that arrived means the body was cut or the header is wrong.",
		"the declared Content-Length is larger than the body that arrived"},
	{"SIP-3261-20.14-CONTENT-LENGTH-MALFORMED", "Content-Length is not a decimal octet count", Error, Must,
		"Content-Length is 1*DIGIT, the size of the body in decimal octets; on a stream transport it is what frames the message (§18.3), so a value that is not a non-negative decimal number leaves the message without a boundary.",
		"a Content-Length header is present and its value is not one or more decimal digits (empty, signed such as -5, or non-numeric such as abc)"},
	{"SIP-3261-7.5-JUNK-BEFORE-START-LINE", "bytes other than CRLF before the start line", Error, Must,
		"A SIP message begins with its start line; a receiver ignores CRLF before it on a stream transport (and keepalives are CRLF, RFC 5626), and nothing else may precede it.",
		"bytes other than CR and LF came before the message's start line (the parser read past them; a strict element drops the message)"},
	{"SIP-3261-25.1-HEADER-CONTROL-BYTE", "control byte inside a header field", Error, Must,
		"The header grammar (TEXT-UTF8char, LWS) admits no control character except the horizontal tab of linear whitespace.",
		"a header line holds a byte below 0x20 other than tab, or 0x7F (the CRLF of a line fold excepted)"},
	{"SIP-3261-20-URI-BRACKETS", "URI with a comma or question mark not enclosed in angle brackets", Error, Must,
		"When the URI of a Contact, From or To contains a comma, question mark or semicolon it \"MUST be enclosed in angle brackets\" (Section 20 preamble).",
		"a From or To URI written without angle brackets contains a comma or question mark, or a Contact element without angle brackets contains a question mark"},
	{"SIP-3261-19.1.1-URI-PARAM-DEMOTED", "URI parameter outside the angle brackets becomes a header parameter", Warning, Interop,
		"Without angle brackets every ;parameter belongs to the header, so a URI parameter (transport, user, method, ttl, maddr, lr) is read as a header parameter and the URI loses it. Legal SIP that usually means something the sender did not intend.",
		"a From, To or Contact URI without angle brackets is followed by a transport, user, method, ttl, maddr or lr parameter"},
	{"SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING", "Max-Forwards absent from a request", Warning, Must,
		"A UAC \"MUST insert a Max-Forwards header field into each request it originates\"; proxies rely on it to stop loops.",
		"a request carries no Max-Forwards header"},
	{"SIP-3261-20.22-MAX-FORWARDS-RANGE", "Max-Forwards outside the recommended range", Notice, Should,
		"Max-Forwards is an integer from 0 to 255 whose recommended initial value is 70; zero means the request may not be forwarded again.",
		"a request's Max-Forwards is 0, greater than 70, or not an integer"},
	{"SIP-3261-8.1.1.7-BRANCH-COOKIE", "Via branch without the z9hG4bK magic cookie", Warning, Must,
		"The branch parameter inserted by an RFC 3261 element \"MUST always begin with the characters z9hG4bK\"; without it transactions are matched by the older RFC 2543 rules.",
		"a request's top Via has no branch parameter or a branch not starting with z9hG4bK"},
	{"SIP-3261-8.1.1.5-CSEQ-METHOD-MISMATCH", "CSeq method disagrees with the request method", Error, Must,
		"The method in CSeq \"MUST match that of the request\".",
		"a request's CSeq method differs from the method of its request line"},
	{"SIP-3261-12.1.1-CONTACT-MISSING-IN-2XX", "2xx to INVITE carries no Contact header field", Error, Must,
		"A UAS answering a dialog-creating request with 2xx must add a Contact; it becomes the caller's remote target for the ACK and every later in-dialog request.",
		"a 2xx response to INVITE has no Contact header"},
	{"SIP-3262-3-RELIABLE-PROVISIONAL-WITHOUT-RSEQ", "provisional requires 100rel and carries no RSeq", Error, Must,
		"A reliably sent provisional response carries Require: 100rel and \"MUST include an RSeq header field\"; without it the UAC cannot build the RAck of its PRACK.",
		"a 101-199 response lists 100rel in Require but has no RSeq, or an RSeq that is not a number from 1 to 2^31-1"},
	{"SIP-4028-7.1-SESSION-EXPIRES-BELOW-MIN-SE", "Session-Expires below the Min-SE carried beside it", Error, Must,
		"When a session refresh request carries Min-SE, its Session-Expires must be greater than or equal to that Min-SE.",
		"a request carries both headers and its Session-Expires is smaller than its Min-SE"},
	{"SIP-4028-4-SESSION-EXPIRES-TOO-SMALL", "Session-Expires below the 90-second minimum", Warning, Must,
		"The absolute minimum for Session-Expires is 90 seconds, so a refresh never has to happen more often than that.",
		"a Session-Expires value is below 90 seconds"},
	{"SIP-4028-5-MIN-SE-TOO-SMALL", "Min-SE below the 90-second minimum", Warning, Must,
		"Wherever Min-SE appears its value \"MUST NOT be less than 90 seconds\".",
		"a Min-SE value is below 90 seconds"},
	{"SIP-4028-9-REFRESHER-MISSING", "2xx to a session refresh request names no refresher", Warning, Must,
		"A UAS answering a session refresh request with 2xx must set the refresher parameter of Session-Expires, so both ends agree who refreshes the session.",
		"a 2xx response to INVITE or UPDATE carries Session-Expires without a refresher parameter"},
	{"SIP-7989-5-SESSION-ID-MALFORMED", "Session-ID UUID malformed", Error, Must,
		"A Session-ID carries a 32-character hexadecimal UUID, and its remote parameter another one.",
		"the local UUID or the remote parameter of a Session-ID is not 32 hexadecimal digits"},
	{"SIP-7989-5-SESSION-ID-UPPERCASE", "Session-ID UUID in uppercase", Warning, Must,
		"The sess-uuid grammar admits only digits and lowercase a-f; uppercase hex breaks byte-wise comparison of the identifier.",
		"a Session-ID UUID (local or remote) contains an uppercase A-F"},
	{"SIP-7989-11-SESSION-ID-LEGACY-FORM", "Session-ID in the RFC 7329 form", Notice, Interop,
		"A Session-ID without the remote parameter has the form of RFC 7329; §11 describes how RFC 7989 devices interwork with such endpoints.",
		"a well-formed Session-ID carries no remote parameter"},
	{"SIP-3261-20.15-CONTENT-TYPE-MISSING", "body without Content-Type", Error, Must,
		"\"The Content-Type header field MUST be present if the body is not empty\"; without it the receiver cannot tell SDP from anything else.",
		"a message has a non-empty body and no Content-Type header"},
	{"SIP-3261-8.2.6.2-TO-TAG-MISSING-IN-RESPONSE", "response other than 100 without a To tag", Warning, Must,
		"A UAS adds a tag to the To header of its response (or copies the request's tag); only 100 Trying may go without one. The tag is half of the dialog identifier.",
		"a response with a status from 101 to 699 has a To header without a tag parameter"},
	{"SIP-3261-10.2.2-CONTACT-STAR-MISUSE", "Contact \"*\" outside a remove-all REGISTER", Error, Must,
		"The Contact value \"*\" removes every binding of a REGISTER and \"MUST NOT be used unless the Expires header field is present with a value of 0\"; a registrar refuses it beside other Contact values (§10.3).",
		"a request carries Contact \"*\" and is not a REGISTER, has no Expires: 0, or has other Contact values"},
	{"SIP-3261-8.1.1.2-TO-TAG-IN-INITIAL-REQUEST", "To tag present on a request outside a dialog", Warning, Must,
		"\"A request outside of a dialog MUST NOT contain a To tag\"; the responder picks its own tag for a new dialog.",
		"a REGISTER carries a To tag, or a request carries a To tag and a response of its own transaction (same top Via branch and CSeq) carries a different one"},
	{"SIP-3261-17.1.1.3-ACK-CSEQ-MISMATCH", "ACK CSeq number matches no INVITE", Error, Must,
		"The ACK must carry the CSeq sequence number of the INVITE it acknowledges, with the method ACK.",
		"an ACK's CSeq number matches none of the INVITEs seen before it in the dialog (ACKs before any INVITE are not judged)"},
	{"SIP-3262-4-PRACK-MISSING", "reliable provisional never acknowledged by a PRACK", Warning, Must,
		"On a provisional response sent reliably the UAC \"MUST create a new request with method PRACK\".",
		"a provisional response to INVITE with Require: 100rel and an RSeq is never matched by a PRACK RAck (RSeq, CSeq), although the INVITE's final response was captured"},
	{"SDP-3264-6.1-ANSWER-NO-COMMON-FORMAT", "answer shares no media format with the offer", Error, Must,
		"An accepted stream of the answer must list at least one format from among those of the corresponding offered stream.",
		"an answered stream with a non-zero port shares no format with its offered stream (formats compared by encoding name and clock rate, static payload types by number)"},
	{"SDP-3264-6.1-ANSWER-EXTRA-FORMAT", "answer lists a format absent from the offer", Info, Interop,
		"An answer may list formats the offer did not carry, but cannot send with them; equipment that reads the answer as the negotiated set may pick one the far end drops.",
		"an answered stream lists a format its offered stream lacks"},
	{"SDP-3264-6.1-ANSWER-DIRECTION-ILLEGAL", "answer direction contradicts the offer", Error, Must,
		"A sendonly offer must be answered recvonly or inactive, a recvonly offer sendonly or inactive, an inactive offer inactive.",
		"an answered stream's direction is not one the offered stream's direction admits"},
	{"SDP-3264-8.4-HOLD-CONNECTION-ZERO", "hold signalled with c=0.0.0.0", Warning, Should,
		"Putting a stream on hold by setting the connection address to 0.0.0.0 (the RFC 2543 way) \"is no longer recommended\"; sendonly or inactive say it instead.",
		"an offer other than its sender's first SDP has connection address 0.0.0.0 on a stream with a non-zero port"},
	{"SDP-4566-5-MANDATORY-LINE-MISSING", "SDP without v=, o=, s= or t=", Error, Must,
		"A session description requires the v=, o=, s= and t= lines; the others are optional.",
		"an SDP body lacks a v=, o=, s= or t= line before its first m= line"},
	{"SDP-4566-5.7-CONNECTION-MISSING", "SDP media without a connection address", Error, Must,
		"A session description \"MUST contain either at least one c= field in each media description or a single c= field at the session level\".",
		"an SDP body has no session-level c= line and a media section without its own c= line"},
	{"SDP-3264-6-ANSWER-MEDIA-COUNT-MISMATCH", "answer and offer differ in their number of m= lines", Error, Must,
		"The answer must hold exactly as many m= lines as the offer, in the same order; a declined stream stays, with port 0.",
		"an answer has a different number of m= lines than the offer it answers"},
	{"SDP-3264-8-ORIGIN-VERSION-NOT-INCREMENTED", "SDP changed without a new o= version", Warning, Must,
		"A modified SDP keeps the o= line and increments its version; an unchanged version promises an identical SDP.",
		"an SDP sent on the same path (same source and destination) with the same o= username, session id and address differs from the previous one while its version did not increase"},
	{"OBS-3264-6.1-PT-UNDECLARED", "RTP payload type never declared in SDP", Error, Observation,
		"The payload types a stream may carry are the ones its offer and answer listed.",
		"an RTP stream of the dialog carries a payload type that no SDP of the dialog declared (13, comfort noise, exempt)"},
	{"OBS-4566-5.14-MEDIA-PORT-MISMATCH", "RTP observed on a port the SDP never advertised", Warning, Observation,
		"The m= port is \"the transport port to which the media stream is sent\".",
		"RTP reaches an address the dialog's SDP declared, on a port no SDP of the dialog declared for it (declared port+1, the RTCP port, and a=rtcp ports exempt)"},
	{"OBS-3264-6.1-DIRECTION-UNMET", "sendrecv negotiated, media observed one way", Warning, Observation,
		"sendrecv on both sides promises media in both directions between the two negotiated addresses.",
		"an offer/answer completed in a 2xx or an ACK negotiated sendrecv on both sides, and RTP reached one negotiated endpoint but none reached the other"},
	{"OBS-4566-6-PTIME-MISMATCH", "packetization exceeds a=ptime by more than half", Notice, Observation,
		"a=ptime gives the length of media, in milliseconds, the receiver wants in each packet.",
		"RTP sent to an endpoint carries more than 1.5 times that endpoint's a=ptime per packet (from the payload size for PCMU, PCMA, G722, G729 and GSM; from RTP timestamps otherwise; one-sided)"},
	{"OBS-5761-5.1.1-RTCP-MUX-UNANSWERED", "rtcp-mux offered, unanswered, and used regardless", Error, Observation,
		"When the answer has no a=rtcp-mux the offerer \"MUST NOT multiplex RTP and RTCP packets on a single port\".",
		"never raised: the stream store folds RTCP into the stream it describes and keeps no record of the port it landed on"},
	{"OBS-3551-4.2-FRAME-SIZE-IMPOSSIBLE", "payload size impossible for the negotiated codec", Warning, Observation,
		"Receivers are asked to accept packets of 0 to 200 ms of audio; with a fixed octet rate the payload size fixes the duration, so a stream cannot carry more media than the time it spans.",
		"for PCMU, PCMA, G722 (8 octets/ms), G729 (1) or GSM (1.65): the mean payload exceeds 200 ms, or the stream carried over 1.25 times more media than the time it spanned"},
	{"OBS-4566-6-MAXPTIME-EXCEEDED", "packets longer than a=maxptime", Warning, Observation,
		"a=maxptime is the most media, in milliseconds, the receiver can take in one packet.",
		"RTP sent to an endpoint carries more milliseconds per packet than that endpoint's a=maxptime (payload size for fixed-rate codecs, RTP timestamps otherwise)"},
	{"OBS-3264-6.1-SENT-TO-NON-RECEIVER", "RTP sent to an endpoint that declared it does not receive", Warning, Observation,
		"A stream answered or offered sendonly or inactive says its owner does not receive; the peer's side is then recvonly or inactive and sends nothing.",
		"RTP keeps arriving (10 or more packets in a whole quality interval) at an endpoint more than 2 s after an answered offer/answer made that endpoint sendonly or inactive"},
}

// Rulesets are the selectors a caller may name, in listing order; the alias
// "observed" is accepted for "observation" and not listed here.
var rulesetNames = []string{
	"all", "must", "rfc", "interop", "observation", "syntax",
	"rfc3261", "rfc3262", "rfc3264", "rfc3551", "rfc4028", "rfc4566", "rfc5761", "rfc7989",
}

// RulesetAliases maps accepted aliases to their selector.
var rulesetAliases = map[string]string{"observed": "observation"}

var (
	catalog []Rule
	byID    map[string]int
	digest  string
)

func init() {
	catalog = make([]Rule, len(entries))
	byID = make(map[string]int, len(entries))
	h := sha256.New()
	for i, e := range entries {
		rfc, section := rfcSection(e.id)
		r := Rule{
			ID: e.id, Title: e.title, Severity: e.sev, Basis: e.basis, Scope: ScopeOf(e.id),
			RFC: rfc, Section: section, Citation: e.citation, FiresWhen: e.fires,
			URL: fmt.Sprintf("https://www.rfc-editor.org/rfc/rfc%d#section-%s", rfc, section),
		}
		for _, sel := range rulesetNames {
			if selects(sel, &r) {
				r.Rulesets = append(r.Rulesets, sel)
			}
		}
		catalog[i] = r
		byID[e.id] = i
		fmt.Fprintf(h, "%s|%s|%s|%s\n", r.ID, r.Severity, r.Basis, r.FiresWhen)
	}
	digest = hex.EncodeToString(h.Sum(nil))[:16]
}

// rfcSection splits the RFC number and section out of an id. A malformed id
// yields zero values (the catalogue test refuses them).
func rfcSection(id string) (int, string) {
	parts := strings.SplitN(id, "-", 4)
	if len(parts) < 4 {
		return 0, ""
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return 0, ""
	}
	return n, parts[2]
}

// selects reports whether the selector (canonical name) includes the rule.
func selects(sel string, r *Rule) bool {
	switch sel {
	case "all":
		return true
	case "must":
		return r.Basis == Must
	case "rfc":
		return r.Basis == Must || r.Basis == Should
	case "interop":
		return r.Basis == Interop
	case "observation":
		return r.Basis == Observation
	case "syntax":
		return r.Scope == ScopeMessage
	}
	if n, ok := strings.CutPrefix(sel, "rfc"); ok {
		return n == strconv.Itoa(r.RFC)
	}
	return false
}

// Catalog returns every rule in listing order (a copy).
func Catalog() []Rule {
	out := make([]Rule, len(catalog))
	for i, r := range catalog {
		r.Rulesets = append([]string(nil), r.Rulesets...)
		out[i] = r
	}
	return out
}

// Lookup returns the rule with exactly this id.
func Lookup(id string) (Rule, bool) {
	i, ok := byID[id]
	if !ok {
		return Rule{}, false
	}
	r := catalog[i]
	r.Rulesets = append([]string(nil), r.Rulesets...)
	return r, true
}

// IDs returns every rule id in listing order.
func IDs() []string {
	out := make([]string, len(catalog))
	for i, r := range catalog {
		out[i] = r.ID
	}
	return out
}

// Digest is a short fingerprint of the catalogue (ids, severities, bases and
// checks): two answers with the same digest were judged by the same rules.
func Digest() string { return digest }

// RulesetNames lists the selectors, in listing order (without the alias).
func RulesetNames() []string { return append([]string(nil), rulesetNames...) }

// Selection is a set of selected rules.
type Selection struct {
	// Names are the canonical selectors chosen, in the caller's order,
	// without repeats.
	Names []string
	on    [RuleCount]bool
}

// Has reports whether the rule with catalogue position i is selected.
func (s *Selection) has(i int) bool { return i >= 0 && i < len(s.on) && s.on[i] }

// Includes reports whether the rule id is selected.
func (s *Selection) Includes(id string) bool {
	i, ok := byID[id]
	return ok && s.has(i)
}

// Select resolves ruleset selectors (their union). No selector means "all".
// An unknown selector is an error naming the valid ones.
func Select(selectors []string) (*Selection, error) {
	if len(selectors) == 0 {
		selectors = []string{"all"}
	}
	s := &Selection{}
	seen := map[string]bool{}
	for _, raw := range selectors {
		name := raw
		if a, ok := rulesetAliases[name]; ok {
			name = a
		}
		valid := false
		for _, n := range rulesetNames {
			if n == name {
				valid = true
			}
		}
		if !valid {
			return nil, fmt.Errorf("unknown ruleset %q: want one of %s (observed is an alias of observation)",
				raw, strings.Join(rulesetNames, ", "))
		}
		if !seen[name] {
			seen[name] = true
			s.Names = append(s.Names, name)
		}
		for i := range catalog {
			if selects(name, &catalog[i]) {
				s.on[i] = true
			}
		}
	}
	return s, nil
}
