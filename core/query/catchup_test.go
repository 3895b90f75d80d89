package query

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
)

// withCatchUp sets the catch-up goroutine's wake-up threshold, chunk and
// idle time for the states made until the test ends.
func withCatchUp(t testing.TB, at, chunk int, idle time.Duration) {
	savedAt, savedChunk, savedIdle := catchUpAt, catchUpChunk, catchUpIdle
	catchUpAt, catchUpChunk, catchUpIdle = at, chunk, idle
	t.Cleanup(func() { catchUpAt, catchUpChunk, catchUpIdle = savedAt, savedChunk, savedIdle })
}

// fullStore fills a store to its cap of n dialogs and returns it with a
// maintained querier (its state built and checked once against recomputed
// answers for catchUpFilters) and the recomputing querier it is compared
// with.
func fullStore(t *testing.T, n int) (*dialog.Store, *Querier, *Querier, *mstate) {
	t.Helper()
	s := dialog.New(dialog.Config{MaxDialogs: n})
	for i := 0; i < n; i++ {
		synthDialog(t, s, i, 8)
	}
	th := filter.DefaultThresholds()
	maint, recomp := New(s, nil, th), New(s, nil, th)
	recomp.recompute = true
	compareAnswers(t, maint, recomp, catchUpFilters, true)
	return s, maint, recomp, maint.maintained()
}

// catchUpFilters are kept as memos (each with its tallies and groupings
// once compareAnswers asked for them), so that a change moves every kind of
// maintained value.
var catchUpFilters = []string{"", "state == Failed", "method == INVITE", "problems"}

// TestMaintainedCatchUpAppliesEvictionsInTheBackground: with a store at its
// cap of 1,000 dialogs (eviction batches of 10) and the catch-up goroutine
// woken at 8 changes, a writer adds 3,000 dialogs after the first queries,
// evicting 3,000, and no query comes: the goroutine applies every eviction,
// and the answers then equal recomputed ones.
func TestMaintainedCatchUpAppliesEvictionsInTheBackground(t *testing.T) {
	withCatchUp(t, 8, 4, time.Minute)
	s, maint, recomp, m := fullStore(t, 1000)
	ev0 := s.Stats().Evicted
	caughtUp := func() (gone, applied uint64, ok bool) {
		want := s.Stats().Evicted - ev0
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			m.mu.Lock()
			gone, applied = m.bgGone, m.bgApplied
			m.mu.Unlock()
			if gone >= want || time.Now().After(deadline) {
				return gone, applied, gone == want
			}
		}
	}
	// in bursts of 50 new dialogs (and 50 evicted), each well under the
	// change log's bound (two store caps: past it the state is built anew)
	for i := 1000; i < 4000; i++ {
		synthDialog(t, s, i, 8)
		if i%50 == 49 {
			if gone, applied, ok := caughtUp(); !ok {
				t.Fatalf("after %d dialogs: the catch-up goroutine applied %d of %d evictions (%d changes in all)",
					i+1, gone, s.Stats().Evicted-ev0, applied)
			}
		}
	}
	if evicted := s.Stats().Evicted - ev0; evicted != 3000 {
		t.Fatalf("evicted %d dialogs, want 3000", evicted)
	}
	compareAnswers(t, maint, recomp, catchUpFilters, true)
	if m.live != 1000 {
		t.Fatalf("maintained state holds %d live dialogs, want 1000", m.live)
	}
}

// TestMaintainedQueryFinishesAHalfAppliedCatchUp: a query that meets a
// drain the catch-up has applied only in part (an eviction batch of 20 and
// 10 new dialogs after it, split anywhere) applies the rest before it
// answers, so its answers equal recomputed ones at every split.
func TestMaintainedQueryFinishesAHalfAppliedCatchUp(t *testing.T) {
	withCatchUp(t, 1<<30, 0, time.Minute) // no goroutine: the test applies the chunks
	const n, batch = 2000, 20
	s, maint, recomp, m := fullStore(t, n)
	next := n
	for _, part := range []int{0, 1, batch / 2, batch - 1, batch, batch + 5} {
		ev0 := s.Stats().Evicted
		for s.Stats().Evicted == ev0 {
			synthDialog(t, s, next, 8)
			next++
		}
		for i := 0; i < 10; i++ { // changes after the batch
			synthDialog(t, s, next, 8)
			next++
		}
		m.mu.Lock()
		if m.collect(false) {
			m.mu.Unlock()
			t.Fatal("the change log overflowed")
		}
		queued := len(m.pend) - m.pendAt
		done, gone, _ := m.apply(context.Background(), part)
		m.mu.Unlock()
		if queued < batch+10 || done != min(part, queued) {
			t.Fatalf("queued %d, applied %d of %d", queued, done, part)
		}
		if part >= batch && gone != batch {
			t.Fatalf("applied %d changes of which %d evictions, want the batch's %d first", done, gone, batch)
		}
		compareAnswers(t, maint, recomp, catchUpFilters, false)
		m.mu.Lock()
		left := len(m.pend) - m.pendAt
		m.mu.Unlock()
		if left != 0 {
			t.Fatalf("%d changes still queued after a query", left)
		}
	}
}

// TestMaintainedCatchUpEndsWithoutQueries: the catch-up goroutine ends once
// no query came for catchUpIdle, and the next query starts it again.
func TestMaintainedCatchUpEndsWithoutQueries(t *testing.T) {
	withCatchUp(t, 8, 4, 20*time.Millisecond)
	s := dialog.New(dialog.Config{MaxDialogs: 100})
	for i := 0; i < 100; i++ {
		synthDialog(t, s, i, 8)
	}
	q := New(s, nil, filter.DefaultThresholds())
	running := func() bool {
		m := q.maintained()
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.bgRunning
	}
	for round := 0; round < 2; round++ {
		if _, err := q.List(context.Background(), ListOptions{Limit: 5}); err != nil {
			t.Fatal(err)
		}
		if !running() {
			t.Fatalf("round %d: no catch-up goroutine after a query", round)
		}
		deadline := time.Now().Add(5 * time.Second)
		for running() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if running() {
			t.Fatalf("round %d: the catch-up goroutine still runs 5 s after the last query", round)
		}
	}
}

// BenchmarkCatchUpAfterEvictionBatch times the query that meets an
// eviction batch: a store at its cap of SIPNAB_QUERY_DIALOGS dialogs
// (default 100,000; eviction batches of 1%), the six scale queries' filters
// kept (TestQueryLatencyAtScale), a query every 50 new dialogs between
// batches, and the catch-up goroutine off, so the timed List applies the
// whole batch itself (cpu-ns/op is its CPU):
//
//	SIPNAB_QUERY_DIALOGS=1000000 go test -run '^$' -bench CatchUpAfterEvictionBatch -benchtime 10x ./core/query
func BenchmarkCatchUpAfterEvictionBatch(b *testing.B) {
	withCatchUp(b, catchUpAt, 0, catchUpIdle)
	n := envInt("SIPNAB_QUERY_DIALOGS", 100000)
	s := dialog.New(dialog.Config{MaxDialogs: n, MaxBytes: -1})
	for i := 0; i < n; i++ {
		synthDialog(b, s, i, 8)
	}
	q := New(s, nil, filter.DefaultThresholds())
	ctx := context.Background()
	compile := func(expr string) *filter.Filter {
		f, err := q.Compile(expr)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	failedSlow, invite := compile("state == Failed and pdd > 2"), compile("method == INVITE")
	problems, err := q.CompileKinds(nil)
	if err != nil {
		b.Fatal(err)
	}
	all := func() {
		for _, f := range []*filter.Filter{nil, failedSlow, problems} {
			if _, err := q.List(ctx, ListOptions{Limit: 50, Filter: f}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := q.Aggregate(ctx, invite, DimUA, 50); err != nil {
			b.Fatal(err)
		}
		if _, err := q.Group(ctx, GroupOptions{By: DimNextHop, Metrics: []Metric{MetricCount, MetricASR}, TopN: 50}); err != nil {
			b.Fatal(err)
		}
	}
	all()
	next := n
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ev := s.Stats().Evicted
		for k := 1; s.Stats().Evicted == ev; k++ {
			synthDialog(b, s, next, 8)
			next++
			if k%50 == 0 && s.Stats().Evicted == ev {
				all()
			}
		}
		runtime.LockOSThread()
		b.StartTimer()
		c0 := threadCPU()
		if _, err := q.List(ctx, ListOptions{Limit: 50}); err != nil {
			b.Fatal(err)
		}
		cpu += threadCPU() - c0
		b.StopTimer()
		runtime.UnlockOSThread()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}
