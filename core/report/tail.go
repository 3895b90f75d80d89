package report

import (
	"cmp"
	"slices"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
)

// Tail finds the SIP messages a live or HEP run retained since it last
// looked, so the per-message outputs (-N -i IFACE, --json) are written as
// the run reads instead of when it stops. Each Next walks the dialog
// store's retained counts (dialog.Store.RetainedCounts) and writes the
// messages past what it wrote of each Call-ID, in capture time order
// within the poll. Its memory is one count per Call-ID the store holds
// (Call-IDs the store evicted are forgotten).
type Tail struct {
	ds   *dialog.Store
	keep func(callID string) bool
	// written counts the messages written per Call-ID; judged, for a
	// Call-ID keep refused, the count it was judged at.
	written, judged map[string]int
	counts          []dialog.RetainedCount
	pend            []tailMsg
}

type tailMsg struct {
	ts     time.Time
	callID string
	pos    int
}

// NewTail returns a Tail over a dialog store. keep selects the Call-IDs
// written (nil: all); it is asked when a Call-ID has messages not written
// yet, again whenever that Call-ID gains one, and for every Call-ID on the
// last call (Next with final true); once it says yes, every message of the
// Call-ID is written, those before included.
func NewTail(ds *dialog.Store, keep func(callID string) bool) *Tail {
	return &Tail{ds: ds, keep: keep, written: map[string]int{}, judged: map[string]int{}}
}

// Next calls fn for every message retained since the previous call, in
// capture time order (ties: Call-ID, then arrival order). final is the
// last call of a run: every Call-ID keep refused is judged again.
func (t *Tail) Next(final bool, fn func(MessageOrder) error) error {
	t.counts = t.ds.RetainedCounts(t.counts[:0])
	t.pend = t.pend[:0]
	var times []time.Time
	for _, rc := range t.counts {
		w := t.written[rc.CallID]
		if rc.Retained < w {
			// Fewer than written: the store evicted the Call-ID and it
			// came back as a new dialog.
			w = 0
		}
		if rc.Retained <= w {
			continue
		}
		if t.keep != nil && w == 0 {
			if j, ok := t.judged[rc.CallID]; ok && j == rc.Retained && !final {
				continue
			}
			if !t.keep(rc.CallID) {
				t.judged[rc.CallID] = rc.Retained
				continue
			}
			delete(t.judged, rc.CallID)
		}
		var ok bool
		times, ok = t.ds.MessageTimes(rc.CallID, times[:0])
		if !ok {
			continue
		}
		for pos := w; pos < len(times); pos++ {
			t.pend = append(t.pend, tailMsg{ts: times[pos], callID: rc.CallID, pos: pos})
		}
		t.written[rc.CallID] = len(times)
	}
	slices.SortFunc(t.pend, func(a, b tailMsg) int {
		if c := a.ts.Compare(b.ts); c != 0 {
			return c
		}
		if c := cmp.Compare(a.callID, b.callID); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	for _, p := range t.pend {
		m, ok := t.ds.MessageAt(p.callID, p.pos)
		if !ok {
			continue
		}
		if err := fn(MessageOrder{Msg: m}); err != nil {
			return err
		}
	}
	t.forget()
	return nil
}

// forget drops the counts of Call-IDs the store no longer holds, once
// they outnumber those it holds.
func (t *Tail) forget() {
	if len(t.written)+len(t.judged) <= 2*len(t.counts)+1024 {
		return
	}
	held := make(map[string]bool, len(t.counts))
	for _, rc := range t.counts {
		held[rc.CallID] = true
	}
	for id := range t.written {
		if !held[id] {
			delete(t.written, id)
		}
	}
	for id := range t.judged {
		if !held[id] {
			delete(t.judged, id)
		}
	}
}
