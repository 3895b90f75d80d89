package query

import (
	"context"
	"math/bits"
	"runtime"
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
// media changes (the stores' change logs: dialog.Store.DrainChangeSet,
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
	ids   []string        // scratch for drains
	chg   []dialog.Change // scratch for drains

	// The catch-up queue: changes drained from the stores' logs and not
	// applied yet, oldest drain first (pend[pendAt:]). A query applies
	// what is left of it before it answers, so it never answers from a
	// half-applied drain; the catch-up goroutine (catchUp) applies it a
	// chunk at a time in between, so the query that meets an eviction
	// batch pays only what the goroutine has not done yet.
	pend   []pending
	pendAt int
	// The catch-up goroutine runs while queries come (lastQuery): it is
	// started by a query and ends after catchUpIdle without one.
	bgRunning bool
	lastQuery time.Time
	// catchUpAt, catchUpChunk and catchUpIdle as the state was made.
	wakeAt, chunk int
	idle          time.Duration
	// bgApplied counts the changes the goroutine applied, bgGone the
	// dialogs that left among them (tests).
	bgApplied, bgGone uint64

	// Scratch records of leave, enter and factsOf: kept here (under mu)
	// so that a change allocates nothing.
	rv, fr Record
}

// pending is one queued change: a Call-ID to read again, or a dialog that
// left the store (no need to look it up).
type pending struct {
	id   string
	gone bool
}

// The catch-up goroutine: woken when catchUpAt dialogs, or half an
// eviction batch (MaxDialogs/200) if more, changed since the last drain
// (dialog.Store.WakeOnChanges: an eviction batch, or a writer that ran that
// far ahead of the queries; queries that come often drain smaller changes
// themselves, and a goroutine woken more often only hands them the rest of
// its chunks), it applies catchUpChunk changes per hold of the state's
// lock, and ends catchUpIdle after the last query (the next query starts
// it again), so a load that nobody queries pays nothing for it. Variables
// so that a test can change them (a state reads them when it is made).
var (
	catchUpAt    = 1024
	catchUpChunk = 256
	catchUpIdle  = 10 * time.Second
)

// catchUpQuiet: the goroutine applies a chunk only when no query started in
// that long (queries that come faster catch up by themselves).
const catchUpQuiet = 2 * time.Millisecond

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
			dialogs: q.dialogs, ms: ms, wakeAt: max(catchUpAt, q.dialogs.Config().MaxDialogs/200),
			chunk: catchUpChunk, idle: catchUpIdle}
	}).(*mstate)
	if m.q.media != q.media || m.q.th != q.th {
		return nil
	}
	return m
}

// sync brings the state up to the stores as they are now: it drains their
// change logs and applies every queued change; the caller holds m.mu. It
// also keeps the catch-up goroutine running while queries come.
func (m *mstate) sync(ctx context.Context) error {
	m.lastQuery = time.Now()
	if !m.built {
		if err := m.build(ctx); err != nil {
			return err
		}
		m.startCatchUp()
		return nil
	}
	m.startCatchUp()
	if m.collect(false) {
		m.built = false
		return m.build(ctx)
	}
	if _, _, err := m.apply(ctx, -1); err != nil {
		return err // what is left stays queued for the next sync
	}
	m.settle()
	return nil
}

// collect drains the stores' change logs into the queue; true when the
// dialog log overflowed and the state must be built again. The caller
// holds m.mu. Unless force, revisions that did not move since the last
// drain skip it (no store lock); the catch-up goroutine forces it, since
// the writer wakes it while still applying the message that reached the
// threshold, before that message moves the revision.
func (m *mstate) collect(force bool) (rebuild bool) {
	var mrev uint64
	if m.ms != nil {
		mrev = m.ms.Revision()
	}
	nat := m.natStats()
	if !force && m.dialogs.Revision() == m.rev && mrev == m.mrev && nat == m.nat {
		return false
	}
	chg, rev, all := m.dialogs.DrainChangeSet(m.chg[:0])
	ids := m.ids[:0]
	// A drain's dialogs that left go first, then the Call-IDs to read
	// again: a Call-ID that left and opened anew is listed twice, and
	// read after it was dropped (dialog.Change).
	for _, c := range chg {
		if c.Gone {
			m.pend = append(m.pend, pending{id: c.CallID, gone: true})
		} else {
			ids = append(ids, c.CallID)
		}
	}
	clear(chg)
	m.chg = chg[:0]
	mall := false
	if m.ms != nil {
		ids, mall = m.ms.DrainChanges(ids)
	}
	if all {
		clear(ids)
		m.ids = ids[:0]
		m.resetQueue()
		return true
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
	for _, id := range ids {
		m.pend = append(m.pend, pending{id: id})
	}
	clear(ids)
	m.ids = ids[:0]
	return false
}

// apply applies up to n queued changes (every one when n < 0), oldest
// first, and returns how many, and how many of them left the store; the
// caller holds m.mu. On a cancelled ctx, what is left stays queued.
func (m *mstate) apply(ctx context.Context, n int) (done, gone int, err error) {
	for ; m.pendAt < len(m.pend) && done != n; done++ {
		if done%checkEvery == 0 && ctx.Err() != nil {
			return done, gone, ctx.Err()
		}
		p := m.pend[m.pendAt]
		m.pend[m.pendAt] = pending{}
		m.pendAt++
		if p.gone {
			gone++
			if slot, ok := m.byID[p.id]; ok {
				m.remove(slot)
			}
		} else {
			m.refresh(p.id)
		}
	}
	if m.pendAt == len(m.pend) {
		m.pend, m.pendAt = m.pend[:0], 0
	}
	return done, gone, nil
}

// resetQueue forgets the queued changes (the state is built again).
func (m *mstate) resetQueue() {
	clear(m.pend)
	m.pend, m.pendAt = m.pend[:0], 0
}

// startCatchUp starts the catch-up goroutine when it is not running; the
// caller holds m.mu.
func (m *mstate) startCatchUp() {
	if m.bgRunning || m.chunk <= 0 {
		return
	}
	m.bgRunning = true
	go m.catchUp(m.dialogs.WakeOnChanges(m.wakeAt))
}

// catchUp applies the queued changes in the background, a chunk per hold
// of m.mu (a query waits for at most one chunk, then applies what is left
// itself), each time the dialog store's change log reaches catchUpAt; it
// ends catchUpIdle after the last query.
func (m *mstate) catchUp(wake <-chan struct{}) {
	idle := time.NewTimer(m.idle)
	defer idle.Stop()
	for {
		select {
		case <-wake:
		case <-idle.C:
			m.mu.Lock()
			left := m.idle - time.Since(m.lastQuery)
			if left <= 0 {
				m.bgRunning = false
				m.mu.Unlock()
				return
			}
			m.mu.Unlock()
			idle.Reset(left)
			continue
		}
		for more := true; more; {
			m.mu.Lock()
			// Queries coming back to back catch up by themselves:
			// beside them and the writer on two cores, a third
			// goroutine that runs makes a query wait for a time slice
			// of the scheduler (a p99 of 11-14 ms at a million
			// dialogs, against 2-5 ms without it). The goroutine fills
			// the gaps between queries.
			if quiet := catchUpQuiet - time.Since(m.lastQuery); quiet > 0 {
				m.mu.Unlock()
				time.Sleep(quiet)
				continue
			}
			more = m.catchUpStep()
			m.mu.Unlock()
			runtime.Gosched() // a query waiting for the lock goes first
		}
	}
}

// catchUpStep applies one chunk of the queue, draining the change logs
// first when it is empty, and settles the order once it is; false when
// nothing is left. The caller holds m.mu.
func (m *mstate) catchUpStep() bool {
	if !m.built {
		return false
	}
	if m.pendAt == len(m.pend) && m.collect(true) {
		m.built = false // the next query builds the state again
		return false
	}
	done, gone, _ := m.apply(context.Background(), m.chunk)
	m.bgApplied += uint64(done)
	m.bgGone += uint64(gone)
	if m.pendAt == len(m.pend) {
		m.settle()
		return false
	}
	return true
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
	m.resetQueue()
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
// now, and updates every memo. The record is written in place: the old one
// leaves the memos first (an mrec copy costs a write barrier per pointer
// while the collector marks).
func (m *mstate) put(row *dialog.Summary, e dialog.Extra) {
	slot, had := m.byID[row.CallID]
	if had && !m.recs[slot].row.CreatedAt.Equal(row.CreatedAt) {
		// the Call-ID left the store and opened anew: another place in
		// the order
		m.remove(slot)
		had = false
	}
	switch {
	case had:
		m.leave(slot, &row.UpdatedAt)
	case len(m.free) > 0:
		slot = m.free[len(m.free)-1]
		m.free = m.free[:len(m.free)-1]
	default:
		slot = int32(len(m.recs))
		m.recs = append(m.recs, mrec{})
	}
	rec := &m.recs[slot]
	*rec = mrec{row: *row, extra: e, live: true}
	rec.mf = m.factsOf(rec)
	if !had {
		m.byID[rec.row.CallID] = slot
		m.fresh = append(m.fresh, slot)
	}
	m.enter(slot)
}

// remove drops a dialog that left the store.
func (m *mstate) remove(slot int32) {
	m.leave(slot, nil)
	delete(m.byID, m.recs[slot].row.CallID)
	m.recs[slot] = mrec{}
	m.limbo = append(m.limbo, slot)
	for int(slot)/64 >= len(m.gone) {
		m.gone = append(m.gone, 0)
	}
	m.gone[slot/64] |= 1 << (uint(slot) % 64)
}

// factsOf computes a record's media facts, diagnosis included, as a
// recomputing Record does.
func (m *mstate) factsOf(rec *mrec) mediaFacts {
	r := &m.fr
	*r = Record{q: m.q, Row: &rec.row, loaded: loadedExtra, extra: &rec.extra}
	r.diagFlags()
	return *r.mf
}

// view returns a Record over a kept record: its row, Extra and media
// facts; the messages (payload) are read from the store on demand.
func (m *mstate) view(r *Record, rec *mrec) *Record {
	*r = Record{q: m.q, Row: &rec.row, loaded: loadedExtra, extra: &rec.extra, mf: &rec.mf}
	return r
}

// leave takes the dialog in slot, as it is kept, out of the counts and
// every memo; next is the updated_at of the row that replaces it, nil when
// it left the store.
func (m *mstate) leave(slot int32, next *time.Time) {
	old := &m.recs[slot]
	m.live--
	if !m.endStale && !old.row.UpdatedAt.Before(m.end) && (next == nil || next.Before(m.end)) {
		m.endStale = true
	}
	if len(m.memos) == 0 {
		return
	}
	// one view for every memo: what one filter loads of the record
	// (its messages, its streams) serves the next
	v := m.view(&m.rv, old)
	for _, mm := range m.memos {
		mm.update(slot, v, nil)
	}
}

// enter adds the dialog in slot, as it is kept, to the counts and every
// memo.
func (m *mstate) enter(slot int32) {
	rec := &m.recs[slot]
	m.live++
	if rec.row.UpdatedAt.After(m.end) {
		m.end = rec.row.UpdatedAt
	}
	if len(m.memos) == 0 {
		return
	}
	v := m.view(&m.rv, rec)
	for _, mm := range m.memos {
		mm.update(slot, nil, v)
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
