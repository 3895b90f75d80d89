package correlate

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
)

// Strategy names how two legs were tied together.
type Strategy string

// The strategies, in evaluation order (descending score).
const (
	SessionID                 Strategy = "session_id"
	XCallID                   Strategy = "x_call_id"
	ChargingVectorRelatedICID Strategy = "charging_vector_related_icid"
	SDPOrigin                 Strategy = "sdp_origin"
	ChargingVectorICID        Strategy = "charging_vector_icid"
	ViaBranch                 Strategy = "via_branch"
	EmbeddedTag               Strategy = "embedded_tag"
	SameUsers                 Strategy = "same_users"
	TimingHeuristic           Strategy = "timing_heuristic"
)

// Strategies lists every strategy in evaluation order.
func Strategies() []Strategy {
	return []Strategy{SessionID, XCallID, ChargingVectorRelatedICID, SDPOrigin, ChargingVectorICID, ViaBranch, EmbeddedTag, SameUsers, TimingHeuristic}
}

// Score is the strategy's confidence, 0 to 100.
func (s Strategy) Score() int {
	switch s {
	case SessionID, XCallID:
		return 100
	case ChargingVectorRelatedICID:
		return 95
	case SDPOrigin:
		return 90
	case ChargingVectorICID:
		return 85
	case ViaBranch:
		return 80
	case EmbeddedTag:
		return 75
	case SameUsers:
		return 60
	case TimingHeuristic:
		return 50
	}
	return 0
}

// Identifier reports whether the strategy matches on an identifier (every
// strategy but same_users and timing_heuristic, which are guesses).
func (s Strategy) Identifier() bool { return s != TimingHeuristic && s != SameUsers && s.Score() > 0 }

// Defaults.
const (
	// DefaultWindow is --leg-correlation-window: the largest start gap of
	// a timing_heuristic match.
	DefaultWindow = 2 * time.Second
	// DefaultXCallIDHeader is the default header naming another leg's
	// Call-ID.
	DefaultXCallIDHeader = "X-Call-ID"
	// DefaultMaxKeys bounds the distinct identifier values indexed.
	DefaultMaxKeys = 1 << 18
	// DefaultMaxPostings bounds the dialogs indexed under one value.
	DefaultMaxPostings = 64
	// DefaultMaxKeysPerDialog bounds the values of each kind one dialog
	// contributes.
	DefaultMaxKeysPerDialog = 16
	// MinBranchLen is the shortest Via branch indexed.
	MinBranchLen = 8
	// MinTagLen is the shortest tag looked for inside another leg's tags
	// (embedded_tag): shorter ones occur inside unrelated strings by
	// chance.
	MinTagLen = 8
	// MinUserDigits is the shortest run of digits same_users compares
	// (the last MinUserDigits digits of a number, so "+49301234567" and
	// "0301234567" match across a prefix rewrite).
	MinUserDigits = 7
)

// Config tunes a Correlator. Zero fields take the defaults.
type Config struct {
	// Window is the timing heuristic's start window (--leg-correlation-window).
	Window time.Duration
	// XCallIDHeaders are the headers whose value names another leg's
	// Call-ID (default X-Call-ID). Matched case-insensitively.
	XCallIDHeaders []string
	// MaxKeys bounds the distinct identifier values indexed; past it new
	// values are refused (counted in Stats.KeysRefused).
	MaxKeys int
	// MaxPostings bounds the dialogs indexed under one value; past it the
	// dialog is not indexed under that value (Stats.PostingsRefused).
	MaxPostings int
	// MaxKeysPerDialog bounds the values of each kind one dialog
	// contributes (Stats.DialogKeysDropped).
	MaxKeysPerDialog int
}

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if len(c.XCallIDHeaders) == 0 {
		c.XCallIDHeaders = []string{DefaultXCallIDHeader}
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	if c.MaxPostings <= 0 {
		c.MaxPostings = DefaultMaxPostings
	}
	if c.MaxKeysPerDialog <= 0 {
		c.MaxKeysPerDialog = DefaultMaxKeysPerDialog
	}
	return c
}

// Leg is one other leg of a call.
type Leg struct {
	// CallID is the other leg's Call-ID, verbatim.
	CallID string
	// Strategy is the first strategy (in descending score) that tied it.
	Strategy Strategy
	// Score is the strategy's score.
	Score int
	// IdentifierMatch is false for a timing_heuristic guess.
	IdentifierMatch bool
	// GapMs is the start gap a timing match observed, in ms (timing only).
	GapMs int64
	// created is the leg's first message (ordering).
	created time.Time
}

// Result is one query's answer.
type Result struct {
	// Source is the Call-ID asked about.
	Source string
	// Legs are every leg found, highest score first.
	Legs []Leg
}

// Stats counts what the index holds and what its bounds refused.
type Stats struct {
	// Dialogs is the number of dialogs indexed.
	Dialogs int
	// Keys is the number of distinct identifier values indexed.
	Keys int
	// KeysRefused counts values refused at MaxKeys since the Correlator
	// was made (a refused value is not retried until its dialog changes).
	KeysRefused uint64
	// PostingsRefused counts (value, dialog) pairs refused at MaxPostings
	// since the Correlator was made.
	PostingsRefused uint64
	// DialogKeysDropped counts values the dialogs indexed carried past
	// MaxKeysPerDialog.
	DialogKeysDropped uint64
	// ConstantOrigins counts the SDP sess-ids found shared by unrelated
	// endpoints and so never used as identifiers.
	ConstantOrigins int
}

// keyKind namespaces the index.
type keyKind uint8

const (
	kindSession   keyKind = iota // a Session-ID UUID
	kindXNamed                   // a Call-ID named by an X-Call-ID-style header
	kindICID                     // a P-Charging-Vector icid-value
	kindRelated                  // a P-Charging-Vector related-icid
	kindOrigin                   // an SDP o= tuple: sess-id, username, nettype, addrtype, address
	kindOriginVer                // an SDP sess-id and version, whatever the address (a rewrite)
	kindBranch                   // an INVITE Via branch
	numKinds
)

type key struct {
	kind keyKind
	val  string
}

// entry is what the index extracted from one dialog.
type entry struct {
	callID   string
	msgCount int
	family   string
	created  time.Time
	updated  time.Time
	keys     [numKinds][]string
	hosts    []netip.Addr
	tags     []string // From and To tags of at least MinTagLen
	from, to string   // users of the dialog-creating request's From and To
	// origins are the (sess-id, sender party, "username address") the
	// dialog's SDP carried, for the constant test.
	origins []originSeen
	dropped int    // values past MaxKeysPerDialog
	gen     uint64 // refresh generation that last saw the dialog
}

// Correlator answers correlation queries over one dialog store. It is safe
// for concurrent use; queries are serialized.
type Correlator struct {
	store *dialog.Store
	cfg   Config

	mu        sync.Mutex
	rev       uint64
	built     bool
	gen       uint64
	entries   map[string]*entry
	index     map[key][]*entry
	byCreated []*entry
	stats     Stats
	// constant holds the sess-ids that identify no session (shared by
	// unrelated endpoints); tuples the distinct origins seen per sess-id.
	// Both bounded by MaxKeys.
	constant map[string]bool
	tuples   map[string][]string
}

// originSeen is one SDP origin a dialog carried.
type originSeen struct {
	sessID, party, tuple string
}

// New returns a Correlator over a dialog store.
func New(store *dialog.Store, cfg Config) *Correlator {
	return &Correlator{store: store, cfg: cfg.withDefaults(), entries: map[string]*entry{}, index: map[key][]*entry{},
		constant: map[string]bool{}, tuples: map[string][]string{}}
}

// Config returns the effective configuration.
func (c *Correlator) Config() Config { return c.cfg }

// Stats returns the index counters of the last snapshot.
func (c *Correlator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Find returns the other legs of callID. ok is false when the store holds no
// such Call-ID.
func (c *Correlator) Find(callID string) (Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refresh()
	src := c.entries[callID]
	if src == nil {
		return Result{Source: callID}, false
	}
	return Result{Source: callID, Legs: c.find(src)}, true
}

// refresh brings the snapshot up to the store's revision: dialogs whose
// message count moved are re-read and re-indexed, evicted ones forgotten.
// The store lists its rows in created order, so the timing index needs no
// sort.
func (c *Correlator) refresh() {
	rev := c.store.Revision()
	if c.built && rev == c.rev {
		return
	}
	c.gen++
	rows := c.store.Summaries(dialog.ByCreated)
	byCreated := c.byCreated[:0]
	for i := range rows {
		r := &rows[i]
		e := c.entries[r.CallID]
		if e == nil || e.msgCount != r.MsgCount {
			det, ok := c.store.Get(r.CallID)
			if !ok {
				continue // evicted since the listing
			}
			if e != nil {
				c.unindex(e)
			}
			e = c.extract(&det)
			c.entries[r.CallID] = e
			c.indexEntry(e)
			c.learnOrigins(e)
		}
		e.gen = c.gen
		byCreated = append(byCreated, e)
	}
	for id, e := range c.entries {
		if e.gen != c.gen {
			c.unindex(e)
			delete(c.entries, id)
		}
	}
	clear(byCreated[len(byCreated):cap(byCreated)]) // drop references to forgotten entries
	c.byCreated = byCreated
	c.stats.Dialogs = len(c.byCreated)
	c.stats.Keys = len(c.index)
	c.stats.ConstantOrigins = len(c.constant)
	c.rev, c.built = rev, true
}

// learnOrigins marks as constant a sess-id that unrelated endpoints share:
// one sent by both parties of a dialog (two phones in one call), or one
// seen under three distinct origins (username and address) in the capture
// (a B2BUA that rewrites the address shows two). RFC 4566 §5.2 asks the
// sess-id to be unique; an implementation that sends a constant makes it
// identify the implementation, not the session.
func (c *Correlator) learnOrigins(e *entry) {
	byParty := map[string]string{} // sess-id -> first party
	for _, o := range e.origins {
		if p, ok := byParty[o.sessID]; ok && p != o.party {
			c.markConstant(o.sessID)
		} else if !ok {
			byParty[o.sessID] = o.party
		}
		ts := c.tuples[o.sessID]
		if slices.Contains(ts, o.tuple) {
			continue
		}
		if ts == nil && len(c.tuples) >= c.cfg.MaxKeys {
			c.stats.KeysRefused++
			continue
		}
		ts = append(ts, o.tuple)
		if len(ts) >= 3 {
			c.markConstant(o.sessID)
			ts = ts[:3]
		}
		c.tuples[o.sessID] = ts
	}
}

func (c *Correlator) markConstant(sessID string) {
	if !c.constant[sessID] && len(c.constant) < c.cfg.MaxKeys {
		c.constant[sessID] = true
	}
}

// indexEntry posts a dialog under each of its values, within the bounds.
func (c *Correlator) indexEntry(e *entry) {
	c.stats.DialogKeysDropped += uint64(e.dropped)
	for k := keyKind(0); k < numKinds; k++ {
		for _, v := range e.keys[k] {
			c.post(key{k, v}, e)
		}
	}
}

// unindex removes a dialog from the postings of its values.
func (c *Correlator) unindex(e *entry) {
	c.stats.DialogKeysDropped -= uint64(e.dropped)
	for k := keyKind(0); k < numKinds; k++ {
		for _, v := range e.keys[k] {
			kk := key{k, v}
			list := c.index[kk]
			if i := slices.Index(list, e); i >= 0 {
				list = slices.Delete(list, i, i+1)
				if len(list) == 0 {
					delete(c.index, kk)
				} else {
					c.index[kk] = list
				}
			}
		}
	}
}

// post adds a dialog under a value, within the bounds.
func (c *Correlator) post(k key, e *entry) {
	list, ok := c.index[k]
	if !ok && len(c.index) >= c.cfg.MaxKeys {
		c.stats.KeysRefused++
		return
	}
	if len(list) >= c.cfg.MaxPostings {
		c.stats.PostingsRefused++
		return
	}
	c.index[k] = append(list, e)
}

// extract reads the identifiers of one dialog.
func (c *Correlator) extract(det *dialog.Detail) *entry {
	e := &entry{callID: det.CallID, msgCount: det.MsgCount, family: det.Family, created: det.CreatedAt, updated: det.UpdatedAt}
	add := func(k keyKind, v string) {
		if v == "" || slices.Contains(e.keys[k], v) {
			return
		}
		if len(e.keys[k]) >= c.cfg.MaxKeysPerDialog {
			e.dropped++
			return
		}
		e.keys[k] = append(e.keys[k], v)
	}
	for i := range det.Messages {
		m := &det.Messages[i]
		for _, a := range []netip.Addr{m.Src.Addr().Unmap(), m.Dst.Addr().Unmap()} {
			if a.IsValid() && !slices.Contains(e.hosts, a) && len(e.hosts) < c.cfg.MaxKeysPerDialog {
				e.hosts = append(e.hosts, a)
			}
		}
		msg := m.Msg
		if msg == nil {
			continue
		}
		for _, v := range msg.HeaderValues(sip.HdrSessionID) {
			sid, _ := sip.ParseSessionID(v)
			for _, u := range sid.UUIDs() {
				if isHex32(u) {
					add(kindSession, u)
				}
			}
		}
		for _, h := range c.cfg.XCallIDHeaders {
			for _, v := range msg.HeaderValuesNamed(h) {
				if v = strings.TrimSpace(v); v != det.CallID {
					add(kindXNamed, v)
				}
			}
		}
		for _, v := range msg.HeaderValues(sip.HdrPChargingVector) {
			pcv, _ := sip.ParsePChargingVector(v)
			add(kindICID, pcv.ICID)
			add(kindRelated, pcv.RelatedICID)
		}
		if body, ok := msg.SDPBody(); ok && len(body) > 0 {
			if s, err := sdp.Parse(body); err == nil && s.HasOrigin {
				if k := originKey(s.Origin); k != "" {
					add(kindOrigin, k)
					add(kindOriginVer, s.Origin.SessionID+" "+s.Origin.SessionVersion)
					party := msg.From.Tag
					if !msg.IsRequest {
						party = msg.To.Tag
					}
					if len(e.origins) < c.cfg.MaxKeysPerDialog {
						e.origins = append(e.origins, originSeen{s.Origin.SessionID, party,
							s.Origin.Username + " " + strings.ToLower(s.Origin.Address)})
					}
				}
			}
		}
		for _, t := range []string{msg.From.Tag, msg.To.Tag} {
			if len(t) >= MinTagLen && !slices.Contains(e.tags, t) && len(e.tags) < c.cfg.MaxKeysPerDialog {
				e.tags = append(e.tags, t)
			}
		}
		if msg.IsRequest && e.from == "" && e.to == "" && msg.To.Tag == "" {
			e.from, e.to = userKey(msg.From.User), userKey(msg.To.User)
		}
		if msg.IsRequest && msg.Method == "INVITE" {
			for _, v := range msg.Vias {
				if len(v.Branch) >= MinBranchLen && !strings.EqualFold(v.Branch, "z9hG4bK") {
					add(kindBranch, v.Branch)
				}
			}
		}
	}
	return e
}

// originKey is the o= tuple that identifies a session (RFC 4566 §5.2: the
// version is excluded, it moves on every change), sess-id first. A sess-id
// that identifies nothing (0, or an RFC example value an implementation
// copied) yields "".
func originKey(o sdp.Origin) string {
	if exampleSessID(o.SessionID) {
		return ""
	}
	return strings.Join([]string{o.SessionID, o.Username, o.NetType, o.AddrType, strings.ToLower(o.Address)}, " ")
}

// exampleSessID reports a sess-id that is no identifier: zero, or the
// values of the RFC 4566 §5 and RFC 3264 §10 examples
// ("o=jdoe 2890844526 2890842807", "o=alice 2890844526 2890844526"),
// which implementations copy verbatim.
func exampleSessID(id string) bool {
	switch strings.TrimLeft(id, "0") {
	case "", "2890844526", "2890844527", "2890842807":
		return true
	}
	return false
}

// sessIDOf is the sess-id a kindOrigin or kindOriginVer value starts with.
func sessIDOf(v string) string {
	if i := strings.IndexByte(v, ' '); i >= 0 {
		return v[:i]
	}
	return v
}

// userKey reduces a URI user to what survives a B2BUA's number rewrite:
// the last MinUserDigits digits of a telephone number (visual separators
// and a leading + dropped, RFC 3966), else the user lower-cased. Users of
// fewer digits (extensions) compare whole.
func userKey(u string) string {
	var d []byte
	for i := 0; i < len(u); i++ {
		switch c := u[i]; {
		case c >= '0' && c <= '9':
			d = append(d, c)
		case c == '+' || c == '-' || c == '.' || c == '(' || c == ')':
		default:
			return strings.ToLower(u)
		}
	}
	if len(d) > MinUserDigits {
		d = d[len(d)-MinUserDigits:]
	}
	return string(d)
}

func isHex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// find runs every strategy for one dialog of the current snapshot.
func (c *Correlator) find(src *entry) []Leg {
	var legs []Leg
	seen := map[*entry]bool{src: true}
	take := func(s Strategy, e *entry, gap int64) {
		if e == nil || seen[e] {
			return
		}
		seen[e] = true
		legs = append(legs, Leg{CallID: e.callID, Strategy: s, Score: s.Score(), IdentifierMatch: s.Identifier(), GapMs: gap, created: e.created})
	}
	posted := func(k keyKind, v string) []*entry { return c.index[key{k, v}] }

	// session_id: the non-nil halves intersect.
	for _, u := range src.keys[kindSession] {
		for _, e := range posted(kindSession, u) {
			take(SessionID, e, 0)
		}
	}
	// x_call_id: a leg naming this one, this one naming a leg, or both
	// naming the same Call-ID.
	for _, e := range posted(kindXNamed, src.callID) {
		take(XCallID, e, 0)
	}
	for _, n := range src.keys[kindXNamed] {
		take(XCallID, c.entries[n], 0)
		for _, e := range posted(kindXNamed, n) {
			take(XCallID, e, 0)
		}
	}
	// charging_vector_related_icid: one side's related-icid is the other's
	// icid-value.
	for _, r := range src.keys[kindRelated] {
		for _, e := range posted(kindICID, r) {
			take(ChargingVectorRelatedICID, e, 0)
		}
	}
	for _, i := range src.keys[kindICID] {
		for _, e := range posted(kindRelated, i) {
			take(ChargingVectorRelatedICID, e, 0)
		}
	}
	// sdp_origin: a shared o= tuple, or a shared sess-id and version
	// whatever the address (a B2BUA or SBC that rewrote it), between legs
	// alive at the same time; never a constant sess-id.
	for _, k := range []keyKind{kindOrigin, kindOriginVer} {
		for _, o := range src.keys[k] {
			if c.constant[sessIDOf(o)] {
				continue
			}
			for _, e := range posted(k, o) {
				if c.coexist(src, e) {
					take(SDPOrigin, e, 0)
				}
			}
		}
	}
	// charging_vector_icid: a shared icid-value.
	for _, i := range src.keys[kindICID] {
		for _, e := range posted(kindICID, i) {
			take(ChargingVectorICID, e, 0)
		}
	}
	// via_branch: a branch shared by INVITEs of both legs.
	for _, b := range src.keys[kindBranch] {
		for _, e := range posted(kindBranch, b) {
			take(ViaBranch, e, 0)
		}
	}
	// Within the window: embedded_tag (one leg's tag inside the other's
	// tag or Call-ID, as B2BUAs derive the far leg's from the near one's),
	// then same_users (the same From and To users, a guess), then
	// timing_heuristic (same family, a shared signaling address).
	w := c.cfg.Window
	lo, _ := slices.BinarySearchFunc(c.byCreated, src.created.Add(-w), func(e *entry, t time.Time) int { return e.created.Compare(t) })
	window := c.byCreated[lo:]
	for _, e := range window {
		if e.created.After(src.created.Add(w)) {
			break
		}
		if !seen[e] && embedded(src, e) {
			take(EmbeddedTag, e, 0)
		}
	}
	// same_users only when one call in the window shares the users: where
	// several do (a load generator's ua1 to ua2, a caller redialing), the
	// users identify nothing (sipp-branch-scenario.pcapng).
	var same *entry
	sameCount := 0
	for _, e := range window {
		if e.created.After(src.created.Add(w)) {
			break
		}
		if e == src || e.family != src.family || src.family != invite || src.from == "" || src.to == "" || e.from != src.from || e.to != src.to {
			continue
		}
		sameCount++
		same = e
	}
	if sameCount == 1 && !seen[same] {
		take(SameUsers, same, absGap(same.created.Sub(src.created)).Milliseconds())
	}
	for _, e := range window {
		if e.created.After(src.created.Add(w)) {
			break
		}
		if seen[e] || e.family != src.family || !shareHost(src.hosts, e.hosts) {
			continue
		}
		take(TimingHeuristic, e, absGap(e.created.Sub(src.created)).Milliseconds())
	}

	slices.SortStableFunc(legs, func(a, b Leg) int {
		if x := cmp.Compare(b.Score, a.Score); x != 0 {
			return x
		}
		if x := cmp.Compare(a.GapMs, b.GapMs); x != 0 {
			return x
		}
		if x := a.created.Compare(b.created); x != 0 {
			return x
		}
		return strings.Compare(a.CallID, b.CallID)
	})
	return legs
}

// invite is the family same_users compares: calls, not subscriptions or
// registrations (a phone refreshes several of those at once).
var invite = dialog.FamilyInvite.String()

func absGap(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// embedded reports whether a tag of one leg (MinTagLen or longer) appears
// as a whole token inside a different tag or the Call-ID of the other: set
// off by the string's ends or by characters that are not letters or digits,
// as a B2BUA writes it ("sbc-ph7c1e5a90-b"). A tag that merely prefixes a
// longer counter is no token: SIPp's 4461SIPpTag001 is not inside
// 4461SIPpTag0010.
func embedded(a, b *entry) bool {
	in := func(x, y *entry) bool {
		for _, t := range x.tags {
			if containsToken(y.callID, t) {
				return true
			}
			for _, u := range y.tags {
				if u != t && containsToken(u, t) {
					return true
				}
			}
		}
		return false
	}
	return in(a, b) || in(b, a)
}

// containsToken reports whether t occurs in s with no letter or digit
// directly before or after it.
func containsToken(s, t string) bool {
	if t == "" {
		return false
	}
	for off := 0; off <= len(s)-len(t); {
		i := strings.Index(s[off:], t)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(t)
		if (i == 0 || !alnum(s[i-1])) && (end == len(s) || !alnum(s[end])) {
			return true
		}
		off = i + 1
	}
	return false
}

func alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// coexist reports whether two dialogs' spans, widened by the window,
// overlap.
func (c *Correlator) coexist(a, b *entry) bool {
	w := c.cfg.Window
	return !a.created.Add(-w).After(b.updated) && !b.created.Add(-w).After(a.updated)
}

func shareHost(a, b []netip.Addr) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
