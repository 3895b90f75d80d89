package query

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
)

// The benchmarks run on a synthetic store of 100,000 dialogs (calls,
// failed calls, registrations, OPTIONS; eight dialogs per millisecond):
//
//	go test -run '^$' -bench . -benchtime 20x -count 5 ./core/query
//
// "Cold" benchmarks drop the sorted-row snapshot before each call, as after
// a store change (a live capture); the others reuse it, as on a loaded
// file whose store no longer moves. An unfiltered page and an unfiltered
// aggregation read the store itself when there is no snapshot to reuse;
// a filter (ListFilteredRowFieldsCold) builds the snapshot first.
const benchDialogs = 100000

var (
	benchOnce  sync.Once
	benchStore *dialog.Store
)

func benchQuerier(b *testing.B) *Querier {
	benchOnce.Do(func() { benchStore = synthStore(b, benchDialogs, 8) })
	return New(benchStore, nil, filter.DefaultThresholds())
}

// cpuTime is the process's user+system CPU time: on a shared machine the
// wall clock of a benchmark measures the neighbours too, so each benchmark
// also reports cpu-ns/op.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs body b.N times and reports its CPU time per call.
func loop(b *testing.B, body func()) {
	var cpu time.Duration
	n := 0
	for b.Loop() {
		start := cpuTime()
		body()
		cpu += cpuTime() - start
		n++
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
}

func (q *Querier) dropSnapshots() {
	q.cache.mu.Lock()
	q.cache.snaps = [2]*snapshot{}
	q.cache.mu.Unlock()
}

func benchList(b *testing.B, cold bool, after func(q *Querier) *Cursor, expr string) {
	q := benchQuerier(b)
	f, err := q.Compile(expr)
	if err != nil {
		b.Fatal(err)
	}
	o := ListOptions{Filter: f, Limit: 50, After: after(q)}
	ctx := context.Background()
	if _, err := q.List(ctx, o); err != nil { // warm the snapshot
		b.Fatal(err)
	}
	loop(b, func() {
		if cold {
			q.dropSnapshots()
		}
		p, err := q.List(ctx, o)
		if err != nil || len(p.Rows) == 0 || p.TotalMatched == 0 {
			b.Fatalf("page: %d rows of %d, %v", len(p.Rows), p.TotalMatched, err)
		}
	})
}

func first(*Querier) *Cursor { return nil }

// deep is the cursor of the 90,000th row.
func deep(q *Querier) *Cursor {
	rows := q.Rows(dialog.ByCreated)
	c, _ := ParseDialogCursor(CursorOf(&rows[90000], dialog.ByCreated))
	return &c
}

func BenchmarkListFirstPage(b *testing.B)      { benchList(b, false, first, "") }
func BenchmarkListFirstPageCold(b *testing.B)  { benchList(b, true, first, "") }
func BenchmarkListDeepCursor(b *testing.B)     { benchList(b, false, deep, "") }
func BenchmarkListDeepCursorCold(b *testing.B) { benchList(b, true, deep, "") }
func BenchmarkListFilteredRowFields(b *testing.B) {
	benchList(b, false, first, "state == Failed and pdd > 2")
}
func BenchmarkListFilteredRowFieldsCold(b *testing.B) {
	benchList(b, true, first, "state == Failed and pdd > 2")
}

func benchAggregate(b *testing.B, cold bool, d Dimension) {
	q := benchQuerier(b)
	ctx := context.Background()
	if _, err := q.Aggregate(ctx, nil, d, 50); err != nil { // warm the snapshot
		b.Fatal(err)
	}
	loop(b, func() {
		if cold {
			q.dropSnapshots()
		}
		a, err := q.Aggregate(ctx, nil, d, 50)
		if err != nil || a.TotalMatched != benchDialogs {
			b.Fatalf("aggregate: %d, %v", a.TotalMatched, err)
		}
	})
}

func BenchmarkAggregateMethod(b *testing.B)           { benchAggregate(b, false, DimMethod) }
func BenchmarkAggregateMethodCold(b *testing.B)       { benchAggregate(b, true, DimMethod) }
func BenchmarkAggregateState(b *testing.B)            { benchAggregate(b, false, DimState) }
func BenchmarkAggregateFromUser(b *testing.B)         { benchAggregate(b, false, DimFromUser) }
func BenchmarkAggregateFromUserCold(b *testing.B)     { benchAggregate(b, true, DimFromUser) }
func BenchmarkAggregateResponseCode(b *testing.B)     { benchAggregate(b, false, DimResponseCode) }
func BenchmarkAggregateResponseCodeCold(b *testing.B) { benchAggregate(b, true, DimResponseCode) }
func BenchmarkAggregateUA(b *testing.B)               { benchAggregate(b, false, DimUA) }
func BenchmarkAggregateSrcIP(b *testing.B)            { benchAggregate(b, false, DimSrcIP) }
func BenchmarkAggregateSrcIPCold(b *testing.B)        { benchAggregate(b, true, DimSrcIP) }
func BenchmarkAggregateDstIP(b *testing.B)            { benchAggregate(b, false, DimDstIP) }
