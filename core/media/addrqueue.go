package media

import (
	"iter"
	"net/netip"
)

// addrQueueBlock is how many addresses an addrQueue block holds.
const addrQueueBlock = 1024

// addrQueue is a first-in first-out queue of addresses (the endpoints'
// eviction order, Store.epQ) kept in blocks of addrQueueBlock. A slice
// grown by append copies what it holds at every growth, 1.25 times at a
// time past 256 entries, so reaching 37,000 endpoints (the signaling
// workload's) allocated five times the final 1.2 MB on the way; blocks are
// filled in place and never copied. The first block grows like a slice
// (a capture with a few endpoints holds a few), the later ones are made
// whole, and a block leaves once its last address is popped.
type addrQueue struct {
	blocks [][]netip.AddrPort // blocks[0][hd:] is the front
	hd     int
	n      int // addresses held
}

func (q *addrQueue) len() int { return q.n }

// push adds a at the back.
func (q *addrQueue) push(a netip.AddrPort) {
	k := len(q.blocks)
	if k == 0 || len(q.blocks[k-1]) == addrQueueBlock {
		var b []netip.AddrPort
		if k > 0 { // a later block: whole at once
			b = make([]netip.AddrPort, 0, addrQueueBlock)
		}
		q.blocks = append(q.blocks, b)
		k++
	}
	last := q.blocks[k-1]
	if len(last) == cap(last) { // the first block: double, up to a block
		grown := make([]netip.AddrPort, len(last), min(max(2*cap(last), 8), addrQueueBlock))
		copy(grown, last)
		last = grown
	}
	q.blocks[k-1] = append(last, a)
	q.n++
}

// pop removes and returns the front address; false when the queue is
// empty.
func (q *addrQueue) pop() (netip.AddrPort, bool) {
	if q.n == 0 {
		return netip.AddrPort{}, false
	}
	b := q.blocks[0]
	a := b[q.hd]
	b[q.hd] = netip.AddrPort{} // the zone handle is a pointer: let it go
	q.hd++
	q.n--
	switch {
	case q.n == 0: // empty: start again at the front of this block
		q.blocks[0] = b[:0]
		clear(q.blocks[1:])
		q.blocks = q.blocks[:1]
		q.hd = 0
	case q.hd == len(b): // this block is done (full, or more came after it)
		q.blocks[0] = nil
		q.blocks = q.blocks[1:]
		q.hd = 0
	}
	return a, true
}

// all yields the addresses front to back.
func (q *addrQueue) all() iter.Seq[netip.AddrPort] {
	return func(yield func(netip.AddrPort) bool) {
		for i, b := range q.blocks {
			if i == 0 {
				b = b[q.hd:]
			}
			for _, a := range b {
				if !yield(a) {
					return
				}
			}
		}
	}
}
