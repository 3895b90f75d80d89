package media

import (
	"net/netip"
	"slices"
	"testing"
)

// TestAddrQueueIsFIFO runs push and pop sequences across block boundaries
// against a plain slice: the same addresses come out in the same order,
// all() lists what is held front to back, and an emptied queue starts
// again.
func TestAddrQueueIsFIFO(t *testing.T) {
	addr := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), uint16(i))
	}
	for _, tc := range []struct {
		name string
		ops  []int // > 0: push that many; < 0: pop that many
	}{
		{"a few", []int{3, -1, 2, -4}},
		{"pop from empty", []int{-2, 1, -2, 1}},
		{"exactly one block", []int{addrQueueBlock, -addrQueueBlock, 5, -5}},
		{"across blocks", []int{addrQueueBlock + 7, -10, 2 * addrQueueBlock, -(addrQueueBlock + 3), 9, -(3 * addrQueueBlock)}},
		{"drain to empty then refill", []int{2*addrQueueBlock + 1, -(2*addrQueueBlock + 1), addrQueueBlock + 1, -1, 1}},
		{"one at a time", []int{1, -1, 1, 1, -1, 1, -1, -1, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q addrQueue
			var model []netip.AddrPort
			next := 0
			for step, op := range tc.ops {
				for ; op > 0; op-- {
					q.push(addr(next))
					model = append(model, addr(next))
					next++
				}
				for ; op < 0; op++ {
					got, ok := q.pop()
					if len(model) == 0 {
						if ok {
							t.Fatalf("step %d: popped %v from an empty queue", step, got)
						}
						continue
					}
					if !ok || got != model[0] {
						t.Fatalf("step %d: popped %v, %v; want %v", step, got, ok, model[0])
					}
					model = model[1:]
				}
				if q.len() != len(model) {
					t.Fatalf("step %d: len %d, want %d", step, q.len(), len(model))
				}
				if all := slices.Collect(q.all()); !slices.Equal(all, model) && (len(all) > 0 || len(model) > 0) {
					t.Fatalf("step %d: all() lists %d addresses, want the %d held in order", step, len(all), len(model))
				}
			}
		})
	}
}
