package endpoint

import (
	"cmp"
	"strings"
)

// The stack fingerprint (engine.md §11, Stack fingerprint): which SIP
// library built an endpoint's requests, read off their syntax rather than
// the banner beside it. A banner names a product and one product ships
// more than one stack; the syntax names the library. It names a library,
// never a product: pjproject ships inside Asterisk's res_pjsip,
// Grandstream UCM and FreePBX alike.

// MaxFingerprintChars bounds an echoed fingerprint value (the branch
// cookie is the sender's own bytes).
const MaxFingerprintChars = 32

// BranchMagicCookie is the prefix RFC 3261 §8.1.1.7 requires of every
// branch: mandatory, so alone it identifies nothing.
const BranchMagicCookie = "z9hG4bK"

// vendorExtensions follow the magic cookie, longest first. A closed list:
// in "z9hG4bKPjabc" the "abc" is as alphabetic as "Pj", so the extension
// cannot be recovered by character class.
var vendorExtensions = []string{"Pj"}

// Token shapes: sipnab's own closed vocabulary, never the sender's text.
const (
	// ShapeUUID is 8-4-4-4-12 hex (pjproject's From tag and branch).
	ShapeUUID = "uuid"
	// ShapeAsHex is "as" then hex (chan_sip's From tag).
	ShapeAsHex = "as-hex"
	// ShapeHex is hex digits only, any length.
	ShapeHex = "hex"
	// ShapeOther is anything else, reported rather than dropped.
	ShapeOther = "other"
)

// The libraries an inference can name.
const (
	StackPJProject = "pjproject"
	StackChanSIP   = "chan_sip"
)

// Fingerprint is what an endpoint's requests say about the stack that
// built them. Absent fields were not observed.
type Fingerprint struct {
	// BranchCookie is the top Via branch's cookie (the magic cookie plus a
	// known vendor extension), at most MaxFingerprintChars.
	BranchCookie string
	// BranchShape is the shape of what follows the cookie.
	BranchShape string
	// TagShape is the shape of the From tag.
	TagShape string
	// CallIDHasHost: the Call-ID carries "@host"; nil when never seen.
	CallIDHasHost *bool
	// Inference is the library the observations point at ("" when none:
	// fewer than two agree, or two libraries fit equally).
	Inference string
	// Confidence counts the observations (of three) agreeing with
	// Inference; 0 without one.
	Confidence int
	// RequestsRead counts the requests read: the denominator.
	RequestsRead int
	// Mixed: the endpoint's own requests disagreed about a shape (a proxy
	// relaying for others, or an address several hosts share).
	Mixed bool
}

// FingerprintAcc collects the observations across requests. Its tables
// are bounded: shapes are a closed set, and cookies are the magic cookie
// plus a closed list of extensions (or nothing).
type FingerprintAcc struct {
	cookies      map[string]int
	branchShapes map[string]int
	tags         map[string]int
	hosts        map[bool]int
	requests     int
}

// Observe reads one request's top Via branch, From tag and Call-ID.
// Responses must not be observed: they echo the request's three tokens.
func (a *FingerprintAcc) Observe(branch, fromTag, callID string) {
	if a.cookies == nil {
		a.cookies, a.branchShapes, a.tags, a.hosts = map[string]int{}, map[string]int{}, map[string]int{}, map[bool]int{}
	}
	a.requests++
	if cookie, shape, ok := branchParts(branch); ok {
		a.cookies[cookie]++
		a.branchShapes[shape]++
	}
	if fromTag != "" {
		a.tags[TokenShape(fromTag)]++
	}
	if callID != "" {
		a.hosts[strings.Contains(callID, "@")]++
	}
}

// Finish scores the candidate libraries: an inference needs at least two
// agreeing observations (the magic cookie is mandatory for every sender
// and callid_has_host alone splits senders roughly in half) and no tie.
func (a *FingerprintAcc) Finish() Fingerprint {
	f := Fingerprint{RequestsRead: a.requests}
	f.BranchCookie, _ = dominant(a.cookies)
	f.BranchShape, _ = dominant(a.branchShapes)
	f.TagShape, _ = dominant(a.tags)
	if h, ok := dominantBool(a.hosts); ok {
		f.CallIDHasHost = &h
	}
	f.Mixed = len(a.cookies) > 1 || len(a.branchShapes) > 1 || len(a.tags) > 1 || len(a.hosts) > 1
	type cand struct {
		name, cookie, branch, tag string
		host                      bool
	}
	best, bestScore, tied := "", -1, false
	for _, c := range []cand{
		{StackPJProject, BranchMagicCookie + "Pj", ShapeUUID, ShapeUUID, false},
		{StackChanSIP, BranchMagicCookie, ShapeHex, ShapeAsHex, true},
	} {
		score := 0
		// The branch signal is the vendor extension, or where there is
		// none the remainder's shape: the bare magic cookie is mandatory
		// and would hand a free point to the candidate wanting none.
		if c.cookie == BranchMagicCookie {
			if f.BranchCookie == c.cookie && f.BranchShape == c.branch {
				score++
			}
		} else if f.BranchCookie == c.cookie {
			score++
		}
		if f.TagShape == c.tag {
			score++
		}
		if f.CallIDHasHost != nil && *f.CallIDHasHost == c.host {
			score++
		}
		switch {
		case score > bestScore:
			best, bestScore, tied = c.name, score, false
		case score == bestScore:
			tied = true
		}
	}
	if bestScore >= 2 && !tied {
		f.Inference, f.Confidence = best, bestScore
	}
	return f
}

// dominant is the most-seen key; a tie breaks on the smaller key so one
// capture read twice reports one answer.
func dominant(m map[string]int) (string, bool) {
	best, n := "", 0
	for k, c := range m {
		if c > n || c == n && cmp.Less(k, best) {
			best, n = k, c
		}
	}
	return best, n > 0
}

func dominantBool(m map[bool]int) (bool, bool) {
	t, f := m[true], m[false]
	if t == 0 && f == 0 {
		return false, false
	}
	return t > f, true // a tie reads false: the smaller key
}

// branchParts splits a branch into its cookie (magic cookie plus a known
// vendor extension, cut to MaxFingerprintChars) and the shape of the
// per-transaction remainder, which itself is never kept.
func branchParts(branch string) (cookie, shape string, ok bool) {
	rest, ok := strings.CutPrefix(branch, BranchMagicCookie)
	if !ok {
		return "", "", false
	}
	ext := ""
	for _, e := range vendorExtensions {
		if strings.HasPrefix(rest, e) {
			ext = e
			break
		}
	}
	cookie = BranchMagicCookie + ext
	if len(cookie) > MaxFingerprintChars {
		cookie = cookie[:MaxFingerprintChars]
	}
	return cookie, TokenShape(rest[len(ext):]), true
}

// TokenShape classifies a token: uuid, as-hex, hex or other.
func TokenShape(tok string) string {
	if strings.Count(tok, "-") == 4 && len(tok) == 36 {
		g := strings.Split(tok, "-")
		want := [5]int{8, 4, 4, 4, 12}
		uuid := true
		for i, p := range g {
			if len(p) != want[i] || !isHex(p) {
				uuid = false
				break
			}
		}
		if uuid {
			return ShapeUUID
		}
	}
	if rest, ok := strings.CutPrefix(tok, "as"); ok && isHex(rest) {
		return ShapeAsHex
	}
	if isHex(tok) {
		return ShapeHex
	}
	return ShapeOther
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
