package sip

import "encoding/binary"

// canonicalNames holds the canonical spelling of each known header.
var canonicalNames = [hdrCount]string{
	HdrExtension:                "",
	HdrAccept:                   "Accept",
	HdrAcceptContact:            "Accept-Contact",
	HdrAllow:                    "Allow",
	HdrAllowEvents:              "Allow-Events",
	HdrAuthorization:            "Authorization",
	HdrCallID:                   "Call-ID",
	HdrContact:                  "Contact",
	HdrContentEncoding:          "Content-Encoding",
	HdrContentLength:            "Content-Length",
	HdrContentType:              "Content-Type",
	HdrCSeq:                     "CSeq",
	HdrDiversion:                "Diversion",
	HdrEvent:                    "Event",
	HdrExpires:                  "Expires",
	HdrFrom:                     "From",
	HdrHistoryInfo:              "History-Info",
	HdrIdentity:                 "Identity",
	HdrMaxForwards:              "Max-Forwards",
	HdrMinSE:                    "Min-SE",
	HdrPAssertedIdentity:        "P-Asserted-Identity",
	HdrPChargingVector:          "P-Charging-Vector",
	HdrProxyAuthenticate:        "Proxy-Authenticate",
	HdrProxyAuthorization:       "Proxy-Authorization",
	HdrRAck:                     "RAck",
	HdrReason:                   "Reason",
	HdrRecordRoute:              "Record-Route",
	HdrReferTo:                  "Refer-To",
	HdrReferredBy:               "Referred-By",
	HdrRejectContact:            "Reject-Contact",
	HdrRequestDisposition:       "Request-Disposition",
	HdrRequire:                  "Require",
	HdrRoute:                    "Route",
	HdrRSeq:                     "RSeq",
	HdrServer:                   "Server",
	HdrSessionExpires:           "Session-Expires",
	HdrSessionID:                "Session-ID",
	HdrSubject:                  "Subject",
	HdrSubscriptionState:        "Subscription-State",
	HdrSupported:                "Supported",
	HdrTo:                       "To",
	HdrUserAgent:                "User-Agent",
	HdrVia:                      "Via",
	HdrWarning:                  "Warning",
	HdrWWWAuthenticate:          "WWW-Authenticate",
	HdrXAsteriskHangupCauseCode: "X-Asterisk-HangupCauseCode",
}

// compactForms maps the 19 IANA compact header names (lower case) to their
// header. SigComp's and the obsolete Identity-Info's ("n") are not included.
var compactForms = [26]HeaderID{
	0:         HdrAcceptContact, // a
	'b' - 'a': HdrReferredBy,
	'c' - 'a': HdrContentType,
	'd' - 'a': HdrRequestDisposition,
	'e' - 'a': HdrContentEncoding,
	'f' - 'a': HdrFrom,
	'i' - 'a': HdrCallID,
	'j' - 'a': HdrRejectContact,
	'k' - 'a': HdrSupported,
	'l' - 'a': HdrContentLength,
	'm' - 'a': HdrContact,
	'o' - 'a': HdrEvent,
	'r' - 'a': HdrReferTo,
	's' - 'a': HdrSubject,
	't' - 'a': HdrTo,
	'u' - 'a': HdrAllowEvents,
	'v' - 'a': HdrVia,
	'x' - 'a': HdrSessionExpires,
	'y' - 'a': HdrIdentity,
}

// maxKnownName is the length of the longest canonical name.
const maxKnownName = len("X-Asterisk-HangupCauseCode")

// byLowerName maps the lower-cased canonical names to their id.
var byLowerName = func() map[string]HeaderID {
	m := make(map[string]HeaderID, hdrCount)
	for id := HeaderID(1); id < hdrCount; id++ {
		m[lowerASCII(canonicalNames[id])] = id
	}
	return m
}()

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

// String returns the canonical long name of the header ("Call-ID", "CSeq");
// "" for HdrExtension.
func (id HeaderID) String() string {
	if id >= hdrCount {
		return ""
	}
	return canonicalNames[id]
}

// LookupHeader maps a header name as spelled on the wire (any case, compact
// form or long form) to its id; HdrExtension when the name is not in the
// canonical table. It does not allocate.
func LookupHeader(name string) HeaderID {
	n := len(name)
	if n == 1 {
		c := name[0] | 0x20
		if 'a' <= c && c <= 'z' {
			return compactForms[c-'a']
		}
		return HdrExtension
	}
	if n == 0 || n > maxKnownName {
		return HdrExtension
	}
	var buf [maxKnownName]byte
	for i := 0; i < n; i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 32
		}
		buf[i] = c
	}
	return byLowerName[string(buf[:n])]
}

func lookupHeaderBytes(name []byte) HeaderID {
	n := len(name)
	if n == 1 {
		c := name[0] | 0x20
		if 'a' <= c && c <= 'z' {
			return compactForms[c-'a']
		}
		return HdrExtension
	}
	if n == 0 || n > maxKnownName {
		return HdrExtension
	}
	c := name[0] | 0x20
	if c < 'a' || c > 'z' {
		return HdrExtension
	}
	for _, id := range byShape[n][c-'a'] {
		if equalFoldLower(name, lowerNames[id]) {
			return id
		}
	}
	return HdrExtension
}

// lookupName is lookupHeaderBytes also reporting whether name is spelled
// exactly as canonicalNames spells its header (then a Header's Name is the
// canonical string). The known names differ in (length, first letter, last
// letter), so one table probe finds the only candidate.
func lookupName(name []byte) (id HeaderID, canonical bool) {
	n := len(name)
	if n < 2 || n > maxKnownName {
		return lookupHeaderBytes(name), false
	}
	h := shapeHash(n, name[0], name[n-1])
	if byShapeHash.collide[h] {
		id = lookupHeaderBytes(name)
		return id, id != HdrExtension && string(name) == canonicalNames[id]
	}
	id = byShapeHash.id[h]
	if id == HdrExtension {
		return HdrExtension, false
	}
	if string(name) == canonicalNames[id] {
		return id, true
	}
	if equalFoldLower(name, lowerNames[id]) {
		return id, false
	}
	return HdrExtension, false
}

// shapeSlots is the size of byShapeHash's tables (a power of two).
const shapeSlots = 256

// shapeHash hashes a name's length and its first and last bytes, ASCII
// letters folded to lower case.
func shapeHash(n int, first, last byte) int {
	return (n + int(first|0x20)*27 + int(last|0x20)) & (shapeSlots - 1)
}

// byShapeHash maps shapeHash of each known name to its id; collide marks
// the slots two names share (none today: TestLookupNameMatchesLookupHeader
// covers every name), which lookupName then resolves the slow way.
var byShapeHash = func() (t struct {
	id      [shapeSlots]HeaderID
	collide [shapeSlots]bool
}) {
	for id := HeaderID(1); id < hdrCount; id++ {
		c := canonicalNames[id]
		h := shapeHash(len(c), c[0], c[len(c)-1])
		if t.id[h] != HdrExtension {
			t.collide[h] = true
		}
		t.id[h] = id
	}
	return t
}()

// lowerNames holds the lower-cased canonical names; byShape lists the
// known headers by name length and first letter (at most a few each), so
// a name on the wire is looked up without hashing it.
var lowerNames, byShape = func() (names [hdrCount]string, shape [maxKnownName + 1][26][]HeaderID) {
	for id := HeaderID(1); id < hdrCount; id++ {
		l := lowerASCII(canonicalNames[id])
		names[id] = l
		shape[len(l)][l[0]-'a'] = append(shape[len(l)][l[0]-'a'], id)
	}
	return
}()

// equalFoldLower reports whether b equals the lower-case ASCII string l,
// ignoring the case of ASCII letters in b.
func equalFoldLower(b []byte, l string) bool {
	if len(b) != len(l) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 32
		}
		if c != l[i] {
			return false
		}
	}
	return true
}

// namePattern is a known header's canonical "Name:" as two little-endian
// words and their masks, so that the usual line's name is recognized with
// two compares instead of a scan and a lookup (headers).
type namePattern struct {
	w, mask [2]uint64
	n       int // name length: the colon is at n
	id      HeaderID
}

// namePatterns holds a pattern for each known header whose "Name:" fits
// in 16 bytes (index 0 is none); patternSlots lists, by patternHash of a
// line's first three bytes, the patterns that may match it (up to four:
// a pattern that finds its slot full is left out, and its lines are read
// by the scan).
var namePatterns, patternSlots = func() (pats []namePattern, slots [256][4]uint8) {
	pats = append(pats, namePattern{})
	for id := HeaderID(1); id < hdrCount; id++ {
		c := canonicalNames[id] + ":"
		if len(c) > 16 {
			continue
		}
		var b, mk [16]byte
		copy(b[:], c)
		for i := range c {
			mk[i] = 0xff
		}
		p := namePattern{n: len(c) - 1, id: id}
		for k := 0; k < 2; k++ {
			p.w[k] = binary.LittleEndian.Uint64(b[8*k:])
			p.mask[k] = binary.LittleEndian.Uint64(mk[8*k:])
		}
		slot := &slots[patternHash(p.w[0])]
		for k := range slot {
			if slot[k] == 0 {
				slot[k] = uint8(len(pats))
				pats = append(pats, p)
				break
			}
		}
	}
	return pats, slots
}()

// patternHash hashes the first three bytes of x (the shortest pattern,
// "To:", has three).
func patternHash(x uint64) uint8 {
	return uint8((x & 0xffffff) * 0x9E3779B97F4A7C15 >> 56)
}
