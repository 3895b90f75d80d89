package dialog

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// lruOrder walks the list front to back, and checks the walk back to front
// is its reverse.
func lruOrder(t *testing.T, l *lruList) []*dialog {
	t.Helper()
	var fwd, back []*dialog
	for d := l.front(); d != nil; d = l.after(d) {
		fwd = append(fwd, d)
	}
	for d := l.back(); d != nil; d = l.before(d) {
		back = append(back, d)
	}
	slices.Reverse(back)
	if !slices.Equal(fwd, back) {
		t.Fatalf("front-to-back %d dialogs, back-to-front %d, not the same order", len(fwd), len(back))
	}
	return fwd
}

// TestLRUListKeepsTheOrderOfALinkedList drives the slot list and a plain
// slice (most recently updated first) with the same pushes, moves to the
// front and removals, and checks both orders agree after every operation,
// and that freed slots are reused (the arrays never outgrow the dialogs
// held at once).
func TestLRUListKeepsTheOrderOfALinkedList(t *testing.T) {
	for _, tc := range []struct {
		name             string
		ops              int
		pushP, removeP   float64 // the rest moves a held dialog to the front
		maxHeld          int
		removeBackFirstP float64 // of removals, how many take the back (eviction)
	}{
		{"calls: mostly moves", 5000, 0.15, 0.05, 64, 1},
		{"churn: pushes and evictions", 5000, 0.45, 0.45, 16, 1},
		{"removals anywhere", 5000, 0.3, 0.3, 32, 0.2},
		{"one dialog", 200, 0.5, 0.5, 1, 1},
		{"past one chunk", 20000, 0.6, 0.1, 3 * lruChunkSlots, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.ops)))
			var l lruList
			l.init()
			var want []*dialog // front first
			peak := 0
			for range tc.ops {
				switch p := r.Float64(); {
				case p < tc.pushP && len(want) < tc.maxHeld:
					d := &dialog{}
					l.pushFront(d)
					want = slices.Insert(want, 0, d)
				case p < tc.pushP+tc.removeP && len(want) > 0:
					i := len(want) - 1
					if r.Float64() >= tc.removeBackFirstP {
						i = r.IntN(len(want))
					}
					l.remove(want[i])
					if want[i].slot != noSlot {
						t.Fatalf("removed dialog keeps slot %d", want[i].slot)
					}
					want = slices.Delete(want, i, i+1)
				case len(want) > 0:
					i := r.IntN(len(want))
					d := want[i]
					l.moveFront(d)
					want = slices.Insert(slices.Delete(want, i, i+1), 0, d)
				}
				peak = max(peak, len(want))
				if got := lruOrder(t, &l); !slices.Equal(got, want) {
					t.Fatalf("order differs: got %d dialogs, want %d", len(got), len(want))
				}
				if l.back() != nil && len(want) > 0 && l.back() != want[len(want)-1] {
					t.Fatal("back is not the least recently updated")
				}
			}
			if int(l.n) != peak || len(l.chunks) != (peak+lruChunkSlots-1)/lruChunkSlots {
				t.Fatalf("%d slots in %d chunks, the most dialogs held at once was %d", l.n, len(l.chunks), peak)
			}
		})
	}
}
