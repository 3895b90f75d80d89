package query

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
)

// None is the bucket (and by_method entry) of a dialog whose value is
// absent.
const None = "(none)"

// Other is the by_method entry that counts the methods past MaxByMethod.
const Other = "(other)"

// MaxByMethod bounds by_method: a capture whose dialogs open with more
// distinct methods (a flood of extension methods) lists the MaxByMethod
// largest and counts the rest in one Other entry, so the counts still sum
// to total_matched and the answer stays bounded. Neither label can be a
// SIP method: parentheses are not token characters.
const MaxByMethod = 50

// checkEvery is how many rows a scan handles between context checks.
const checkEvery = 1024

// Querier answers dialog queries over one capture's stores. It is safe for
// concurrent use.
type Querier struct {
	dialogs *dialog.Store
	media   analysis.MediaSource
	th      filter.Thresholds
	cache   *snapCache
	// recompute: answer by reading every row again, never from the
	// maintained state (maintained.go); the maintained state's own
	// Querier, and tests comparing the two.
	recompute bool
}

// snapCache keeps the sorted rows of one store between calls. It holds no
// reference to the store, so a cache shared through For does not keep a
// dropped capture alive.
type snapCache struct {
	mu    sync.Mutex
	snaps [2]*snapshot // by dialog.Order
}

// snapshot is the store's rows sorted in one order, valid while the store's
// revision stays at rev. Its rows are never modified.
type snapshot struct {
	rev  uint64
	rows []dialog.Summary

	methodsOnce sync.Once
	methods     []MethodCount // by_method over every row

	extrasOnce sync.Once
	extras     []dialog.Extra // rows' extras, aligned; nil when unavailable
	order      dialog.Order
}

// allExtras is the Extra of every row of a created_at snapshot, read once
// from the store when it has not moved since the rows were read; nil
// otherwise (a Record then looks its row up by Call-ID).
func (s *snapshot) allExtras(q *Querier) []dialog.Extra {
	if s == nil || s.order != dialog.ByCreated {
		return nil
	}
	s.extrasOnce.Do(func() { s.extras = q.dialogs.ExtrasAt(s.rev, len(s.rows)) })
	return s.extras
}

// allMethods is by_method over every row of the snapshot, computed once.
func (s *snapshot) allMethods() []MethodCount {
	s.methodsOnce.Do(func() {
		m := map[string]int{}
		for i := range s.rows {
			m[orNone(s.rows[i].Method)]++
		}
		s.methods = byMethod(m)
	})
	return s.methods
}

// New returns a Querier over a dialog store and (optionally, nil for none)
// the stream store, with the run's filter thresholds (the aliases expand
// with them; slow setup follows th.PDDSeconds).
func New(dialogs *dialog.Store, m analysis.MediaSource, th filter.Thresholds) *Querier {
	return &Querier{dialogs: dialogs, media: m, th: th, cache: &snapCache{}}
}

// Thresholds returns the run's filter thresholds.
func (q *Querier) Thresholds() filter.Thresholds { return q.th }

// Compile compiles a filter expression (or a bare alias) with the run's
// thresholds. An empty expression is no filter (nil, which matches every
// dialog). A bad expression returns the compiler's *filter.Error.
func (q *Querier) Compile(expr string) (*filter.Filter, error) {
	if expr == "" {
		return nil, nil
	}
	return filter.Compile(expr, q.th)
}

// CompileKinds compiles find_problems' kinds (aliases OR-ed; empty means
// ["problems"]) with the run's thresholds.
func (q *Querier) CompileKinds(kinds []string) (*filter.Filter, error) {
	return filter.CompileKinds(kinds, q.th)
}

func (q *Querier) slowSetup() time.Duration {
	return time.Duration(q.th.PDDSeconds * float64(time.Second))
}

// Rows returns every row of the store sorted in order o (created_at or
// updated_at, then Call-ID). The slice is shared between callers and must
// not be modified. It is rebuilt only when the store's revision moved.
func (q *Querier) Rows(o dialog.Order) []dialog.Summary { return q.snapshot(o).rows }

func (q *Querier) snapshot(o dialog.Order) *snapshot {
	if o != dialog.ByUpdated {
		o = dialog.ByCreated
	}
	if s := q.current(o); s != nil {
		return s
	}
	c := q.cache
	rev := q.dialogs.Revision()
	s := &snapshot{rev: rev, rows: q.dialogs.Summaries(o), order: o}
	// Keep the rows only when no mutation ran while they were read: then
	// they are exactly the content at rev.
	if q.dialogs.Revision() == rev {
		c.mu.Lock()
		c.snaps[o] = s
		c.mu.Unlock()
	}
	return s
}

// current returns the cached snapshot in order o when the store has not
// moved since it was read; nil otherwise.
func (q *Querier) current(o dialog.Order) *snapshot {
	rev := q.dialogs.Revision()
	q.cache.mu.Lock()
	defer q.cache.mu.Unlock()
	if s := q.cache.snaps[o]; s != nil && s.rev == rev {
		return s
	}
	return nil
}

// Record returns a filter record for a row (see Record).
func (q *Querier) Record(row *dialog.Summary) *Record {
	return &Record{q: q, Row: row}
}

// MethodCount is one entry of by_method.
type MethodCount struct {
	Method string `json:"method" desc:"method that opened the dialog; (none) when absent"`
	Count  int    `json:"count" desc:"matching dialogs"`
}

// ListOptions select a page of dialogs.
type ListOptions struct {
	// Filter keeps the matching dialogs; nil keeps all.
	Filter *filter.Filter
	// Order is created_at (list_dialogs) or updated_at (tail_dialogs).
	Order dialog.Order
	// After, when set, starts the page strictly after this position.
	After *Cursor
	// Limit caps the rows returned; <= 0 returns every match after the
	// cursor.
	Limit int
}

// Page is one page of dialogs.
type Page struct {
	// Rows are the page's rows in order.
	Rows []dialog.Summary
	// TotalMatched counts every matching dialog, whatever the cursor.
	TotalMatched int
	// ByMethod counts every matching dialog by opening method, largest
	// first (ties by method); past MaxByMethod methods the rest count in
	// one Other entry.
	ByMethod []MethodCount
	// More: matching rows remain after the page.
	More bool
}

// CaptureEnd is where the capture ends for its rows: its latest packet,
// SIP or RTP (analysis.CaptureEnd over the querier's stores, as the batch
// document computes it). Zero when nothing was read.
func (q *Querier) CaptureEnd() time.Time { return analysis.CaptureEnd(q.dialogs, q.media) }

// MarkInProgress completes rows the caller owns for the capture's end: a
// call still in progress (InCall, no BYE) gets ended false and
// duration_to_capture_end_ms (dialog.Store.MarkInProgress).
func (q *Querier) MarkInProgress(rows []dialog.Summary) {
	q.markInProgress(rows, q.CaptureEnd)
}

// markInProgress is MarkInProgress with the capture's end asked of end,
// only when a row is InCall (the others are never marked).
func (q *Querier) markInProgress(rows []dialog.Summary, end func() time.Time) {
	var at time.Time
	asked := false
	for i := range rows {
		if rows[i].State != dialog.InCall.String() {
			continue
		}
		if !asked {
			at, asked = end(), true
		}
		q.dialogs.MarkInProgress(&rows[i], at)
	}
}

// List returns a page of matching dialogs. It evaluates the filter on every
// dialog (TotalMatched and ByMethod count them all) and returns ctx's error
// if ctx ends first. A call still in progress at capture end carries ended
// false and duration_to_capture_end_ms (MarkInProgress).
func (q *Querier) List(ctx context.Context, o ListOptions) (Page, error) {
	if o.Order != dialog.ByUpdated {
		if m := q.maintained(); m != nil {
			p, end, err := m.listPage(ctx, o)
			q.markInProgress(p.Rows, func() time.Time { return end })
			return p, err
		}
	}
	p, err := q.list(ctx, o)
	q.MarkInProgress(p.Rows)
	return p, err
}

func (q *Querier) list(ctx context.Context, o ListOptions) (Page, error) {
	if o.Filter == nil && o.Order != dialog.ByUpdated && o.Limit > 0 && o.Limit <= maxSlice && q.current(dialog.ByCreated) == nil {
		// The store changed since the rows were last sorted: a page of
		// every row needs only the page, read from the store's own
		// created_at index, not a new snapshot of every row.
		return q.slice(o), nil
	}
	snap := q.snapshot(o.Order)
	rows := snap.rows
	if o.Filter == nil {
		return listAll(snap, o), nil
	}
	var p Page
	methods := map[string]int{}
	rec := &Record{q: q}
	for i := range rows {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return Page{}, ctx.Err()
		}
		row := &rows[i]
		if o.Filter != nil {
			rec.resetAt(snap, i)
			if !o.Filter.Match(rec) {
				continue
			}
		}
		p.TotalMatched++
		methods[orNone(row.Method)]++
		if o.After != nil && !o.After.afterRow(sortKey(row, o.Order), row.CallID) {
			continue
		}
		if o.Limit > 0 && len(p.Rows) >= o.Limit {
			p.More = true
			continue
		}
		p.Rows = append(p.Rows, *row)
	}
	p.ByMethod = byMethod(methods)
	return p, nil
}

// listAll pages every row: a binary search to the cursor, no scan.
func listAll(snap *snapshot, o ListOptions) Page {
	rows := snap.rows
	start := 0
	if o.After != nil {
		start, _ = slices.BinarySearchFunc(rows, o.After, func(r dialog.Summary, c *Cursor) int {
			if c.afterRow(sortKey(&r, o.Order), r.CallID) {
				return 1
			}
			return -1
		})
	}
	end := len(rows)
	if o.Limit > 0 && start+o.Limit < end {
		end = start + o.Limit
	}
	return Page{
		Rows:         append([]dialog.Summary(nil), rows[start:end]...),
		TotalMatched: len(rows),
		ByMethod:     append([]MethodCount(nil), snap.allMethods()...),
		More:         end < len(rows),
	}
}

// maxSlice bounds the page read from the store in one hold of its read
// lock; a longer unfiltered page reads a snapshot.
const maxSlice = 4096

// slice is an unfiltered page in created_at order read from the store,
// equal to listAll over a snapshot taken at the same instant.
func (q *Querier) slice(o ListOptions) Page {
	var past func(time.Time, string) bool
	if c := o.After; c != nil {
		past = func(at time.Time, callID string) bool { return c.afterRow(at, callID) }
	}
	sl := q.dialogs.SliceCreated(past, o.Limit)
	methods := make(map[string]int, len(sl.Methods))
	for k, v := range sl.Methods {
		methods[orNone(k)] += v
	}
	return Page{Rows: sl.Rows, TotalMatched: sl.Total, ByMethod: byMethod(methods), More: sl.More}
}

func byMethod(m map[string]int) []MethodCount {
	out := make([]MethodCount, 0, len(m))
	for k, v := range m {
		out = append(out, MethodCount{Method: k, Count: v})
	}
	slices.SortFunc(out, func(a, b MethodCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Method, b.Method)
	})
	if len(out) > MaxByMethod {
		rest := 0
		for _, m := range out[MaxByMethod:] {
			rest += m.Count
		}
		out = append(out[:MaxByMethod], MethodCount{Method: Other, Count: rest})
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return None
	}
	return s
}
