package dialog

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults (engine.md §17).
const (
	DefaultMaxDialogs  = 100000
	DefaultMaxMessages = 500
	DefaultMaxSeen     = 4096
)

// Config bounds the store. Zero fields take the defaults.
type Config struct {
	// MaxDialogs caps the Call-IDs held (a run total, not concurrency). At
	// the cap the least recently updated dialogs are evicted in batches of
	// MaxDialogs/100, or, with NoRotate, new Call-IDs are refused.
	MaxDialogs int
	// NoRotate refuses new Call-IDs at the cap instead of evicting old ones.
	NoRotate bool
	// MaxMessages caps the messages retained per dialog; later messages are
	// counted (msg_count) but not kept.
	MaxMessages int
	// MaxSeen caps the retransmission identities remembered per dialog;
	// past it, new identities are not remembered (counted).
	MaxSeen int
	// DuplicateWindow is how close in capture time the same bytes of a
	// dialog must come to be a capture duplicate rather than a message of
	// its own (dup.go); zero takes DefaultDuplicateWindow (50 ms, a tenth
	// of RFC 3261's T1), negative turns duplicate recognition off.
	DuplicateWindow time.Duration
	// MaxBytes caps what the store holds, in bytes: the retained messages'
	// bytes plus an estimate of the structures around them
	// (membudget.go). Past it the least recently updated dialogs are
	// evicted, one at a time, until the store fits (counted in Evicted and
	// EvictedForBytes; under NoRotate as well: the byte budget protects
	// the machine). Zero takes DefaultMaxBytes(), negative means no byte
	// cap.
	MaxBytes int64
}

func (c Config) withDefaults() Config {
	if c.MaxDialogs <= 0 {
		c.MaxDialogs = DefaultMaxDialogs
	}
	if c.MaxMessages <= 0 {
		c.MaxMessages = DefaultMaxMessages
	}
	if c.MaxSeen <= 0 {
		c.MaxSeen = DefaultMaxSeen
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes()
	}
	return c
}

// Stats are the store's counters.
type Stats struct {
	// Dialogs is the number of Call-IDs held now.
	Dialogs int `json:"dialogs" desc:"Call-IDs held now"`
	// Messages counts every SIP message applied to a dialog.
	Messages uint64 `json:"messages" desc:"SIP messages applied to dialogs"`
	// WithoutCallID counts SIP messages that carried no Call-ID and joined
	// no dialog.
	WithoutCallID uint64 `json:"without_call_id" desc:"SIP messages without a Call-ID (joined no dialog)"`
	// Retransmissions counts messages recognized as retransmissions: re-sent
	// by their sender (RFC 3261 §17), capture duplicates excluded.
	Retransmissions uint64 `json:"retransmissions" desc:"messages re-sent by their sender (RFC 3261 §17 retransmissions)"`
	// Duplicates counts capture duplicates: the same bytes of a dialog seen
	// again within the duplicate window (a mirrored copy, a second
	// interface, a second HEP agent). Counted in Messages, in no dialog's
	// msg_count.
	Duplicates uint64 `json:"duplicates" desc:"capture duplicates: the same message seen twice at the capture point, not re-sent"`
	// DuplicateEntriesEvicted counts messages forgotten by the duplicate
	// table while still inside the window: a later copy of one of them
	// would be taken for a message of its own.
	DuplicateEntriesEvicted uint64 `json:"duplicate_entries_evicted,omitempty" desc:"messages the duplicate table forgot inside the window (a copy of them could be missed)"`
	// Evicted counts dialogs evicted at the cap (the least recently updated
	// end went).
	Evicted uint64 `json:"evicted" desc:"dialogs evicted at the cap (least recently updated first)"`
	// EvictionBatches counts eviction rounds.
	EvictionBatches uint64 `json:"eviction_batches" desc:"eviction rounds"`
	// Refused counts new Call-IDs refused at the cap under no-rotate (the
	// newest end went).
	Refused uint64 `json:"refused" desc:"new Call-IDs refused at the cap (no-rotate)"`
	// RefusedMessages counts the messages of refused Call-IDs.
	RefusedMessages uint64 `json:"refused_messages" desc:"messages of refused Call-IDs"`
	// MessagesNotRetained counts messages past the per-dialog cap (counted,
	// not kept), over the dialogs held now.
	MessagesNotRetained uint64 `json:"messages_not_retained" desc:"messages past the per-dialog retention cap"`
	// Bytes is what the store holds now (retained message bytes and the
	// structures around them, membudget.go); MaxBytes its budget (absent:
	// none).
	Bytes    int64 `json:"held_bytes" desc:"bytes the store holds now (messages and their structures)"`
	MaxBytes int64 `json:"max_bytes,omitempty" desc:"the store's byte budget"`
	// EvictedForBytes counts the dialogs of Evicted that left because the
	// store was over its byte budget.
	EvictedForBytes uint64 `json:"evicted_for_bytes" desc:"dialogs evicted for the byte budget (in evicted)"`
}

// Result says what Apply did with one message.
type Result struct {
	// Created: the message opened a new Call-ID.
	Created bool
	// Retransmission: the message repeated an earlier one.
	Retransmission bool
	// Duplicate: the message was a capture duplicate (dup.go): counted,
	// nothing else.
	Duplicate bool
	// NoCallID: the message carried no Call-ID and joined no dialog.
	NoCallID bool
	// Refused: the Call-ID was new and the store is full under no-rotate.
	Refused bool
	// Evicted counts dialogs evicted to make room for this one.
	Evicted int
}

// Store is the dialog store. Apply must be called from one goroutine at a
// time (the capture's single writer); every other method is safe for any
// number of concurrent readers.
type Store struct {
	cfg Config

	mu      sync.RWMutex
	byID    callIDs // the held dialogs by Call-ID (ids.go)
	lru     lruList // the held dialogs, most recently updated first (lru.go)
	created createdIndex
	methods map[string]int // dialogs held per row method, the primary leg's ("" for none)
	seq     uint64
	stats   Stats
	dup     dupTable
	bytes   int64 // sum of the held dialogs' bytes
	chg     changeLog
	victims []*dialog // the dialogs evicted by the batch running (dropLocked)

	rev atomic.Uint64
	gen atomic.Uint64

	icmp icmpTable // ICMP errors matched to dialogs (icmp.go)
}

// New returns an empty store.
func New(cfg Config) *Store {
	s := &Store{cfg: cfg.withDefaults(), methods: map[string]int{}}
	s.lru.init()
	return s
}

// Config returns the store's bounds, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Revision counts mutations: an unchanged revision proves unchanged content.
func (s *Store) Revision() uint64 { return s.rev.Load() }

// Generation counts evictions rounds: it moves when dialogs leave the store.
func (s *Store) Generation() uint64 { return s.gen.Load() }

// Len returns the number of Call-IDs held.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byID.len()
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.stats
	st.Dialogs = s.byID.len()
	st.DuplicateEntriesEvicted = s.dup.evicted
	st.Bytes = s.bytes
	if s.cfg.MaxBytes > 0 {
		st.MaxBytes = s.cfg.MaxBytes
	}
	return st
}

// Apply adds one SIP message to its dialog, opening the dialog when the
// Call-ID is new. A message without a Call-ID is counted and joins nothing.
func (s *Store) Apply(o Observation) Result {
	if o.Msg == nil {
		return Result{}
	}
	o.TS = o.TS.UTC()
	callID := o.Msg.CallID
	s.mu.Lock()
	defer s.mu.Unlock()
	if callID == "" {
		s.stats.WithoutCallID++
		s.rev.Add(1)
		return Result{NoCallID: true}
	}
	var res Result
	var ab addrBytes // written once for dupKey and identity
	putAddrPorts(ab[:], o.Src, o.Dst)
	id := keyOf(callID)
	d := s.byID.get(id)
	var key dupID
	if d != nil && s.cfg.DuplicateWindow > 0 {
		key = dupKey(&o, d.seq, &ab)
		if e := s.dup.find(key, &o, o.TS.UnixNano(), int64(s.cfg.DuplicateWindow)); e != nil {
			d.duplicate(e.pos)
			s.noteChange(d)
			s.stats.Messages++
			s.stats.Duplicates++
			s.rev.Add(1)
			return Result{Duplicate: true}
		}
	}
	if d == nil {
		if s.byID.len() >= s.cfg.MaxDialogs {
			if s.cfg.NoRotate {
				s.stats.Refused++
				s.stats.RefusedMessages++
				s.rev.Add(1)
				return Result{Refused: true}
			}
			res.Evicted = s.evictLocked()
		}
		s.seq++
		d = newDialog(callID, s.seq, &o)
		s.byID.put(id, d)
		s.lru.pushFront(d)
		s.created.add(d)
		res.Created = true
	} else {
		s.lru.moveFront(d)
	}
	before, retained, bytesBefore := d.msgsDropped, len(d.msgs), d.bytes
	if res.Created {
		bytesBefore = 0
		d.bytes = dialogOverhead
	}
	var was string // the row's method before the message (the primary may move)
	if !res.Created {
		was = d.method()
	}
	r := d.apply(&o, &s.cfg, &ab)
	s.noteChange(d)
	if s.cfg.DuplicateWindow > 0 {
		if key.key == 0 {
			key = dupKey(&o, d.seq, &ab)
		}
		pos := int32(-1)
		if len(d.msgs) > retained {
			pos = int32(retained)
		}
		win := int64(s.cfg.DuplicateWindow)
		s.dup.put(key, &o, o.TS.UnixNano(), pos, win)
	}
	if m := d.method(); res.Created || m != was {
		if !res.Created {
			s.uncountMethod(was)
		}
		if _, ok := s.methods[m]; !ok {
			m = strings.Clone(m) // the key outlives the message it came from
		}
		s.methods[m]++
	}
	s.stats.Messages++
	s.stats.MessagesNotRetained += uint64(d.msgsDropped - before)
	s.bytes += d.bytes - bytesBefore
	if s.cfg.MaxBytes > 0 && s.bytes > s.cfg.MaxBytes {
		res.Evicted += s.evictForBytesLocked(d)
	}
	if r.retrans {
		s.stats.Retransmissions++
	}
	res.Retransmission = r.retrans
	s.rev.Add(1)
	return res
}

// evictLocked removes the least recently updated dialogs: MaxDialogs/100 of
// them (at least one).
func (s *Store) evictLocked() int {
	n := s.cfg.MaxDialogs / 100
	if n < 1 {
		n = 1
	}
	evicted := 0
	for evicted < n && s.lru.back() != nil {
		s.dropLocked(s.lru.back())
		evicted++
	}
	s.dropVictims()
	s.stats.Evicted += uint64(evicted)
	s.stats.EvictionBatches++
	s.gen.Add(1)
	return evicted
}

// evictForBytesLocked evicts the least recently updated dialogs until the
// store fits its byte budget, never keep (the dialog being updated): a
// single dialog larger than the budget stays, bounded by MaxMessages.
func (s *Store) evictForBytesLocked(keep *dialog) int {
	evicted := 0
	for s.bytes > s.cfg.MaxBytes && s.lru.back() != nil && s.lru.back() != keep {
		s.dropLocked(s.lru.back())
		evicted++
	}
	if evicted == 0 {
		return 0
	}
	s.dropVictims()
	s.stats.Evicted += uint64(evicted)
	s.stats.EvictedForBytes += uint64(evicted)
	s.stats.EvictionBatches++
	s.gen.Add(1)
	return evicted
}

// dropVictims takes the batch's evicted dialogs off the created index.
func (s *Store) dropVictims() {
	s.created.drop(s.victims)
	clear(s.victims)
	s.victims = s.victims[:0]
}

// dropLocked removes one dialog from the store; the batch ends with
// dropVictims, which takes it off the created index.
func (s *Store) dropLocked(d *dialog) {
	s.victims = append(s.victims, d)
	s.lru.remove(d)
	s.byID.del(keyOf(d.callID))
	s.icmp.drop(d.callID)
	d.gone = true
	s.noteChange(d)
	s.uncountMethod(d.method())
	s.stats.MessagesNotRetained -= uint64(d.msgsDropped)
	s.bytes -= d.bytes
}

// uncountMethod takes one dialog off the per-method counts.
func (s *Store) uncountMethod(m string) {
	if s.methods[m] <= 1 {
		delete(s.methods, m)
	} else {
		s.methods[m]--
	}
}
