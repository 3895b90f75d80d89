package report

import (
	"cmp"
	"slices"
	"time"
	"unsafe"

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
	// Call-ID keep refused, the count it was judged at. Keyed by the
	// dialog's own Call-ID string (idOf): a poll looks up every Call-ID
	// the store holds, and hashing a pointer and a length costs a tenth
	// of hashing the text; a Call-ID the store evicted and saw again is a
	// new dialog with a new string, written from its first message.
	written, judged map[idKey]int
	counts          []dialog.RetainedCount
	pend            []tailMsg
	// rev is the store's revision at the last walk: an unchanged
	// revision proves nothing was retained since. due is when the next
	// walk may run: a walk costs about a map lookup per Call-ID held
	// (tens of milliseconds at 100,000 on a loaded machine), so the next
	// one waits nine times as long as the last took, keeping the output's
	// share of a core at a tenth however large the store.
	rev uint64
	due time.Time
	now func() time.Time
}

// idKey identifies a dialog's Call-ID string by its bytes' address and
// length. Holding the address keeps the bytes alive, so no other string
// can take it while the key is in a map; forget drops the keys of dialogs
// gone.
type idKey struct {
	p *byte
	n int
}

func idOf(s string) idKey { return idKey{unsafe.StringData(s), len(s)} }

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
	return &Tail{ds: ds, keep: keep, written: map[idKey]int{}, judged: map[idKey]int{}, now: time.Now}
}

// Next calls fn for every message retained since the previous walk, in
// capture time order (ties: Call-ID, then arrival order). It walks the
// store only when its revision moved and the walk is due (see Tail.due);
// final is the last call of a run: it always walks, and every Call-ID
// keep refused is judged again.
func (t *Tail) Next(final bool, fn func(MessageOrder) error) error {
	start := t.now()
	rev := t.ds.Revision()
	if !final && (rev == t.rev && len(t.written)+len(t.judged) > 0 || start.Before(t.due)) {
		return nil
	}
	t.rev = rev
	defer func() { t.due = start.Add(9 * t.now().Sub(start)) }()
	t.counts = t.ds.RetainedCounts(t.counts[:0])
	t.pend = t.pend[:0]
	var times []time.Time
	for _, rc := range t.counts {
		k := idOf(rc.CallID)
		w := t.written[k]
		if rc.Retained <= w {
			continue
		}
		if t.keep != nil && w == 0 {
			if j, ok := t.judged[k]; ok && j == rc.Retained && !final {
				continue
			}
			if !t.keep(rc.CallID) {
				t.judged[k] = rc.Retained
				continue
			}
			delete(t.judged, k)
		}
		var ok bool
		times, ok = t.ds.MessageTimes(rc.CallID, times[:0])
		if !ok {
			continue
		}
		for pos := w; pos < len(times); pos++ {
			t.pend = append(t.pend, tailMsg{ts: times[pos], callID: rc.CallID, pos: pos})
		}
		t.written[k] = len(times)
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
	held := make(map[idKey]bool, len(t.counts))
	for _, rc := range t.counts {
		held[idOf(rc.CallID)] = true
	}
	for k := range t.written {
		if !held[k] {
			delete(t.written, k)
		}
	}
	for k := range t.judged {
		if !held[k] {
			delete(t.judged, k)
		}
	}
}
