package dialog

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sip"
)

// TestCloseUpRemovesExactlyThePositions checks closeUp against a plain
// filter for position sets that take each direction (a few near the start,
// a few near the end, scattered, every element, one), and that the slots it
// leaves are cleared.
func TestCloseUpRemovesExactlyThePositions(t *testing.T) {
	const n = 50
	r := rand.New(rand.NewPCG(3, 4))
	random := func(k int) []int {
		p := r.Perm(n)[:k]
		slices.Sort(p)
		return p
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	for _, tc := range []struct {
		name string
		pos  []int
	}{
		{"none", nil},
		{"the first", []int{0}},
		{"the last", []int{n - 1}},
		{"a run at the start", []int{0, 1, 2, 3}},
		{"near the start with gaps", []int{1, 4, 5, 9}},
		{"near the end with gaps", []int{40, 41, 45, 49}},
		{"both ends", []int{0, 2, n - 3, n - 1}},
		{"every element", all},
		{"scattered 10", random(10)},
		{"scattered 25", random(25)},
		{"scattered 49", random(49)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := make([]*dialog, n)
			for i := range a {
				a[i] = &dialog{callID: fmt.Sprint(i)}
			}
			var want []*dialog
			for i, d := range a {
				if !slices.Contains(tc.pos, i) {
					want = append(want, d)
				}
			}
			backing := slices.Clone(a)
			got := closeUp(backing, tc.pos)
			if !slices.Equal(got, want) {
				t.Fatalf("closeUp(%v) kept %d elements, want %d: %v", tc.pos, len(got), len(want), ids(got))
			}
			live := 0
			for _, d := range backing {
				if d != nil {
					live++
				}
			}
			if live != len(want) {
				t.Errorf("backing array holds %d pointers, want %d (the rest cleared)", live, len(want))
			}
		})
	}
}

func ids(ds []*dialog) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.callID
	}
	return out
}

// TestEvictionKeepsCreatedIndexExact opens dialogs at times that go back
// and forth (so some wait in pending) and updates random held ones (so the
// least recently updated, which eviction takes, are scattered in created_at
// order), under a dialog cap and, separately, a byte budget, and checks
// after every eviction batch that the created index holds exactly the
// dialogs held, in order, and that readers count and list exactly them.
func TestEvictionKeepsCreatedIndexExact(t *testing.T) {
	inv, err := sip.Parse([]byte(basicCall("x")[0].text))
	if err != nil {
		t.Fatal(err)
	}
	src, dst := netip.MustParseAddrPort(alice), netip.MustParseAddrPort(bob)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"dialog cap, batches of 3", Config{MaxDialogs: 300, MaxBytes: -1}},
		{"dialog cap, batches of 1", Config{MaxDialogs: 90, MaxBytes: -1}},
		{"byte budget", Config{MaxDialogs: 100000, MaxBytes: 150 * (dialogOverhead + 600)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.cfg)
			r := rand.New(rand.NewPCG(5, 6))
			var opened []string
			batches := 0
			for i := 0; i < 1500; i++ {
				m := *inv
				at := t0.Add(time.Duration(i) * time.Second)
				if i%5 == 0 && len(opened) > 0 {
					// a message of a random dialog, held or evicted
					m.CallID = opened[r.IntN(len(opened))]
				} else {
					m.CallID = fmt.Sprintf("c%d", i)
					opened = append(opened, m.CallID)
					if i%3 == 0 {
						at = t0.Add(time.Duration(i-r.IntN(1000)) * time.Second) // opened earlier than the newest
					}
				}
				if res := s.Apply(Observation{Msg: &m, TS: at, Src: src, Dst: dst}); res.Evicted > 0 {
					batches++
					checkStore(t, s)
					if got, want := len(s.Summaries(ByCreated)), s.Len(); got != want {
						t.Fatalf("Summaries lists %d rows, store holds %d", got, want)
					}
					if got, want := s.SliceCreated(nil, 1).Total, s.Len(); got != want {
						t.Fatalf("SliceCreated counts %d rows, store holds %d", got, want)
					}
				}
			}
			if batches < 10 {
				t.Fatalf("only %d eviction batches: the test evicts too little", batches)
			}
			if st := s.Stats(); st.EvictionBatches != uint64(batches) {
				t.Fatalf("stats count %d batches, Apply reported %d", st.EvictionBatches, batches)
			}
			checkStore(t, s)
			if s.created.walks != 0 {
				t.Fatalf("drop missed a victim and walked the whole index %d times", s.created.walks)
			}
		})
	}
}
