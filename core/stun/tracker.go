package stun

import (
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// Bounds of the tracker's tables (engine.md §17: every attacker-keyed
// table capped in count and bytes; evictions counted). Each entry has a
// fixed size (no sender-sized field is kept but SOFTWARE, cut at
// maxSoftware bytes in a table of its own), so a count cap is a byte cap:
// EntryBytes gives the bound.
const (
	DefaultMaxTransactions = 10000
	DefaultMaxAllocations  = 4096
	DefaultMaxMappings     = 4096
	DefaultMaxICEPairs     = 4096
	// MaxChannels bounds the channels kept per allocation (RFC 8656 §12
	// allows 4096 numbers); a binding past it is counted.
	MaxChannels = 64
	// MaxSoftware bounds the distinct SOFTWARE values kept.
	MaxSoftware = 32
	// MaxExamples bounds each list of examples a report names by frame.
	MaxExamples = 32
	// RequestTimeout is how long a STUN client over UDP waits for a
	// response before giving up with the default RTO of 500 ms, Rc 7 and
	// Rm 16 (RFC 8489 §6.2.1: 39.5 s). A request younger than this at the
	// capture's end is not judged unanswered.
	RequestTimeout = 39500 * time.Millisecond
)

// Config bounds a Tracker. Zero values take the defaults.
type Config struct {
	MaxTransactions int
	MaxAllocations  int
	MaxMappings     int
	MaxICEPairs     int
}

func (c Config) withDefaults() Config {
	if c.MaxTransactions <= 0 {
		c.MaxTransactions = DefaultMaxTransactions
	}
	if c.MaxAllocations <= 0 {
		c.MaxAllocations = DefaultMaxAllocations
	}
	if c.MaxMappings <= 0 {
		c.MaxMappings = DefaultMaxMappings
	}
	if c.MaxICEPairs <= 0 {
		c.MaxICEPairs = DefaultMaxICEPairs
	}
	return c
}

// pair is an ordered (from, to) address pair.
type pair struct{ a, b netip.AddrPort }

type tx struct {
	id             [12]byte
	method         Method
	client, server netip.AddrPort
	first, last    time.Time
	requests       int
	frame          packet.FrameRef
	ice            bool
	useCandidate   bool
	controlling    bool
	controlled     bool
	answered       bool
	class          Class
	respAt         time.Time
	respFrame      packet.FrameRef
	errorCode      int
	channel        uint16
	peer           netip.AddrPort
	ordinal        uint64
}

type channel struct {
	num       uint16
	peer      netip.AddrPort
	confirmed bool
	at        time.Time
	frame     packet.FrameRef
	packets   [2]uint64 // to peer, from peer
}

type alloc struct {
	client, server netip.AddrPort
	relayed        netip.AddrPort
	mapped         netip.AddrPort
	created        time.Time
	frame          packet.FrameRef
	lifetime       uint32
	expires        time.Time
	refreshes      int
	deleted        bool
	deletedAt      time.Time
	lapsed         bool
	lapsedAt       time.Time
	lapseWhy       string
	lapseFrame     packet.FrameRef
	lastUse        time.Time
	channels       []channel
	channelsOver   int
	permissions    int
	relayedPkts    [2]uint64 // to peer, from peer (ChannelData and Send/Data)
	ordinal        uint64
}

type mapping struct {
	local, server, mapped netip.AddrPort
	first, last           time.Time
	frame                 packet.FrameRef
	count                 int
	ice                   bool
	ordinal               uint64
}

type icePair struct {
	from, to     netip.AddrPort
	checks       int
	succeeded    int
	failed       int
	nominated    bool
	nominatedAt  time.Time
	nomFrame     packet.FrameRef
	controlling  bool // the requester claimed ICE-CONTROLLING
	controlled   bool // the requester claimed ICE-CONTROLLED
	first, last  time.Time
	frame        packet.FrameRef
	roleConflict bool
	ordinal      uint64
}

// Tracker keeps the STUN/TURN/ICE evidence of one capture. One goroutine
// writes (Observe, Relay); any number read (Report, the evidence lookups)
// under its read lock.
type Tracker struct {
	cfg Config
	mu  sync.RWMutex

	txs      map[[12]byte]*tx
	allocs   map[pair]*alloc // (client, server)
	relayIdx map[netip.AddrPort]*alloc
	mappings map[pair]*mapping // (local, server)
	pairs    map[pair]*icePair
	software map[string]uint64
	conflict []RoleConflict
	ord      uint64
	last     time.Time // the latest message or ChannelData seen

	st Stats
}

// NewTracker returns an empty tracker.
func NewTracker(cfg Config) *Tracker {
	return &Tracker{
		cfg:      cfg.withDefaults(),
		txs:      map[[12]byte]*tx{},
		allocs:   map[pair]*alloc{},
		relayIdx: map[netip.AddrPort]*alloc{},
		mappings: map[pair]*mapping{},
		pairs:    map[pair]*icePair{},
		software: map[string]uint64{},
	}
}

// Stats are the tracker's counters.
type Stats struct {
	// Messages counts STUN messages read; Malformed those refused
	// (attributes past the message, attributes after FINGERPRINT).
	Messages  uint64 `json:"messages"`
	Malformed uint64 `json:"malformed"`
	// Requests, Indications, Successes and Errors count messages by class.
	Requests    uint64 `json:"requests"`
	Indications uint64 `json:"indications"`
	Successes   uint64 `json:"success_responses"`
	Errors      uint64 `json:"error_responses"`
	// Retransmissions counts requests seen again with the same
	// transaction ID (RFC 8489 §6.2.1).
	Retransmissions uint64 `json:"retransmissions"`
	// ResponsesWithoutRequest counts responses whose request was not seen
	// (the capture began after it, or it was evicted).
	ResponsesWithoutRequest uint64 `json:"responses_without_request"`
	// FingerprintsChecked counts FINGERPRINT attributes verified;
	// FingerprintsBad those whose CRC did not match.
	FingerprintsChecked uint64 `json:"fingerprints_checked"`
	FingerprintsBad     uint64 `json:"fingerprints_bad"`
	// ChannelData counts TURN ChannelData messages; Relayed those (and
	// Send/Data indications) unwrapped and routed with the relayed
	// addresses; Unbound those whose allocation or channel binding was
	// not seen (not unwrapped).
	ChannelData    uint64 `json:"channel_data"`
	Relayed        uint64 `json:"relayed_unwrapped"`
	RelayUnbound   uint64 `json:"relayed_unbound"`
	ChannelsOver   uint64 `json:"channel_bindings_over_cap,omitempty"`
	PeersOverCap   uint64 `json:"peer_addresses_over_cap,omitempty"`
	SoftwareOver   uint64 `json:"software_values_over_cap,omitempty"`
	AttrsMalformed uint64 `json:"attributes_malformed,omitempty"`

	TransactionsEvicted uint64 `json:"transactions_evicted"`
	AllocationsEvicted  uint64 `json:"allocations_evicted"`
	MappingsEvicted     uint64 `json:"mappings_evicted"`
	ICEPairsEvicted     uint64 `json:"ice_pairs_evicted"`

	// RoleConflicts counts ICE role conflicts (a 487 answer, or both
	// agents claiming one role).
	RoleConflicts uint64 `json:"ice_role_conflicts"`
}

// Any reports whether the tracker saw any STUN or TURN traffic.
func (s Stats) Any() bool { return s.Messages > 0 || s.ChannelData > 0 || s.Malformed > 0 }

// Obs is one STUN message (or ChannelData message) as the router saw it.
// Its evidence pointer is computed from Frame only when an entry keeps it.
type Obs struct {
	TS       time.Time
	Src, Dst netip.AddrPort
	Frame    *packet.Frame
	ref      packet.FrameRef
	refDone  bool
}

func (o *Obs) fr() packet.FrameRef {
	if !o.refDone {
		o.ref, o.refDone = packet.RefOf(o.Frame), true
	}
	return o.ref
}

// NoteMalformed counts a STUN-shaped datagram Parse refused.
func (t *Tracker) NoteMalformed() {
	t.mu.Lock()
	t.st.Messages++
	t.st.Malformed++
	t.mu.Unlock()
}

// Observe records one parsed STUN message. For a Send or Data indication
// whose allocation is known it returns the relayed packet's addresses
// (RFC 8656 §11: a Send's data leaves the relayed address for the peer, a
// Data's arrived from the peer at the relayed address) with ok true, so the
// caller can route m.Data as that packet.
func (t *Tracker) Observe(o Obs, m *Message) (src, dst netip.AddrPort, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ord++
	t.st.Messages++
	t.seen(o.TS)
	if len(m.Malformed) > 0 {
		t.st.AttrsMalformed++
	}
	if m.HasFingerprint {
		t.st.FingerprintsChecked++
		if !m.FingerprintOK {
			t.st.FingerprintsBad++
		}
	}
	if m.PeersDropped > 0 {
		t.st.PeersOverCap += uint64(m.PeersDropped)
	}
	if m.HasSoftware {
		t.noteSoftware(m.Software)
	}
	switch m.Class {
	case ClassRequest:
		t.st.Requests++
		t.request(&o, m)
	case ClassIndication:
		t.st.Indications++
		return t.indication(&o, m)
	case ClassSuccess, ClassError:
		if m.Class == ClassSuccess {
			t.st.Successes++
		} else {
			t.st.Errors++
		}
		t.response(&o, m)
	}
	return src, dst, false
}

func (t *Tracker) seen(ts time.Time) {
	if ts.After(t.last) {
		t.last = ts
	}
}

func (t *Tracker) noteSoftware(b []byte) {
	if _, ok := t.software[string(b)]; ok {
		t.software[string(b)]++
		return
	}
	if len(t.software) >= MaxSoftware {
		t.st.SoftwareOver++
		return
	}
	t.software[string(b)] = 1
}

func (t *Tracker) request(o *Obs, m *Message) {
	if x := t.txs[m.TxID]; x != nil {
		x.requests++
		x.last = o.TS
		t.st.Retransmissions++
		return
	}
	if len(t.txs) >= t.cfg.MaxTransactions {
		evictOldest(t.txs, func(x *tx) uint64 { return x.ordinal })
		t.st.TransactionsEvicted++
	}
	x := &tx{
		id: m.TxID, method: m.Method, client: o.Src, server: o.Dst, first: o.TS, last: o.TS,
		requests: 1, frame: o.fr(), ice: m.IsICECheck(), useCandidate: m.UseCandidate,
		controlling: m.ICEControlling, controlled: m.ICEControlled, ordinal: t.ord,
	}
	if m.HasChannelNumber && m.NPeers > 0 {
		x.channel, x.peer = m.ChannelNumber, m.Peers[0]
	}
	t.txs[m.TxID] = x
	a := t.allocs[pair{o.Src, o.Dst}]
	if a != nil {
		t.use(a, o)
	}
	switch {
	case x.ice:
		t.iceCheck(o, m)
	case m.Method == MethodChannelBind && x.channel != 0 && a != nil:
		// the binding holds from the request on: a capture that lost the
		// success response still unwraps the channel (RFC 8656 §12.1)
		t.bind(a, x.channel, x.peer, o, false)
	}
}

// evictOldest removes the entry with the smallest ordinal. Tables are
// bounded and eviction is rare (a table at its cap): a scan is cheaper
// than keeping an order for every insertion.
func evictOldest[K comparable, V any](m map[K]V, ord func(V) uint64) {
	var oldK K
	var oldO uint64
	first := true
	for k, v := range m {
		if o := ord(v); first || o < oldO {
			oldK, oldO, first = k, o, false
		}
	}
	if !first {
		delete(m, oldK)
	}
}

func (t *Tracker) response(o *Obs, m *Message) {
	x := t.txs[m.TxID]
	if x == nil {
		t.st.ResponsesWithoutRequest++
		return
	}
	if x.answered {
		return // a response to a retransmission: the transaction is answered already
	}
	x.answered, x.class, x.respAt, x.respFrame = true, m.Class, o.TS, o.fr()
	if m.HasErrorCode {
		x.errorCode = m.ErrorCode
	}
	if x.ice {
		t.iceResponse(x, o, m)
	}
	switch x.method {
	case MethodBinding:
		if m.Class == ClassSuccess {
			if ma, ok := mappedOf(m); ok {
				t.map1(x, o, ma)
			}
		}
	case MethodAllocate:
		if m.Class == ClassSuccess && m.HasXORRelayed {
			t.allocate(x, o, m)
		}
	case MethodRefresh:
		t.refresh(x, o, m)
	case MethodChannelBind:
		if a := t.allocs[pair{x.client, x.server}]; a != nil && x.channel != 0 {
			if m.Class == ClassSuccess {
				t.bindAt(a, x.channel, x.peer, x.first, x.frame, true)
			}
		}
	case MethodCreatePermission:
		if a := t.allocs[pair{x.client, x.server}]; a != nil && m.Class == ClassSuccess {
			a.permissions++
		}
	}
}

func mappedOf(m *Message) (netip.AddrPort, bool) {
	if m.HasXORMapped {
		return m.XORMapped, true
	}
	return m.Mapped, m.HasMapped
}

func (t *Tracker) map1(x *tx, o *Obs, ma netip.AddrPort) {
	k := pair{x.client, x.server}
	mp := t.mappings[k]
	if mp == nil {
		if len(t.mappings) >= t.cfg.MaxMappings {
			evictOldest(t.mappings, func(v *mapping) uint64 { return v.ordinal })
			t.st.MappingsEvicted++
		}
		mp = &mapping{local: x.client, server: x.server, first: o.TS, frame: o.fr(), ice: x.ice, ordinal: t.ord}
		t.mappings[k] = mp
	}
	mp.mapped, mp.last = ma, o.TS
	mp.count++
}

func (t *Tracker) allocate(x *tx, o *Obs, m *Message) {
	k := pair{x.client, x.server}
	a := t.allocs[k]
	if a == nil {
		if len(t.allocs) >= t.cfg.MaxAllocations {
			var old *alloc
			for _, v := range t.allocs {
				if old == nil || v.ordinal < old.ordinal {
					old = v
				}
			}
			delete(t.allocs, pair{old.client, old.server})
			if t.relayIdx[old.relayed] == old {
				delete(t.relayIdx, old.relayed)
			}
			t.st.AllocationsEvicted++
		}
		a = &alloc{client: x.client, server: x.server, ordinal: t.ord}
		t.allocs[k] = a
	}
	a.relayed, a.created, a.frame = m.XORRelayed, o.TS, o.fr()
	a.mapped = m.XORMapped
	a.deleted, a.lapsed = false, false
	a.lifetime = m.Lifetime
	if !m.HasLifetime {
		a.lifetime = 600 // RFC 8656 §7.2: the default allocation lifetime
	}
	a.expires = o.TS.Add(time.Duration(a.lifetime) * time.Second)
	t.relayIdx[a.relayed] = a
	if m.HasXORMapped {
		t.map1(x, o, m.XORMapped)
	}
}

func (t *Tracker) refresh(x *tx, o *Obs, m *Message) {
	a := t.allocs[pair{x.client, x.server}]
	if a == nil {
		return
	}
	switch {
	case m.Class == ClassSuccess && m.HasLifetime && m.Lifetime == 0:
		a.deleted, a.deletedAt = true, o.TS
	case m.Class == ClassSuccess:
		lt := a.lifetime
		if m.HasLifetime {
			lt = m.Lifetime
		}
		a.lifetime, a.expires = lt, o.TS.Add(time.Duration(lt)*time.Second)
		a.refreshes++
	case m.ErrorCode == errorAllocationMismatch:
		// RFC 8656 §7.5: the server holds no allocation for this 5-tuple
		t.lapse(a, o, "a Refresh was refused with 437 Allocation Mismatch: the server no longer held the allocation")
	}
}

// use notes traffic on an allocation: past its expiry (and not deleted)
// the allocation has lapsed (RFC 8656 §7: the server discards it).
func (t *Tracker) use(a *alloc, o *Obs) {
	a.lastUse = o.TS
	if !a.deleted && !a.expires.IsZero() && o.TS.After(a.expires) {
		t.lapse(a, o, "traffic on the allocation after its lifetime ran out without a Refresh")
	}
}

func (t *Tracker) lapse(a *alloc, o *Obs, why string) {
	if a.lapsed {
		return
	}
	a.lapsed, a.lapsedAt, a.lapseWhy, a.lapseFrame = true, o.TS, why, o.fr()
}

func (t *Tracker) bind(a *alloc, num uint16, peer netip.AddrPort, o *Obs, confirmed bool) {
	t.bindAt(a, num, peer, o.TS, o.fr(), confirmed)
}

func (t *Tracker) bindAt(a *alloc, num uint16, peer netip.AddrPort, at time.Time, fr packet.FrameRef, confirmed bool) {
	for i := range a.channels {
		if a.channels[i].num == num {
			a.channels[i].peer = peer
			a.channels[i].confirmed = a.channels[i].confirmed || confirmed
			return
		}
	}
	if len(a.channels) >= MaxChannels {
		a.channelsOver++
		t.st.ChannelsOver++
		return
	}
	a.channels = append(a.channels, channel{num: num, peer: peer, confirmed: confirmed, at: at, frame: fr})
}

// indication handles Send (client → server) and Data (server → client)
// indications (RFC 8656 §10, §11).
func (t *Tracker) indication(o *Obs, m *Message) (src, dst netip.AddrPort, ok bool) {
	if (m.Method != MethodSend && m.Method != MethodData) || !m.HasData {
		return src, dst, false
	}
	if m.NPeers == 0 {
		t.st.RelayUnbound++
		return src, dst, false
	}
	peer := m.Peers[0]
	if m.Method == MethodSend {
		if a := t.allocs[pair{o.Src, o.Dst}]; a != nil {
			t.use(a, o)
			a.relayedPkts[0]++
			t.st.Relayed++
			return a.relayed, peer, true
		}
	} else if a := t.allocs[pair{o.Dst, o.Src}]; a != nil {
		t.use(a, o)
		a.relayedPkts[1]++
		t.st.Relayed++
		return peer, a.relayed, true
	}
	t.st.RelayUnbound++
	return src, dst, false
}

// DefaultPort is the TURN and STUN port (RFC 8489 §9, RFC 8656 §4).
const DefaultPort = 3478

// Channel maps a ChannelData message between src and dst on channel ch to
// the relayed packet it stands for (RFC 8656 §12.6, §12.7): from the
// client, the data leaves the relayed address for the channel's peer; from
// the server, it arrived from the peer at the relayed address. known is
// false when the datagram is not known to be TURN at all: no allocation
// between the two addresses and neither on port 3478 (a datagram merely
// shaped like ChannelData). ok is false, and the message counted unbound,
// when it is TURN but the allocation or the binding was not seen.
func (t *Tracker) Channel(o Obs, ch uint16) (src, dst netip.AddrPort, known, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	dir := 0
	a := t.allocs[pair{o.Src, o.Dst}]
	if a == nil {
		a, dir = t.allocs[pair{o.Dst, o.Src}], 1
	}
	if a == nil && o.Src.Port() != DefaultPort && o.Dst.Port() != DefaultPort {
		return src, dst, false, false
	}
	t.st.ChannelData++
	t.seen(o.TS)
	if a != nil {
		for i := range a.channels {
			c := &a.channels[i]
			if c.num != ch {
				continue
			}
			t.use(a, &o)
			c.packets[dir]++
			a.relayedPkts[dir]++
			t.st.Relayed++
			if dir == 0 {
				return a.relayed, c.peer, true, true
			}
			return c.peer, a.relayed, true, true
		}
	}
	t.st.RelayUnbound++
	return src, dst, true, false
}

func (t *Tracker) iceCheck(o *Obs, m *Message) {
	k := pair{o.Src, o.Dst}
	p := t.pairs[k]
	if p == nil {
		if len(t.pairs) >= t.cfg.MaxICEPairs {
			evictOldest(t.pairs, func(v *icePair) uint64 { return v.ordinal })
			t.st.ICEPairsEvicted++
		}
		p = &icePair{from: o.Src, to: o.Dst, first: o.TS, frame: o.fr(), ordinal: t.ord}
		t.pairs[k] = p
	}
	p.checks++
	p.last = o.TS
	p.controlling = p.controlling || m.ICEControlling
	p.controlled = p.controlled || m.ICEControlled
	// RFC 8445 §7.3.1.1: both agents claiming the same role is a conflict
	// the checks must repair; seen from the reverse pair's requests.
	if r := t.pairs[pair{o.Dst, o.Src}]; r != nil && !p.roleConflict {
		same := (m.ICEControlling && r.controlling) || (m.ICEControlled && r.controlled)
		if same {
			role := "controlling"
			if m.ICEControlled {
				role = "controlled"
			}
			p.roleConflict, r.roleConflict = true, true
			t.noteConflict(RoleConflict{
				A: o.Src.String(), B: o.Dst.String(), At: o.TS, Frame: o.fr().String(),
				Why: "both agents sent checks claiming ICE-" + upper(role) + " (RFC 8445 §7.3.1.1)",
			})
		}
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

func (t *Tracker) noteConflict(c RoleConflict) {
	if len(t.conflict) < MaxExamples {
		t.conflict = append(t.conflict, c)
	}
	t.st.RoleConflicts++
}

func (t *Tracker) iceResponse(x *tx, o *Obs, m *Message) {
	p := t.pairs[pair{x.client, x.server}]
	if p == nil {
		return
	}
	switch {
	case m.Class == ClassSuccess:
		p.succeeded++
		// RFC 8445 §7.2.5.3.4, §8.1.1: a successful check that carried
		// USE-CANDIDATE nominates the pair.
		if x.useCandidate && !p.nominated {
			p.nominated, p.nominatedAt, p.nomFrame = true, o.TS, o.fr()
		}
	case m.ErrorCode == errorRoleConflict:
		p.failed++
		p.roleConflict = true
		t.noteConflict(RoleConflict{
			A: x.client.String(), B: x.server.String(), At: o.TS, Frame: o.fr().String(),
			Why: "the check was answered 487 Role Conflict (RFC 8445 §7.2.5.1)",
		})
	default:
		p.failed++
	}
}

// sortedBy returns a map's values ordered by ordinal (first seen first).
func sortedBy[K comparable, V any](m map[K]V, ord func(V) uint64) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return ord(out[i]) < ord(out[j]) })
	return out
}
