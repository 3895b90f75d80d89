// Package ratelimit limits how often each peer address may act: a token
// bucket per source address (not per socket, so a peer cannot reset its
// budget by reconnecting), held in a table with a fixed number of peers.
//
// The peer table is keyed by attacker-chosen addresses, so it is capped: when
// it is full the peer seen least recently is forgotten (counted as an
// eviction) to make room. A forgotten peer starts again with a full bucket.
//
// It is used by the HEP listener (per-peer datagram rate) and by the MCP host
// (calls per second per peer address).
package ratelimit

import (
	"container/list"
	"net/netip"
	"sync"
	"time"
)

// DefaultMaxPeers is the peer table size used when Config.MaxPeers is 0.
const DefaultMaxPeers = 4096

// Config sets a Limiter's budget.
type Config struct {
	// Rate is the number of events per second each peer may sustain.
	// It must be positive.
	Rate float64
	// Burst is how many events a peer may spend at once (the bucket size).
	// 0 means max(1, Rate) rounded up.
	Burst int
	// MaxPeers caps the number of peers remembered at once; 0 means
	// DefaultMaxPeers. At the cap the least recently seen peer is evicted.
	MaxPeers int
	// Now returns the current time; nil means time.Now. Tests set it.
	Now func() time.Time
}

// Stats is a snapshot of a Limiter's counters.
type Stats struct {
	// Allowed is the number of events let through.
	Allowed uint64 `json:"allowed"`
	// Refused is the number of events refused because the peer's bucket
	// was empty.
	Refused uint64 `json:"refused"`
	// Peers is the number of peers currently remembered.
	Peers int `json:"peers"`
	// MaxPeers is the peer table's cap.
	MaxPeers int `json:"max_peers"`
	// Evicted is the number of peers forgotten because the table was full.
	Evicted uint64 `json:"evicted"`
}

// Limiter is a per-peer token-bucket rate limiter. It is safe for concurrent
// use.
type Limiter struct {
	rate     float64
	burst    float64
	maxPeers int
	now      func() time.Time

	mu      sync.Mutex
	peers   map[netip.Addr]*list.Element
	lru     list.List // front = most recently seen; values are *peer
	allowed uint64
	refused uint64
	evicted uint64
}

type peer struct {
	addr   netip.Addr
	tokens float64
	last   time.Time
}

// New returns a Limiter. A non-positive Rate yields a Limiter that refuses
// nothing but still counts what it allows.
func New(cfg Config) *Limiter {
	l := &Limiter{rate: cfg.Rate, maxPeers: cfg.MaxPeers, now: cfg.Now}
	if l.maxPeers <= 0 {
		l.maxPeers = DefaultMaxPeers
	}
	if l.now == nil {
		l.now = time.Now
	}
	l.burst = float64(cfg.Burst)
	if l.burst <= 0 {
		l.burst = l.rate
		if l.burst < 1 {
			l.burst = 1
		}
		// round up so a rate of 2.5/s still allows a burst of 3
		if l.burst != float64(int64(l.burst)) {
			l.burst = float64(int64(l.burst) + 1)
		}
	}
	l.peers = make(map[netip.Addr]*list.Element)
	return l
}

// Key normalizes a peer address the way the limiter does: IPv4-mapped IPv6
// addresses count as their IPv4 address and zones are dropped.
func Key(addr netip.Addr) netip.Addr { return addr.Unmap().WithZone("") }

// Allow reports whether the peer may act now, spending one token if so.
func (l *Limiter) Allow(addr netip.Addr) bool { return l.AllowAt(addr, l.now()) }

// AllowAt is Allow at a given time (for callers that already read the clock).
func (l *Limiter) AllowAt(addr netip.Addr, now time.Time) bool {
	key := Key(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rate <= 0 {
		l.allowed++
		return true
	}
	var p *peer
	if el, ok := l.peers[key]; ok {
		p = el.Value.(*peer)
		l.lru.MoveToFront(el)
		if dt := now.Sub(p.last); dt > 0 {
			p.tokens += dt.Seconds() * l.rate
			if p.tokens > l.burst {
				p.tokens = l.burst
			}
		}
		p.last = now
	} else {
		for len(l.peers) >= l.maxPeers {
			oldest := l.lru.Back()
			delete(l.peers, oldest.Value.(*peer).addr)
			l.lru.Remove(oldest)
			l.evicted++
		}
		p = &peer{addr: key, tokens: l.burst, last: now}
		l.peers[key] = l.lru.PushFront(p)
	}
	if p.tokens >= 1 {
		p.tokens--
		l.allowed++
		return true
	}
	l.refused++
	return false
}

// Refused returns the running count of refused events.
func (l *Limiter) Refused() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// Stats returns a snapshot of the counters.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Allowed: l.allowed, Refused: l.refused, Peers: len(l.peers), MaxPeers: l.maxPeers, Evicted: l.evicted}
}

// Bucket is a single token bucket (for a global budget shared by every
// peer). It is safe for concurrent use.
type Bucket struct {
	rate, burst float64
	now         func() time.Time

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	refused uint64
}

// NewBucket returns a full bucket refilling at rate tokens per second up to
// burst (0 means max(1, rate)). A non-positive rate never refuses.
func NewBucket(rate float64, burst int, now func() time.Time) *Bucket {
	if now == nil {
		now = time.Now
	}
	b := &Bucket{rate: rate, burst: float64(burst), now: now}
	if b.burst <= 0 {
		b.burst = rate
		if b.burst < 1 {
			b.burst = 1
		}
	}
	b.tokens = b.burst
	b.last = now()
	return b
}

// Allow spends one token if there is one.
func (b *Bucket) Allow() bool {
	if b.rate <= 0 {
		return true
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens += dt.Seconds() * b.rate
		if b.tokens > b.burst {
			b.tokens = b.burst
		}
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	b.refused++
	return false
}

// Refused returns the running count of refused events.
func (b *Bucket) Refused() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refused
}
