package sip

import (
	"strconv"
	"strings"
)

// Reason is one element of a Reason header (RFC 3326).
type Reason struct {
	// Protocol is "SIP" or "Q.850" (normalized spelling) or another
	// protocol token as received ("RELEASE_CAUSE", "STIR", ...).
	Protocol string
	Cause    int  // cause parameter; meaningful only when HasCause
	HasCause bool // false when the cause parameter is absent or not a number
	// Text is the text parameter, unquoted, cut to MaxCauseChars characters.
	Text string
}

// ParseReason parses a Reason header value, which may list several reasons
// separated by commas: `SIP ;cause=200 ;text="Call completed elsewhere",
// Q.850;cause=16`. Elements without a protocol token are skipped.
func ParseReason(value string) []Reason {
	var out []Reason
	for _, e := range SplitList(value) {
		proto, params := e, ""
		if i := strings.IndexByte(e, ';'); i >= 0 {
			proto, params = e[:i], e[i:]
		}
		proto = strings.TrimSpace(proto)
		if proto == "" {
			continue
		}
		switch {
		case strings.EqualFold(proto, "SIP"):
			proto = "SIP"
		case strings.EqualFold(proto, "Q.850"):
			proto = "Q.850"
		}
		r := Reason{Protocol: proto}
		if v, ok := ParamValue(params, "cause"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
				r.Cause, r.HasCause = n, true
			}
		}
		if v, ok := ParamValue(params, "text"); ok {
			r.Text = truncateChars(v, MaxCauseChars)
		}
		out = append(out, r)
	}
	return out
}

// truncateChars cuts s to at most n characters (runes).
func truncateChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}

// NilUUID is the RFC 7989 null UUID (32 zeros).
const NilUUID = "00000000000000000000000000000000"

// SessionID is a parsed Session-ID header (RFC 7989).
type SessionID struct {
	Local     string // local-uuid, lower-cased
	Remote    string // remote-uuid, lower-cased; "" when there is no remote parameter
	HasRemote bool   // the remote parameter is present
	// Legacy marks the RFC 7329 form (no remote parameter): an interop
	// notice, not a violation.
	Legacy bool
}

// ParseSessionID parses a Session-ID value
// ("ab30317f1a784dc48ff824d0d3715d86;remote=47755a9de7794ba387653f2099600ef2").
// ok is false when the local part is not 32 hexadecimal digits; the fields
// are still filled with what was read. Hex digits are compared
// case-insensitively (both halves are lower-cased).
func ParseSessionID(value string) (SessionID, bool) {
	v := strings.TrimSpace(value)
	local, params := v, ""
	if i := strings.IndexByte(v, ';'); i >= 0 {
		local, params = v[:i], v[i:]
	}
	s := SessionID{Local: strings.ToLower(strings.TrimSpace(local))}
	if r, ok := ParamValue(params, "remote"); ok {
		s.Remote, s.HasRemote = strings.ToLower(strings.TrimSpace(r)), true
	} else {
		s.Legacy = true
	}
	ok := isUUID32(s.Local) && (!s.HasRemote || isUUID32(s.Remote))
	return s, ok
}

func isUUID32(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < 32; i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// LocalIsNil reports whether the local UUID is the null UUID.
func (s SessionID) LocalIsNil() bool { return s.Local == NilUUID }

// RemoteIsNil reports whether the remote UUID is absent or the null UUID.
func (s SessionID) RemoteIsNil() bool { return !s.HasRemote || s.Remote == NilUUID }

// UUIDs returns the non-nil, non-empty halves (local first).
func (s SessionID) UUIDs() []string {
	var out []string
	if s.Local != "" && !s.LocalIsNil() {
		out = append(out, s.Local)
	}
	if s.HasRemote && s.Remote != "" && s.Remote != NilUUID && s.Remote != s.Local {
		out = append(out, s.Remote)
	}
	return out
}

// Shares reports whether two Session-IDs name a common non-nil UUID. The
// halves swap across a B2BUA (one side's local is the other's remote), so
// this intersects the halves instead of comparing strings.
func (s SessionID) Shares(o SessionID) bool {
	for _, a := range s.UUIDs() {
		for _, b := range o.UUIDs() {
			if a == b {
				return true
			}
		}
	}
	return false
}

// PChargingVector is a parsed P-Charging-Vector header (RFC 7315 §4.6).
// Absent parameters are "".
type PChargingVector struct {
	ICID                   string // icid-value
	ICIDGeneratedAt        string // icid-generated-at
	OrigIOI                string // orig-ioi
	TermIOI                string // term-ioi
	TransitIOI             string // transit-ioi
	RelatedICID            string // related-icid
	RelatedICIDGeneratedAt string // related-icid-generated-at
}

// ParsePChargingVector parses a P-Charging-Vector value
// ("icid-value=1234bc9876e;icid-generated-at=192.0.6.8;orig-ioi=home1.net").
// ok is false when there is no icid-value.
func ParsePChargingVector(value string) (PChargingVector, bool) {
	var pcv PChargingVector
	eachParam(value, func(k, v string) bool {
		v = unquote(v)
		switch strings.ToLower(k) {
		case "icid-value":
			if pcv.ICID == "" {
				pcv.ICID = v
			}
		case "icid-generated-at":
			pcv.ICIDGeneratedAt = v
		case "orig-ioi":
			pcv.OrigIOI = v
		case "term-ioi":
			pcv.TermIOI = v
		case "transit-ioi":
			pcv.TransitIOI = v
		case "related-icid":
			if pcv.RelatedICID == "" {
				pcv.RelatedICID = v
			}
		case "related-icid-generated-at":
			pcv.RelatedICIDGeneratedAt = v
		}
		return true
	})
	return pcv, pcv.ICID != ""
}

// Warning is one element of a Warning header (RFC 3261 §20.43):
// warn-code SP warn-agent SP warn-text.
type Warning struct {
	Code  int    // three-digit warn-code (3xx)
	Agent string // host[:port] or pseudonym of the agent that added it
	Text  string // warn-text, unquoted, cut to MaxCauseChars characters
}

// ParseWarning parses a Warning header value, which may list several
// warnings separated by commas. Elements without a three-digit code are
// skipped.
func ParseWarning(value string) []Warning {
	var out []Warning
	eachElem(value, func(e string) bool {
		if len(e) < 4 || !isDigit(e[0]) || !isDigit(e[1]) || !isDigit(e[2]) || !isWS(e[3]) {
			return true
		}
		w := Warning{Code: int(e[0]-'0')*100 + int(e[1]-'0')*10 + int(e[2]-'0')}
		rest := strings.TrimLeft(e[3:], " \t")
		i := 0
		for i < len(rest) && !isWS(rest[i]) {
			i++
		}
		w.Agent = rest[:i]
		w.Text = truncateChars(unquote(strings.TrimSpace(rest[i:])), MaxCauseChars)
		out = append(out, w)
		return true
	})
	return out
}
