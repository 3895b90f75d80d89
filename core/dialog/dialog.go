package dialog

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// Observation is one SIP message handed to the store, with where and when it
// was seen. Msg is a message as sip.Parse returned it, unmodified: the store
// keeps its bytes and parses them again for readers (a Message the parser
// did not make, or one whose Call-ID was replaced, is kept whole and shared
// with readers instead; it must not be modified after it is handed over).
type Observation struct {
	Msg       *sip.Message
	TS        time.Time
	Src, Dst  netip.AddrPort
	Transport packet.Transport
	Origin    packet.Origin
	// Frame points at the frame the message came from; zero when unknown
	// (live capture without an evidence ring, synthesized input).
	Frame   packet.FrameRef
	DSCP    uint8
	HasDSCP bool
	// IPID is the IPv4 Identification of the datagram the message came in
	// (packet.Packet.IPID); HasIPID is false where there is none (IPv6,
	// TCP, HEP). Two copies whose IDs differ were two datagrams: never
	// capture duplicates of each other (dup.go).
	IPID    uint16
	HasIPID bool
	// InvalidTS: the capture timestamp was unusable and wall clock was
	// substituted; the dialog's timing is flagged.
	InvalidTS bool
}

// Message is one retained message of a dialog.
type Message struct {
	Msg       *sip.Message
	TS        time.Time
	Src, Dst  netip.AddrPort
	Transport packet.Transport
	Origin    packet.Origin
	Frame     packet.FrameRef // zero when unknown
	DSCP      uint8
	HasDSCP   bool
	// Index is the message's 0-based position among every message of the
	// Call-ID.
	Index int
	// Leg is the index of the leg the message joined (-1 when the leg cap
	// was reached and it joined none).
	Leg int
	// Retransmission: an identical message (same direction, status, CSeq
	// number and method, and remote tag) was seen before in this dialog.
	Retransmission bool
	// Duplicates counts the capture duplicates of this message (the same
	// bytes seen again within the duplicate window: a mirrored copy, a
	// second interface, a second HEP agent; dup.go). They are not messages
	// of the dialog and are not retained.
	Duplicates int
}

// identitySeed keys the retransmission identity hash; it is random per
// process, so nobody can craft two messages whose identities collide.
var identitySeed = maphash.MakeSeed()

// identity hashes what makes a message a retransmission of another: its
// direction, status, CSeq number and method, and its tags (a response from
// another fork, or a request of another dialog sharing the Call-ID, is not a
// retransmission), and a provisional response's RSeq: a reliable
// provisional is re-sent with its RSeq, and the next one carries the next
// RSeq (RFC 3262 §3), so two 183s of different RSeq are two messages. A
// capture duplicate never gets this far (dup.go).
//
// mi is what apply worked out of the message (msgInfo), ab its addresses
// as putAddrPorts writes them (once for identity and dupKey, Store.Apply).
func identity(o *Observation, mi *msgInfo, ab *addrBytes) uint64 {
	m := o.Msg
	method := mi.cseqMethod
	var rseq string
	status := 0
	if !m.IsRequest {
		status = m.StatusCode
	}
	if status > 100 && status < 200 {
		if v, ok := m.Header(sip.HdrRSeq); ok {
			rseq = strings.TrimSpace(v)
		}
	}
	// One pass of the seeded hash over a buffer on the stack: the
	// addresses, ports, status and CSeq number, then each string after its
	// length (so no two lists of strings write the same bytes).
	var b [identityBuf]byte
	n := copy(b[:], ab[:])
	binary.BigEndian.PutUint32(b[n:], uint32(status))
	binary.BigEndian.PutUint32(b[n+4:], m.CSeq.Number)
	n += 8
	strs := [4]string{method, m.From.Tag, m.To.Tag, rseq}
	if n+4*4+len(method)+len(m.From.Tag)+len(m.To.Tag)+len(rseq) > len(b) {
		// Long tags (a hostile sender's): the streaming hash, same fields.
		var h maphash.Hash
		h.SetSeed(identitySeed)
		h.Write(b[:n])
		for _, s := range strs {
			var l [4]byte
			binary.BigEndian.PutUint32(l[:], uint32(len(s)))
			h.Write(l[:])
			h.WriteString(s)
		}
		return h.Sum64()
	}
	for _, s := range strs {
		binary.BigEndian.PutUint32(b[n:], uint32(len(s)))
		n += 4
		n += copy(b[n:], s)
	}
	return maphash.Bytes(identitySeed, b[:n])
}

// identityBuf is the stack buffer identity hashes in one pass: room for
// the fixed fields and the tags and method of any ordinary message.
const identityBuf = 256

// addrBytes is a message's two addresses and ports as putAddrPorts writes
// them.
type addrBytes [36]byte

// putAddrPorts writes two addresses (16 bytes each, IPv4 as mapped IPv6)
// and their ports into b and returns how many bytes it wrote (36).
func putAddrPorts(b []byte, src, dst netip.AddrPort) int {
	s, d := src.Addr().As16(), dst.Addr().As16()
	n := copy(b, s[:])
	n += copy(b[n:], d[:])
	binary.BigEndian.PutUint16(b[n:], src.Port())
	binary.BigEndian.PutUint16(b[n+2:], dst.Port())
	return n + 4
}

// smallSeen is how many identities a dialog keeps in a slice before it
// switches to a map.
const smallSeen = 32

// First capacities of a dialog's growing slices: what a call's messages
// need (a seven-message call: seven identities, three transactions, four
// or five transitions of its leg, two addresses), so that a call costs one
// allocation per slice instead of one per doubling.
const (
	firstSeen        = 8
	txSlab           = 4
	firstTransitions = 6
	firstAddrs       = 4
	firstMsgs        = 8 // an INVITE dialog's; other dialogs start at firstMsgsOther
	firstMsgsOther   = 4
)

// withCap returns s, or an empty slice of capacity n when s is nil.
func withCap[T any](s []T, n int) []T {
	if s == nil {
		return make([]T, 0, n)
	}
	return s
}

type txKey struct {
	branch string
	method string
	cseq   uint32
}

// tx is one transaction: top Via branch + CSeq number + CSeq method.
// Its times are stamps and its counts int32 (a count past 2^31 would need
// that many messages in one dialog, where MaxMessages and the byte budget
// keep far fewer): 128 bytes instead of 168.
type tx struct {
	key         txKey
	firstReq    stamp
	lastReq     stamp
	finalAt     stamp
	finalReason string
	finalCode   int
	leg         int32
	reqCount    int32
	respCount   int32
	requestSeen bool
	reInvite    bool // an INVITE whose request carried a To tag
	unregister  bool // a REGISTER removing bindings
}

// leg is one dialog inside a Call-ID (see the package comment).
// Its times are stamps and its counts int32 (see tx).
type leg struct {
	// What a row reads, kept together.
	state      State
	family     Family
	challenged bool
	method     string
	fromUser   string
	toUser     string
	// challenges counts the 401/407 answers to the leg's opening requests
	// (retransmissions excluded).
	challenges int32
	msgCount   int32
	// first and hop are 1 + the position among the retained messages of
	// the leg's first retained message and of its last retained
	// out-of-dialog request of the leg's method (0: none); toHost is the To
	// host of that first message. Extra reads them for the primary leg.
	first, hop int32
	toHost     string
	// INVITE-family timing milestones; zero when not seen. Responses count
	// only when sent back to the address the request came from, so the
	// hops of a proxy seen in one capture do not mix vantage points.
	// inviteAt is the INVITE that was routed: a 401/407 ends the delay of
	// the INVITE it answers, and the credentialed retry restarts the clock
	// (see time; docs/call-timing.md).
	inviteAt   stamp
	ringingAt  stamp
	answeredAt stamp
	byeAt      stamp
	byeOKAt    stamp

	tag     string
	tagSum  uint64 // tagSum(tag): legFor and noteFork compare it, not tag's bytes
	created stamp
	updated stamp

	forks []fork

	transitions                      []transition
	forksDropped, transitionsDropped int32

	inviteSrc   netip.Addr
	byeSrc      netip.Addr
	tryingAt    stamp
	answerCSeq  uint32
	authRetries int32 // see below
	finalAt     stamp // first non-challenge final response to an opening INVITE
	// Auth retries of the opening INVITE: firstInviteAt is the first
	// INVITE (set once a retry restarted the clock), challengeAt the
	// pending 401/407 sent back to the caller (zero when none), authWait
	// the caller's waits from each challenge to its retry, authRetries
	// how many retries restarted the clock.
	firstInviteAt stamp
	challengeAt   stamp
	authWait      time.Duration
}

// transition is a Transition as a leg keeps it (40 bytes instead of 96:
// states and arrival as their codes, the time as seconds and nanoseconds).
type transition struct {
	sec      int64
	reason   string // a Cell's reason: a constant of the table
	message  int
	nsec     int32
	from, to State
	arrival  Arrival
}

func (t *transition) view() Transition {
	return Transition{
		At: time.Unix(t.sec, int64(t.nsec)).UTC(), From: t.from.String(), To: t.to.String(),
		Arrival: t.arrival.String(), Reason: t.reason, Message: t.message,
	}
}

// Fork is one remote tag that answered a leg's requests (several for a
// forking proxy).
type Fork struct {
	// Tag is the remote tag.
	Tag string `json:"tag" desc:"remote tag of the fork"`
	// Messages counts the messages carrying this tag.
	Messages int `json:"messages" desc:"messages carrying this remote tag"`
	// LastStatus is the last response status from this fork; absent when it
	// sent no response.
	LastStatus int `json:"last_status,omitempty" desc:"last response status from this fork"`
}

// fork is a Fork as a leg keeps it, with tagSum(tag): noteFork compares
// tags by length and that hash, as hasTag does, without reading the tag's
// bytes in an earlier message. Its counts are int32 (see tx), so it stays
// 32 bytes, as Fork is.
type fork struct {
	tag        string
	sum        uint64
	messages   int32
	lastStatus int32
}

// Transition is one state change of a leg.
type Transition struct {
	At      time.Time `json:"at" desc:"time of the message that moved the state"`
	From    string    `json:"from,omitempty" desc:"state before (absent for the first message)"`
	To      string    `json:"to" desc:"state after"`
	Arrival string    `json:"arrival" desc:"the arriving message as the table names it"`
	Reason  string    `json:"reason" desc:"why the table moved the state"`
	// Message is the index of the message that caused the change.
	Message int `json:"message" desc:"index of the message that moved the state"`
}

// dtmfEvent is one INFO DTMF digit.
type dtmfEvent struct {
	at       time.Time
	digit    string
	duration int
	frame    packet.FrameRef
}

type dialog struct {
	// What a row reads first, kept together (a listing reads every
	// dialog: one cache line less per dialog is a millisecond per 100,000).
	callID   string
	created  time.Time
	updated  time.Time
	msgCount int
	// retrans and dups (capture duplicates, dup.go, not in msgCount)
	// saturate at 2^31-1 like the bounds below (int32: see tx).
	retrans, dups int32
	legs          []*leg
	// finalCode is final's code (0: none), so a row reads it without
	// touching the transaction; final is the transaction finalStatus
	// reports (nil: none), decided again when finalDirty.
	finalCode int32
	// prim is the index of the primary leg in legs (see primary).
	prim         int32
	firstOrigin  packet.Origin
	clockSuspect bool
	// gone: evicted from the store (set under the write lock).
	gone       bool
	finalDirty bool
	logged     bool // listed in the store's change log (changes.go)
	firstFrame packet.FrameRef
	final      *tx
	seq        uint64
	idB        uint64 // the Call-ID's second hash (ids.go)

	// Bounds reached, and malformed messages (int32: see tx). legsDropped
	// counts the messages that joined no leg because the leg cap was
	// reached. (The identity and DTMF bounds are counted in rare.)
	legsDropped, msgsDropped, malformed, txDropped int32

	msgs  []retained
	addrs []netip.AddrPort // the retained messages' addresses
	bytes int64            // what the store holds for this dialog (membudget.go)

	seen    []uint64 // the first smallSeen identities
	txOrder []*tx    // every transaction, in order of first sight
	txSlab  []tx     // where the newest transactions live, txSlab at a time

	cause *Cause

	// rare holds what few dialogs need (see dialogRare); nil until one
	// of them is needed.
	rare *dialogRare

	// What aggregations read from the retained messages besides the
	// primary leg's first message and hop, noted as they are retained (see
	// Extra): the first non-empty User-Agent.
	ua string

	// slot is the dialog's entry in the store's LRU list (lru.go).
	slot int32

	// first holds what a dialog's first leg, identities, addresses and
	// transactions need at first (what a call uses): one allocation with
	// the dialog instead of eight, next to it in memory. The slices above
	// start in it and move out only when they outgrow it. The dialog
	// stays at or under 1,784 bytes: with the allocator's 8-byte header
	// that is the 1,792-byte size class (TestDialogFitsItsSizeClass); what
	// few dialogs need waits in rare to leave the room.
	first struct {
		leg         leg
		transitions [firstTransitions]transition
		tx          [txSlab]tx
		addrs       [firstAddrs]netip.AddrPort
		seen        [firstSeen]uint64
		// The first entries of legs, of the first leg's forks and of
		// txOrder: a call's one leg, one remote tag and first
		// transactions need no array of their own.
		legs    [1]*leg
		forks   [1]fork
		txOrder [txSlab]*tx
	}
}

// dialogRare is what a dialog rarely needs, allocated with the first of
// it, so that every dialog does not carry the empty fields: the indexes a
// dialog builds past its small-set bounds, what its messages carry besides
// the usual (another capture file, an address past the table's cap, a
// message the parser did not make) and INFO DTMF digits.
type dialogRare struct {
	addrIdx map[netip.AddrPort]uint16 // addrs indexed, past 16 of them
	far     map[int][2]netip.AddrPort // addresses past addrs' cap, by message
	srcs    map[int]string            // frame sources other than firstFrame's, by message
	whole   map[int]*sip.Message      // messages the parser did not make, by message
	seenMap map[uint64]struct{}       // identities past the first smallSeen
	txIndex map[txKey]*tx             // built once there are more than smallTxs
	dtmf    []dtmfEvent

	seenDropped, dtmfDropped int32 // bounds reached (int32: see tx)
}

// more returns the dialog's rare part, allocating it the first time.
func (d *dialog) more() *dialogRare {
	if d.rare == nil {
		d.rare = new(dialogRare)
	}
	return d.rare
}

// Per-dialog bounds on attacker-keyed sets (engine.md §17).
const (
	maxLegs        = 64
	maxForks       = 16
	maxTransitions = 64
	maxTxs         = 1024
	maxDTMF        = 256
)

func newDialog(callID string, seq uint64, o *Observation) *dialog {
	d := &dialog{
		callID:      callID,
		seq:         seq,
		created:     o.TS,
		updated:     o.TS,
		firstFrame:  o.Frame,
		firstOrigin: o.Origin,
	}
	d.txSlab = d.first.tx[:0]
	d.txOrder = d.first.txOrder[:0]
	d.legs = d.first.legs[:0]
	d.addrs = d.first.addrs[:0]
	d.seen = d.first.seen[:0]
	return d
}

// applyResult says what happened to one message.
type applyResult struct {
	retrans bool
}

// msgInfo is what several steps of apply read from one message, worked
// out once per message instead of in each step: the methods in their
// constant spelling (upperMethod) and the From tag's sum (tagSum).
type msgInfo struct {
	method     string // upperMethod(m.Method) of a request; "" for a response
	cseqMethod string // upperMethod(m.CSeq.Method); "" when the CSeq is not valid
	fromSum    uint64 // tagSum(m.From.Tag)
}

func infoOf(m *sip.Message) msgInfo {
	mi := msgInfo{fromSum: tagSum(m.From.Tag)}
	if m.IsRequest {
		mi.method = upperMethod(m.Method)
	}
	if m.CSeq.Valid {
		mi.cseqMethod = upperMethod(m.CSeq.Method)
	}
	return mi
}

func (d *dialog) apply(o *Observation, cfg *Config, ab *addrBytes) applyResult {
	m := o.Msg
	mi := infoOf(m)
	if o.TS.After(d.updated) {
		d.updated = o.TS
	}
	if o.InvalidTS {
		d.clockSuspect = true
	}
	if len(m.Malformed) > 0 {
		inc32(&d.malformed)
	}
	index := d.msgCount
	d.msgCount++

	retrans := d.retransmission(o, cfg, &mi, ab)
	legs := len(d.legs)
	ts := stampOf(o.TS)
	li, l := d.legFor(m, ts, &mi)
	if len(d.legs) > legs {
		// a leg's first message always runs its machine, so no leg is left
		// without a state
		retrans = false
	}
	if retrans {
		inc32(&d.retrans)
	}
	t := d.transaction(m, ts, li, retrans, &mi)

	if len(d.msgs) < cfg.MaxMessages {
		d.retain(o, index, li, retrans)
	} else {
		inc32(&d.msgsDropped)
	}

	if namesCause(m) {
		d.noteCause(m, o.Frame)
	}

	if l != nil {
		inc32(&l.msgCount)
		if l.updated.before(ts) {
			l.updated = ts
		}
		d.noteFork(l, m, mi.fromSum)
		if !retrans {
			d.step(l, m, t, o, index, &mi)
			if m.IsRequest && m.Method == "INFO" {
				d.noteDTMF(m, o)
			}
		}
		if len(d.legs) > 1 {
			if p := int32(d.pickPrimary()); p != d.prim {
				d.prim = p
				d.finalDirty = true // the call's final response is its primary's
			}
		}
	}
	if d.finalDirty {
		d.final, d.finalDirty = d.decideFinal(), false
		d.finalCode = 0
		if d.final != nil {
			d.finalCode = int32(d.final.finalCode)
		}
	}
	return applyResult{retrans: retrans}
}

// retransmission checks and remembers the message's identity.
func (d *dialog) retransmission(o *Observation, cfg *Config, mi *msgInfo, ab *addrBytes) bool {
	m := o.Msg
	if !m.CSeq.Valid {
		return false
	}
	k := identity(o, mi, ab)
	if slices.Contains(d.seen, k) {
		return true
	}
	if d.rare != nil {
		if _, ok := d.rare.seenMap[k]; ok {
			return true
		}
	}
	if d.seenCount() >= cfg.MaxSeen {
		inc32(&d.more().seenDropped)
		return false
	}
	if len(d.seen) < smallSeen {
		d.seen = append(withCap(d.seen, firstSeen), k)
		return false
	}
	r := d.more()
	if r.seenMap == nil {
		r.seenMap = map[uint64]struct{}{}
	}
	r.seenMap[k] = struct{}{}
	return false
}

func (d *dialog) seenCount() int {
	if d.rare == nil {
		return len(d.seen)
	}
	return len(d.seen) + len(d.rare.seenMap)
}

// tagSeed keys tagSum; random per process.
var tagSeed = maphash.MakeSeed()

// tagSum is the seeded hash a leg keeps of its tag.
func tagSum(tag string) uint64 { return maphash.String(tagSeed, tag) }

// hasTag reports whether the leg's tag is tag (sum: tagSum(tag)), by
// length and seeded hash: the leg's tag points into its first message, a
// cache line nothing else reads by now, and a message reaches this on
// every message. Two tags of one length are taken for one only if their
// 64-bit hashes agree: 2^-64 per comparison for different tags, and a
// sender cannot aim at it without the seed (random per process), the
// standard the duplicate table's fingerprint keeps (dup.go).
func (l *leg) hasTag(tag string, sum uint64) bool {
	return len(l.tag) == len(tag) && l.tagSum == sum
}

// legFor finds or opens the leg a message belongs to. It returns (-1, nil)
// when the message would open a leg past the cap.
func (d *dialog) legFor(m *sip.Message, ts stamp, mi *msgInfo) (int, *leg) {
	ft, tt := m.From.Tag, m.To.Tag
	ftSum := mi.fromSum
	hint, opener := familyHint(m, mi)
	best := -1
	for pass := 0; pass < 2; pass++ {
		tag, sum := ft, ftSum
		if pass == 1 {
			if tt == "" || tt == ft {
				break
			}
			tag, sum = tt, tagSum(tt)
		}
		for i := range d.legs {
			l := d.legAt(i)
			if !l.hasTag(tag, sum) {
				continue
			}
			if !hint.ok || l.family == hint.f {
				return i, l
			}
			if best < 0 {
				best = i
			}
		}
		if best >= 0 && !opener {
			return best, d.legAt(best)
		}
	}
	if best >= 0 && !opener {
		return best, d.legAt(best)
	}
	if len(d.legs) >= maxLegs {
		inc32(&d.legsDropped)
		return -1, nil
	}
	f := FamilyGeneric
	method := ""
	if m.IsRequest {
		method = mi.method
		f = FamilyOf(method)
	} else if m.CSeq.Valid {
		method = mi.cseqMethod
		f = responseFamily(method)
	}
	nl := leg{
		tag: ft, tagSum: ftSum, family: f, method: method, created: ts, updated: ts,
		fromUser: m.From.User, toUser: m.To.User,
	}
	var l *leg
	if len(d.legs) == 0 { // the first leg: legs are never removed
		l = &d.first.leg
		nl.transitions = d.first.transitions[:0]
		nl.forks = d.first.forks[:0]
		*l = nl
	} else {
		l = new(leg)
		*l = nl
	}
	d.legs = append(d.legs, l)
	return len(d.legs) - 1, l
}

// responseFamily is the family a leg opened by a response belongs to: the
// family of the transaction it answers (an ACK has no transaction of its own,
// so a "response to ACK" opens a generic leg).
func responseFamily(cseqMethod string) Family {
	switch cseqMethod {
	case "INVITE", "BYE", "CANCEL", "PRACK":
		return FamilyInvite
	case "REGISTER":
		return FamilyRegister
	case "SUBSCRIBE", "NOTIFY":
		return FamilySubscribe
	}
	return FamilyGeneric
}

type famHint struct {
	f  Family
	ok bool
}

// familyHint names the family a message's transaction belongs to when that
// is unambiguous (INVITE, REGISTER, SUBSCRIBE), and whether the message is an
// out-of-dialog request that opens a leg of that family.
func familyHint(m *sip.Message, mi *msgInfo) (famHint, bool) {
	method := mi.method
	if !m.IsRequest {
		if !m.CSeq.Valid {
			return famHint{}, false
		}
		method = mi.cseqMethod
	}
	switch method {
	case "INVITE":
		return famHint{FamilyInvite, true}, m.IsRequest && m.To.Tag == ""
	case "REGISTER":
		return famHint{FamilyRegister, true}, m.IsRequest && m.To.Tag == ""
	case "SUBSCRIBE":
		return famHint{FamilySubscribe, true}, m.IsRequest && m.To.Tag == ""
	}
	return famHint{}, false
}

// smallTxs is how many transactions a dialog searches linearly before it
// indexes them in a map.
const smallTxs = 16

func (d *dialog) findTx(k txKey) *tx {
	if d.rare != nil && d.rare.txIndex != nil {
		return d.rare.txIndex[k]
	}
	for i := range len(d.txOrder) {
		t := d.txAt(i)
		// The number and the (interned) method first: they tell most
		// transactions apart without reading the branch, whose bytes lie
		// in an earlier message.
		if t.key.cseq == k.cseq && t.key.method == k.method && t.key.branch == k.branch {
			return t
		}
	}
	return nil
}

// txAt returns transaction i in order of first sight: txOrder[i], read for
// the first txSlab from first.tx without txOrder's array (a cache line of
// its own): newDialog starts txSlab in first.tx and the first txSlab
// transactions are appended there, in order, and never move.
func (d *dialog) txAt(i int) *tx {
	if i < txSlab {
		return &d.first.tx[i]
	}
	return d.txOrder[i]
}

// upperMethod is strings.ToUpper(m), the constant spelling for the methods
// of RFC 3261 and its extensions (sip.CanonicalMethod): a method the dialog
// keeps (a leg's, a transaction's) then holds no message bytes, and
// comparing two of them reads no message.
func upperMethod(m string) string { return sip.CanonicalMethod(m) }

// transaction records the message in its transaction (top Via branch + CSeq
// number + CSeq method) and returns it; nil when the message names no
// transaction or the per-dialog transaction cap was reached.
func (d *dialog) transaction(m *sip.Message, ts stamp, li int, retrans bool, mi *msgInfo) *tx {
	if !m.CSeq.Valid {
		return nil
	}
	k := txKey{branch: m.TopBranch(), cseq: m.CSeq.Number, method: mi.cseqMethod}
	t := d.findTx(k)
	if t == nil {
		if len(d.txOrder) >= maxTxs {
			inc32(&d.txDropped)
			return nil
		}
		if len(d.txSlab) == cap(d.txSlab) {
			d.txSlab = make([]tx, 0, txSlab)
		}
		d.txSlab = append(d.txSlab, tx{key: k, leg: int32(li)}) // within capacity: earlier pointers stay
		t = &d.txSlab[len(d.txSlab)-1]
		d.txOrder = append(d.txOrder, t)
		if d.rare != nil && d.rare.txIndex != nil {
			d.rare.txIndex[k] = t
		} else if len(d.txOrder) > smallTxs {
			idx := make(map[txKey]*tx, len(d.txOrder))
			for _, x := range d.txOrder {
				idx[x.key] = x
			}
			d.more().txIndex = idx
		}
	}
	if m.IsRequest {
		if !t.requestSeen {
			t.requestSeen = true
			d.finalDirty = true
			t.firstReq = ts
			t.reInvite = k.method == "INVITE" && m.To.Tag != ""
			t.unregister = k.method == "REGISTER" && expiresZero(m)
		}
		inc32(&t.reqCount)
		t.lastReq = ts
		return t
	}
	inc32(&t.respCount)
	// The first final response decides the transaction, except that a 2xx
	// after a failure (another branch answered) replaces it.
	if m.StatusCode >= 200 && !retrans && (t.finalCode == 0 || m.StatusCode < 300 && t.finalCode >= 300) {
		t.finalCode = m.StatusCode
		t.finalReason = m.Reason
		t.finalAt = ts
		d.finalDirty = true
	}
	return t
}

// arrival classifies a message for the transition table.
func (d *dialog) arrival(l *leg, m *sip.Message, t *tx, mi *msgInfo) Arrival {
	if m.IsRequest {
		switch mi.method {
		case "INVITE":
			if m.To.Tag != "" {
				return ReqReInvite
			}
			return ReqInvite
		case "ACK":
			return ReqAck
		case "BYE":
			return ReqBye
		case "CANCEL":
			return ReqCancel
		case "PRACK":
			return ReqPrack
		case "UPDATE":
			return ReqUpdate
		case "INFO":
			return ReqInfo
		case "REFER":
			return ReqRefer
		case "NOTIFY":
			switch subscriptionState(m) {
			case "active":
				return ReqNotifyActive
			case "pending":
				return ReqNotifyPending
			case "terminated":
				return ReqNotifyTerminated
			}
			return ReqNotify
		case "SUBSCRIBE":
			return ReqSubscribe
		case "REGISTER":
			return ReqRegister
		}
		return ReqOther
	}
	st := StatusOf(m.StatusCode)
	if !m.CSeq.Valid {
		return RespArrival(TxNone, st)
	}
	var tc Tx
	switch mi.cseqMethod {
	case "INVITE":
		tc = TxInvite
		switch {
		case t != nil && t.requestSeen:
			if t.reInvite {
				tc = TxReInvite
			}
		case !l.answeredAt.isZero() && m.CSeq.Number > l.answerCSeq:
			tc = TxReInvite
		}
	case "BYE":
		tc = TxBye
	case "CANCEL":
		tc = TxCancel
	case "PRACK":
		tc = TxPrack
	case "UPDATE", "INFO":
		tc = TxInDialog
	case "REFER":
		tc = TxRefer
	case "REGISTER":
		tc = TxRegister
		if (t != nil && t.unregister) || headerIsZero(m, sip.HdrExpires) {
			tc = TxUnregister
		}
	case "SUBSCRIBE":
		tc = TxSubscribe
	case "NOTIFY":
		tc = TxNotify
	default:
		tc = TxOther
	}
	return RespArrival(tc, st)
}

func headerIsZero(m *sip.Message, id sip.HeaderID) bool {
	v, ok := m.Header(id)
	return ok && strings.TrimSpace(v) == "0"
}

// openerArrival reports whether a request retries the leg's opening
// transaction (which clears a pending challenge).
func openerArrival(f Family, a Arrival) bool {
	switch f {
	case FamilyInvite:
		return a == ReqInvite
	case FamilyRegister:
		return a == ReqRegister
	case FamilySubscribe:
		return a == ReqSubscribe
	default:
		return !a.IsResponse() && a != ReqAck
	}
}

// openerTx reports whether a response answers the leg's opening transaction.
func openerTx(f Family, t Tx) bool {
	switch f {
	case FamilyInvite:
		return t == TxInvite
	case FamilyRegister:
		return t == TxRegister || t == TxUnregister
	case FamilySubscribe:
		return t == TxSubscribe
	default:
		return t != TxNone
	}
}

// step runs the state machine and the timing for one (non-retransmitted)
// message.
func (d *dialog) step(l *leg, m *sip.Message, t *tx, o *Observation, index int, mi *msgInfo) {
	ts := o.TS
	a := d.arrival(l, m, t, mi)
	c := Decide(l.family, a, l.state)
	prev := l.state
	if c.Change {
		l.state = c.Next
		if len(l.transitions) < maxTransitions {
			l.transitions = append(withCap(l.transitions, firstTransitions), transition{
				sec: ts.Unix(), nsec: int32(ts.Nanosecond()), from: prev, to: c.Next,
				arrival: a, reason: c.Reason, message: index,
			})
		} else {
			inc32(&l.transitionsDropped)
		}
	}
	txc, st, isResp := a.Response()
	if isResp && st == SChallenge && openerTx(l.family, txc) {
		inc32(&l.challenges)
	}
	switch {
	case isResp && st == SChallenge && openerTx(l.family, txc) && (l.state == Trying || l.state == Ringing):
		l.challenged = true
	case c.Change:
		l.challenged = false
	case !isResp && openerArrival(l.family, a):
		l.challenged = false
	}
	if l.family == FamilyInvite {
		answered := l.answeredAt
		l.time(a, m, o)
		if l.answeredAt != answered {
			d.finalDirty = true
		}
	}
}

// time records the INVITE-family milestones (first occurrence wins).
func (l *leg) time(a Arrival, m *sip.Message, o *Observation) {
	ts := stampOf(o.TS)
	set := func(p *stamp) {
		if p.isZero() {
			*p = ts
		}
	}
	switch a {
	case ReqInvite:
		switch {
		case l.inviteAt.isZero():
			l.inviteAt, l.inviteSrc = ts, o.Src.Addr()
		case !l.challengeAt.isZero() && (!l.inviteSrc.IsValid() || o.Src.Addr() == l.inviteSrc):
			// The caller's retry after a 401/407 (RFC 3261 §22.2: a new
			// transaction, so never a retransmission, which does not reach
			// time). The challenge was the final response of the INVITE it
			// answered and ended that INVITE's delay (RFC 6076 §4.3): PDD
			// and setup are measured on this INVITE, the one routed, and
			// the caller's wait is kept apart.
			if l.firstInviteAt.isZero() {
				l.firstInviteAt = l.inviteAt
			}
			if c := l.challengeAt.time(); o.TS.After(c) {
				l.authWait += o.TS.Sub(c)
			}
			inc32(&l.authRetries)
			l.inviteAt, l.inviteSrc = ts, o.Src.Addr()
			l.tryingAt, l.ringingAt, l.finalAt, l.challengeAt = stamp{}, stamp{}, stamp{}, stamp{}
		}
		return
	case ReqBye:
		if l.byeAt.isZero() {
			l.byeAt, l.byeSrc = ts, o.Src.Addr()
		}
		return
	}
	t, st, ok := a.Response()
	if !ok {
		return
	}
	// toward reports whether a response travels back to the address its
	// request came from (true when the request was not captured).
	toward := func(src netip.Addr) bool { return !src.IsValid() || o.Dst.Addr() == src }
	switch t {
	case TxInvite:
		if !toward(l.inviteSrc) {
			return
		}
		switch st {
		case S100:
			set(&l.tryingAt)
		case S18x:
			set(&l.ringingAt)
		case S2xx:
			if l.answeredAt.isZero() {
				l.answeredAt = ts
				l.answerCSeq = m.CSeq.Number
			}
			set(&l.finalAt)
		case S3xx, S487, SFail:
			set(&l.finalAt)
		case SChallenge:
			// A challenge to the caller before any answer waits for the
			// caller's retry (a challenged re-INVITE is not a retry).
			if l.answeredAt.isZero() {
				l.challengeAt = ts
			}
		}
	case TxBye:
		if st == S2xx && toward(l.byeSrc) {
			set(&l.byeOKAt)
		}
	}
}

// noteFork records the remote tag of a message in its leg; fromSum is
// tagSum(m.From.Tag).
func (d *dialog) noteFork(l *leg, m *sip.Message, fromSum uint64) {
	if m.CSeq.Valid && strings.EqualFold(m.CSeq.Method, "CANCEL") {
		return // a CANCEL's answer carries a tag the answering hop made up
	}
	remote, fromRemote := m.To.Tag, false
	if !l.hasTag(m.From.Tag, fromSum) {
		remote, fromRemote = m.From.Tag, true
	}
	if remote == "" {
		return
	}
	sum := fromSum
	if !fromRemote {
		sum = tagSum(remote)
	}
	for i := range l.forks {
		if f := &l.forks[i]; len(f.tag) == len(remote) && f.sum == sum {
			inc32(&f.messages)
			if !m.IsRequest {
				f.lastStatus = int32(m.StatusCode)
			}
			return
		}
	}
	if len(l.forks) >= maxForks {
		inc32(&l.forksDropped)
		return
	}
	f := fork{tag: remote, sum: sum, messages: 1}
	if !m.IsRequest {
		f.lastStatus = int32(m.StatusCode)
	}
	l.forks = append(l.forks, f)
}

func (d *dialog) noteDTMF(m *sip.Message, o *Observation) {
	digit, dur, ok := dtmfOf(m)
	if !ok {
		return
	}
	r := d.more()
	if len(r.dtmf) >= maxDTMF {
		inc32(&r.dtmfDropped)
		return
	}
	r.dtmf = append(r.dtmf, dtmfEvent{at: o.TS, digit: digit, duration: dur, frame: o.Frame})
}

// effectiveState is the state a leg reports: a leg whose opening transaction
// was only ever challenged, with nothing after, reads Failed.
func (l *leg) effectiveState() State {
	if l.challenged && (l.state == Trying || l.state == Ringing) {
		return Failed
	}
	return l.state
}

// onlyChallenged: the leg's opening transaction was only ever challenged
// (401/407) and nothing followed.
func (l *leg) onlyChallenged() bool { return l.effectiveState() != l.state }

// yields reports whether a later leg of the leg's family takes the row
// over: the leg's attempt ended without success (only challenged; a call
// refused, redirected or cancelled; a registration refused), so a later
// attempt under a new From tag is the last transaction.
func (l *leg) yields() bool {
	switch l.effectiveState() {
	case Failed:
		return true
	case Redirected, Cancelled:
		return l.family == FamilyInvite
	}
	return false
}

// legAt returns leg i; the first leg without reading legs' array (another
// cache line): it is always first.leg (legFor), and legs are never removed.
func (d *dialog) legAt(i int) *leg {
	if i == 0 {
		return &d.first.leg
	}
	return d.legs[i]
}

// primary is the leg a Call-ID's row describes (docs/data-model.md): the
// call when the Call-ID holds one. It is the first INVITE-family leg, else
// the first leg; a leg whose attempt ended without success (only
// challenged, refused, redirected, cancelled) yields to the next leg of its
// family (a retry, with credentials or elsewhere, under a new From tag), so
// the row follows the last transaction. A load generator that
// registers and then calls under one Call-ID (sipp-branch-scenario.pcapng)
// therefore lists as INVITE with the call's state and final code; the
// REGISTER leg stays on the row in OtherLegs and in Detail.Legs.
func (d *dialog) primary() *leg {
	if int(d.prim) < len(d.legs) {
		return d.legAt(int(d.prim))
	}
	return nil
}

// pickPrimary chooses the primary leg's index (-1 when there is no leg).
func (d *dialog) pickPrimary() int {
	switch len(d.legs) {
	case 0:
		return -1
	case 1:
		return 0 // what the loops below find for one leg, without reading legs
	}
	p := 0
	for i, l := range d.legs {
		if l.family == FamilyInvite {
			p = i
			break
		}
	}
	f := d.legs[p].family
	for d.legs[p].yields() {
		next := -1
		for j := p + 1; j < len(d.legs); j++ {
			if d.legs[j].family == f {
				next = j
				break
			}
		}
		if next < 0 {
			break
		}
		p = next
	}
	return p
}

// method is the row's method: the primary leg's ("" when none).
func (d *dialog) method() string {
	if l := d.primary(); l != nil {
		return l.method
	}
	return ""
}

// challenges counts the challenges of the primary leg's family: the
// primary's own and those of the legs it stands for (retries under a new
// tag).
func (d *dialog) challenges() int {
	l := d.primary()
	if l == nil {
		return 0
	}
	n := 0
	for _, x := range d.legs {
		if x.family == l.family {
			n += int(x.challenges)
		}
	}
	return n
}

// legFinal is the final response of leg li's opening transactions, by the
// last transaction: for an INVITE leg the first 2xx when it was answered
// (as finalStatus), otherwise the last non-challenge final response, else
// (only ever challenged) the last challenge. nil when none.
func (d *dialog) legFinal(li int) *tx {
	l := d.legAt(li)
	want := l.method
	switch l.family {
	case FamilyInvite, FamilyRegister, FamilySubscribe:
		want = l.family.String()
	}
	var p finalPick
	for _, t := range d.txOrder {
		if int(t.leg) != li || t.finalCode == 0 || t.reInvite || t.key.method != want {
			continue
		}
		p.add(t, l.family == FamilyInvite && t.finalCode < 300)
	}
	return p.pick()
}

// finalPick gathers the final responses an outcome is chosen from: the
// first answer, the last other final response and the last 401/407. A
// challenge decides only when nothing followed it (RFC 3261 §22.2: it is
// answered by a retry, docs/data-model.md).
type finalPick struct{ ans, last, chal *tx }

func (p *finalPick) add(t *tx, answer bool) {
	switch {
	case answer:
		if p.ans == nil || t.finalAt.before(p.ans.finalAt) {
			p.ans = t
		}
	case t.finalCode == 401 || t.finalCode == 407:
		if p.chal == nil || !t.finalAt.before(p.chal.finalAt) {
			p.chal = t
		}
	default:
		if p.last == nil || !t.finalAt.before(p.last.finalAt) {
			p.last = t
		}
	}
}

// pick is the answer, else the last final response, else the last
// challenge; nil when no final response was seen.
func (p *finalPick) pick() *tx {
	switch {
	case p.ans != nil:
		return p.ans
	case p.last != nil:
		return p.last
	}
	return p.chal
}

// finalStatus picks the call's final status from the INVITE transactions
// that open or retry the call (re-INVITEs excluded): the first 2xx when the
// call was answered, else the last non-challenge final response, else (the
// call was only ever challenged) the last challenge.
//
// It is decided again after each message that changed an input (an INVITE
// transaction's request or final response, a leg's answer), not on every
// read.
func (d *dialog) finalStatus() (code int, reason string, ok bool) {
	if t := d.final; t != nil {
		return t.finalCode, t.finalReason, true
	}
	return 0, "", false
}

// decideFinal is finalStatus's transaction, read from every transaction
// of the primary leg and of the legs before it (the INVITE legs it retried
// under a new tag); a later INVITE leg under the same Call-ID is another
// call, listed in other_legs with its own final code.
func (d *dialog) decideFinal() *tx {
	var p finalPick
	for i := range len(d.txOrder) {
		t := d.txAt(i)
		if t.key.method != "INVITE" || t.reInvite || t.finalCode == 0 || t.leg > d.prim {
			continue
		}
		if !t.requestSeen && d.isLateReInvite(t) {
			continue
		}
		p.add(t, t.finalCode < 300)
	}
	return p.pick()
}

// isLateReInvite: an INVITE transaction whose request was not captured and
// whose CSeq comes after the one that answered its leg is a re-INVITE.
func (d *dialog) isLateReInvite(t *tx) bool {
	if t.leg < 0 || int(t.leg) >= len(d.legs) {
		return false
	}
	l := d.legAt(int(t.leg))
	return !l.answeredAt.isZero() && t.key.cseq > l.answerCSeq
}
