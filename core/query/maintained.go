package query

import (
	"context"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/stun"
)

// The maintained state: one per dialog store, shared by every Querier over
// it. It keeps each dialog's row, Extra and media facts (its folded RTP
// values and its media diagnosis), recomputed when that dialog or its
// media changes (the stores' change logs: dialog.Store.DrainChanges,
// media.Store.DrainChanges), never per query; and per filter asked for, the
// set of matching dialogs with their count, per-method counts, and the
// aggregate_dialogs tallies and group_dialogs accumulators asked for over
// them, each updated by the dialogs that changed. A query first applies the
// changes since the last one (cost: the changed dialogs, times the
// filters kept), then answers from this state (cost: the page, or the
// buckets).
//
// The first query builds the state from the whole store, and the first
// query with a new filter evaluates it on every dialog once; later ones
// cost what changed. Every value comes from the same Record methods a
// recomputing query uses (over the kept row, Extra and facts), so the
// answers are the same; TestMaintainedEqualsRecomputed checks it on the
// public captures and a generated one, with a load still writing.
type mstate struct {
	mu      sync.Mutex
	q       *Querier // the stores and thresholds the state is computed with
	dialogs *dialog.Store
	ms      *media.Store // nil without a stream store

	built    bool
	rev      uint64 // dialog revision drained up to
	mrev     uint64 // media revision read before the last drain
	hasMedia bool   // analysis.CaptureHasMedia at the last sync
	// nat is the STUN/TURN evidence's counters at the last sync: the
	// media diagnosis reads that evidence (private addresses, relays), and
	// a STUN message changes no dialog or stream, so a change in them
	// refreshes every dialog, as a change in hasMedia does.
	nat stun.Stats

	recs  []mrec
	byID  map[string]int32
	order []int32 // live slots in (created_at, Call-ID) order
	fresh []int32 // slots opened since the order was last settled
	free  []int32 // reusable slots
	limbo []int32 // removed slots still listed in order
	// gone marks the limbo slots, one bit each: settle tests this compact
	// set rather than each record (a cache miss per dialog at a million).
	gone []uint64
	live int
	// end is the latest updated_at of the live rows (group_dialogs'
	// capture end); stale after the row holding it left.
	end      time.Time
	endStale bool

	memos map[string]*memo
	tick  uint64
	ids   []string // scratch for drains
}

// mrec is one dialog as the maintained state keeps it.
type mrec struct {
	row   dialog.Summary
	extra dialog.Extra
	mf    mediaFacts
	live  bool
}

// maxMemos bounds the filters kept (least recently used go first), and
// maxSubMemos the tallies and groupings kept per filter.
const (
	maxMemos    = 16
	maxSubMemos = 8
)

// maxKeptBuckets bounds the buckets (or groups) of a tally (grouping) that
// is kept: one with more distinct values (by from.user over a million
// callers) is counted from the memo's matching set for the call and
// dropped, so the kept state stays bounded whatever the values. A variable
// so that a test can lower it.
var maxKeptBuckets = 1 << 16

// memo is one filter's matching set, kept up to date.
type memo struct {
	f       *filter.Filter // nil: every dialog
	bits    []uint64       // by slot
	total   int
	methods map[string]int // matching dialogs by orNone(method)
	used    uint64
	aggs    map[Dimension]*aggMemo
	groups  map[Dimension]*groupMemo
}

// aggMemo is aggregate_dialogs' tally of a memo's dialogs by one dimension.
type aggMemo struct {
	t    dialog.Tallies
	used uint64
}

// groupMemo is group_dialogs' accumulators of a memo's dialogs by one
// dimension.
type groupMemo struct {
	accs map[bucketKey]*groupAcc
	used uint64
}

// maintained returns the store's maintained state when it serves q: the
// state is computed with one stream store and one set of thresholds (the
// first Querier's), so a Querier with others answers by recomputing. Nil
// also when q asks to recompute, or when its stream store is not a
// *media.Store (nothing to learn its changes from).
func (q *Querier) maintained() *mstate {
	if q.recompute {
		return nil
	}
	var ms *media.Store
	if q.media != nil {
		var ok bool
		if ms, ok = q.media.(*media.Store); !ok {
			return nil
		}
	}
	m := q.dialogs.Attachment(func() any {
		return &mstate{q: &Querier{dialogs: q.dialogs, media: q.media, th: q.th, cache: &snapCache{}, recompute: true},
			dialogs: q.dialogs, ms: ms}
	}).(*mstate)
	if m.q.media != q.media || m.q.th != q.th {
		return nil
	}
	return m
}

// sync applies the changes since the last sync; the caller holds m.mu.
func (m *mstate) sync(ctx context.Context) error {
	if !m.built {
		return m.build(ctx)
	}
	var mrev uint64
	if m.ms != nil {
		mrev = m.ms.Revision()
	}
	nat := m.natStats()
	if m.dialogs.Revision() == m.rev && mrev == m.mrev && nat == m.nat {
		return nil
	}
	ids, rev, all := m.dialogs.DrainChanges(m.ids[:0])
	mall := false
	if m.ms != nil {
		ids, mall = m.ms.DrainChanges(ids)
	}
	if all {
		m.built = false
		return m.build(ctx)
	}
	m.rev, m.mrev = rev, mrev
	if hm := m.ms != nil && analysis.CaptureHasMedia(m.ms); hm != m.hasMedia || mall || nat != m.nat {
		// no_media judges only a capture that holds media: every
		// dialog's diagnosis may have moved
		m.hasMedia, m.nat = hm, nat
		for i := range m.recs {
			if m.recs[i].live {
				ids = append(ids, m.recs[i].row.CallID)
			}
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for i, id := range ids {
		if i%checkEvery == 0 && ctx.Err() != nil {
			// what is left is refreshed by a later sync
			m.built = false
			return ctx.Err()
		}
		m.refresh(id)
	}
	clear(ids)
	m.ids = ids[:0]
	m.settle()
	return nil
}

// natStats reads the STUN/TURN evidence's counters (zero without any).
func (m *mstate) natStats() stun.Stats {
	if m.ms == nil {
		return stun.Stats{}
	}
	if t := m.ms.NATEvidence(); t != nil {
		return t.Stats()
	}
	return stun.Stats{}
}

// build reads the whole store; the caller holds m.mu.
func (m *mstate) build(ctx context.Context) error {
	m.dialogs.TrackChanges()
	m.dialogs.DrainChanges(nil) // everything is read below
	if m.ms != nil {
		m.ms.TrackChanges()
		m.ms.DrainChanges(nil)
		m.mrev = m.ms.Revision()
		m.hasMedia = analysis.CaptureHasMedia(m.ms)
	}
	m.nat = m.natStats()
	// Read after tracking began: a change made while the rows are read is
	// in the log, and the next sync reads that dialog again.
	m.rev = m.dialogs.Revision()
	m.recs, m.order, m.fresh, m.free, m.limbo, m.gone = nil, nil, nil, nil, nil, nil
	m.byID = map[string]int32{}
	m.live = 0
	m.end, m.endStale = time.Time{}, false
	m.memos = map[string]*memo{}
	n := 0
	err := m.dialogs.EachSummary(dialog.ByCreated, func(row *dialog.Summary) error {
		if n%checkEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		n++
		e, ok := m.dialogs.Extra(row.CallID)
		if !ok {
			return nil // left since; its change is in the log
		}
		m.put(row, e)
		return nil
	})
	if err != nil {
		return err
	}
	m.settle()
	m.built = true
	return nil
}

// refresh reads one Call-ID again.
func (m *mstate) refresh(id string) {
	row, e, ok := m.dialogs.RowExtra(id)
	if !ok {
		if slot, had := m.byID[id]; had {
			m.remove(slot)
		}
		return
	}
	m.put(&row, e)
}

// put stores a dialog's row and Extra, with its media facts computed
// now, and updates every memo.
func (m *mstate) put(row *dialog.Summary, e dialog.Extra) {
	nr := mrec{row: *row, extra: e, live: true}
	nr.mf = m.factsOf(&nr)
	slot, had := m.byID[row.CallID]
	if had && !m.recs[slot].row.CreatedAt.Equal(row.CreatedAt) {
		// the Call-ID left the store and opened anew: another place in
		// the order
		m.remove(slot)
		had = false
	}
	if had {
		old := m.recs[slot]
		m.recs[slot] = nr
		m.changed(slot, &old, &m.recs[slot])
		return
	}
	if n := len(m.free); n > 0 {
		slot = m.free[n-1]
		m.free = m.free[:n-1]
		m.recs[slot] = nr
	} else {
		slot = int32(len(m.recs))
		m.recs = append(m.recs, nr)
	}
	m.byID[nr.row.CallID] = slot
	m.fresh = append(m.fresh, slot)
	m.changed(slot, nil, &m.recs[slot])
}

// remove drops a dialog that left the store.
func (m *mstate) remove(slot int32) {
	old := m.recs[slot]
	delete(m.byID, old.row.CallID)
	m.recs[slot] = mrec{}
	m.limbo = append(m.limbo, slot)
	for int(slot)/64 >= len(m.gone) {
		m.gone = append(m.gone, 0)
	}
	m.gone[slot/64] |= 1 << (uint(slot) % 64)
	m.changed(slot, &old, nil)
}

// factsOf computes a record's media facts, diagnosis included, as a
// recomputing Record does.
func (m *mstate) factsOf(rec *mrec) mediaFacts {
	r := Record{q: m.q, Row: &rec.row, loaded: loadedExtra, extra: &rec.extra}
	r.diagFlags()
	mf := *r.mf
	return mf
}

// view returns a Record over a kept record: its row, Extra and media
// facts; the messages (payload) are read from the store on demand.
func (m *mstate) view(r *Record, rec *mrec) *Record {
	*r = Record{q: m.q, Row: &rec.row, loaded: loadedExtra, extra: &rec.extra, mf: &rec.mf}
	return r
}

// changed updates the counts and every memo for one slot (old or new nil
// when the dialog opened or left).
func (m *mstate) changed(slot int32, old, new *mrec) {
	if old != nil {
		m.live--
		if !m.endStale && !old.row.UpdatedAt.Before(m.end) && (new == nil || new.row.UpdatedAt.Before(m.end)) {
			m.endStale = true
		}
	}
	if new != nil {
		m.live++
		if new.row.UpdatedAt.After(m.end) {
			m.end = new.row.UpdatedAt
		}
	}
	var ro, rn Record
	for _, mm := range m.memos {
		var vo, vn *Record
		if old != nil {
			vo = m.view(&ro, old)
		}
		if new != nil {
			vn = m.view(&rn, new)
		}
		mm.update(slot, vo, vn)
	}
}

// settle puts the slots opened since into the order and takes the removed
// ones out.
func (m *mstate) settle() {
	if len(m.limbo) > 0 {
		m.order = slices.DeleteFunc(m.order, func(s int32) bool {
			w := int(s) / 64
			return w < len(m.gone) && m.gone[w]&(1<<(uint(s)%64)) != 0
		})
		for _, s := range m.limbo {
			m.gone[s/64] &^= 1 << (uint(s) % 64)
		}
		m.free = append(m.free, m.limbo...)
		m.limbo = m.limbo[:0]
	}
	if len(m.fresh) == 0 {
		return
	}
	less := func(a, b int32) int {
		ra, rb := &m.recs[a].row, &m.recs[b].row
		if c := ra.CreatedAt.Compare(rb.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(ra.CallID, rb.CallID)
	}
	fresh := slices.DeleteFunc(m.fresh, func(s int32) bool { return !m.recs[s].live })
	slices.SortFunc(fresh, less)
	if n := len(m.order); n == 0 || len(fresh) == 0 || less(m.order[n-1], fresh[0]) < 0 {
		m.order = append(m.order, fresh...)
	} else {
		// Merge from where the first fresh dialog goes: dialogs open
		// mostly in time order, so that is near the end, and the cost is
		// the tail, not the store (each comparison reads two records).
		pos, _ := slices.BinarySearchFunc(m.order, fresh[0], less)
		a := append([]int32(nil), m.order[pos:]...)
		b := fresh
		merged := m.order[:pos]
		for len(a) > 0 && len(b) > 0 {
			if less(a[0], b[0]) <= 0 {
				merged, a = append(merged, a[0]), a[1:]
			} else {
				merged, b = append(merged, b[0]), b[1:]
			}
		}
		m.order = append(append(merged, a...), b...)
	}
	m.fresh = m.fresh[:0]
}

// captureEnd is the latest updated_at of the live rows.
func (m *mstate) captureEnd() time.Time {
	if m.endStale {
		m.end = time.Time{}
		for i := range m.recs {
			if r := &m.recs[i]; r.live && r.row.UpdatedAt.After(m.end) {
				m.end = r.row.UpdatedAt
			}
		}
		m.endStale = false
	}
	return m.end
}

// memoFor returns the memo of a filter, evaluating it on every dialog when
// it is new.
func (m *mstate) memoFor(ctx context.Context, f *filter.Filter) (*memo, error) {
	m.tick++
	key := ""
	if f != nil {
		key = "f:" + f.String()
	}
	if mm := m.memos[key]; mm != nil {
		mm.used = m.tick
		return mm, nil
	}
	mm := &memo{f: f, methods: map[string]int{}, used: m.tick, aggs: map[Dimension]*aggMemo{}, groups: map[Dimension]*groupMemo{}}
	mm.bits = make([]uint64, (len(m.recs)+63)/64)
	var r Record
	for i := range m.recs {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if rec := &m.recs[i]; rec.live {
			mm.update(int32(i), nil, m.view(&r, rec))
		}
	}
	if len(m.memos) >= maxMemos {
		var lru string
		for k, x := range m.memos {
			if lru == "" || x.used < m.memos[lru].used {
				lru = k
			}
		}
		delete(m.memos, lru)
	}
	m.memos[key] = mm
	return mm, nil
}

func (mm *memo) has(slot int32) bool {
	w := int(slot) / 64
	return w < len(mm.bits) && mm.bits[w]&(1<<(uint(slot)%64)) != 0
}

func (mm *memo) set(slot int32, on bool) {
	w := int(slot) / 64
	for w >= len(mm.bits) {
		mm.bits = append(mm.bits, 0)
	}
	if on {
		mm.bits[w] |= 1 << (uint(slot) % 64)
	} else {
		mm.bits[w] &^= 1 << (uint(slot) % 64)
	}
}

// update moves one slot's dialog out of the memo (as old was) and into it
// (as new is); nil for a dialog that opened or left.
func (mm *memo) update(slot int32, old, new *Record) {
	if old != nil && mm.has(slot) {
		mm.total--
		k := orNone(old.Row.Method)
		if mm.methods[k] <= 1 {
			delete(mm.methods, k)
		} else {
			mm.methods[k]--
		}
		for d, a := range mm.aggs {
			tallyRec(&a.t, old, d, -1)
		}
		for d, g := range mm.groups {
			g.move(slot, old, d, -1)
		}
		mm.set(slot, false)
	}
	if new != nil && (mm.f == nil || mm.f.Match(new)) {
		mm.total++
		mm.methods[orNone(new.Row.Method)]++
		for d, a := range mm.aggs {
			tallyRec(&a.t, new, d, 1)
		}
		for d, g := range mm.groups {
			g.move(slot, new, d, 1)
		}
		mm.set(slot, true)
	}
}

// each calls fn with every slot of the memo, in slot order.
func (mm *memo) each(fn func(slot int32)) {
	for w, word := range mm.bits {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			fn(int32(w*64 + b))
			word &= word - 1
		}
	}
}

// aggFor returns the memo's tally by d, counting it when new.
func (m *mstate) aggFor(mm *memo, d Dimension) *aggMemo {
	if a := mm.aggs[d]; a != nil {
		a.used = m.tick
		return a
	}
	a := &aggMemo{t: newTallies(), used: m.tick}
	var r Record
	mm.each(func(slot int32) { tallyRec(&a.t, m.view(&r, &m.recs[slot]), d, 1) })
	if len(a.t.Text)+len(a.t.Codes)+len(a.t.Addrs) > maxKeptBuckets {
		return a
	}
	if len(mm.aggs) >= maxSubMemos {
		var lru Dimension
		for k, x := range mm.aggs {
			if lru == "" || x.used < mm.aggs[lru].used {
				lru = k
			}
		}
		delete(mm.aggs, lru)
	}
	mm.aggs[d] = a
	return a
}

// groupFor returns the memo's accumulators by d, accumulating them when
// new.
func (m *mstate) groupFor(mm *memo, d Dimension) *groupMemo {
	if g := mm.groups[d]; g != nil {
		g.used = m.tick
		return g
	}
	g := &groupMemo{accs: map[bucketKey]*groupAcc{}, used: m.tick}
	var r Record
	mm.each(func(slot int32) { g.move(slot, m.view(&r, &m.recs[slot]), d, 1) })
	if len(g.accs) > maxKeptBuckets {
		return g
	}
	if len(mm.groups) >= maxSubMemos {
		var lru Dimension
		for k, x := range mm.groups {
			if lru == "" || x.used < mm.groups[lru].used {
				lru = k
			}
		}
		delete(mm.groups, lru)
	}
	mm.groups[d] = g
	return g
}

// move adds (delta 1) or takes away (delta -1) one dialog.
func (g *groupMemo) move(slot int32, rec *Record, d Dimension, delta int) {
	v, ok := rec.GroupValue(d)
	if !ok {
		v = None
	}
	k := bucketKey{v, !ok}
	a := g.accs[k]
	if a == nil {
		a = newGroupAcc()
		g.accs[k] = a
	}
	a.move(slot, rec, delta)
	if a.pop.Dialogs == 0 {
		delete(g.accs, k)
	}
}

// listPage answers List from the maintained state, with the capture's end
// (analysis.CaptureEnd: the latest message or packet) at that state.
func (m *mstate) listPage(ctx context.Context, o ListOptions) (Page, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.sync(ctx); err != nil {
		return Page{}, time.Time{}, err
	}
	mm, err := m.memoFor(ctx, o.Filter)
	if err != nil {
		return Page{}, time.Time{}, err
	}
	start := 0
	if c := o.After; c != nil {
		start = sort.Search(len(m.order), func(i int) bool {
			r := &m.recs[m.order[i]].row
			return c.afterRow(r.CreatedAt, r.CallID)
		})
	}
	p := Page{TotalMatched: mm.total, ByMethod: byMethod(mm.methods)}
	for _, slot := range m.order[start:] {
		if !mm.has(slot) {
			continue
		}
		if o.Limit > 0 && len(p.Rows) >= o.Limit {
			p.More = true
			break
		}
		p.Rows = append(p.Rows, m.recs[slot].row)
	}
	end := m.captureEnd()
	if m.ms != nil {
		if at := m.ms.LastPacketAt(); at.After(end) {
			end = at
		}
	}
	return p, end, nil
}

// aggregate answers Aggregate's tally from the maintained state (a copy
// the caller may change).
func (m *mstate) aggregate(ctx context.Context, f *filter.Filter, d Dimension) (dialog.Tallies, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.sync(ctx); err != nil {
		return dialog.Tallies{}, err
	}
	mm, err := m.memoFor(ctx, f)
	if err != nil {
		return dialog.Tallies{}, err
	}
	t := m.aggFor(mm, d).t
	out := newTallies()
	out.Absent, out.Total = t.Absent, t.Total
	for k, v := range t.Text {
		out.Text[k] = v
	}
	for k, v := range t.Codes {
		out.Codes[k] = v
	}
	for k, v := range t.Addrs {
		out.Addrs[k] = v
	}
	return out, nil
}

// group answers Group's accumulation from the maintained state: copies of
// the groups' accumulators with the INVITEs still pending judged against
// the capture's end, and the matching count.
func (m *mstate) group(ctx context.Context, o GroupOptions) (map[bucketKey]*groupAcc, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.sync(ctx); err != nil {
		return nil, 0, err
	}
	mm, err := m.memoFor(ctx, o.Filter)
	if err != nil {
		return nil, 0, err
	}
	g := m.groupFor(mm, o.By)
	end := m.captureEnd()
	out := make(map[bucketKey]*groupAcc, len(g.accs))
	for k, a := range g.accs {
		c := a.clone()
		for slot := range a.pending {
			if Classify(&m.recs[slot].row, end).TimedOut {
				c.pop.Seizures++
			}
		}
		out[k] = c
	}
	return out, mm.total, nil
}

// factsFor returns the kept Extra and media facts of a row's dialog, as of
// the last sync; false when the state does not hold that dialog (not
// built yet, or the Call-ID left or opened anew since).
func (m *mstate) factsFor(row *dialog.Summary) (dialog.Extra, mediaFacts, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	slot, ok := m.byID[row.CallID]
	if !ok || !m.built || !m.recs[slot].row.CreatedAt.Equal(row.CreatedAt) {
		return dialog.Extra{}, mediaFacts{}, false
	}
	rec := &m.recs[slot]
	return rec.extra, rec.mf, true
}
