package query

import (
	"context"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
)

// Benchmarks of the signaling tools' queries on the shared synthetic store
// of 100,000 dialogs (see bench_test.go):
//
//	go test -run '^$' -bench 'Group|Timeline|Window|Await' -benchtime 20x -count 5 ./core/query

func benchGroup(b *testing.B, d Dimension, ms ...Metric) {
	q := benchQuerier(b)
	ctx := context.Background()
	o := GroupOptions{By: d, Metrics: ms, TopN: 50}
	if _, err := q.Group(ctx, o); err != nil { // warm the snapshot
		b.Fatal(err)
	}
	loop(b, func() {
		g, err := q.Group(ctx, o)
		if err != nil || g.TotalMatched != benchDialogs {
			b.Fatalf("group: %d, %v", g.TotalMatched, err)
		}
	})
}

// Row fields only: every metric but mos_p10 reads the row.
func BenchmarkGroupMethodCallMetrics(b *testing.B) {
	benchGroup(b, DimMethod, MetricCount, MetricASR, MetricNER, MetricACD, MetricPDDP50, MetricPDDP95, MetricRetransmitRate)
}

// All eight: mos_p10 looks up each dialog's streams (none here).
func BenchmarkGroupMethodAllMetrics(b *testing.B) { benchGroup(b, DimMethod) }

// next_hop and to_domain read each dialog's retained messages.
func BenchmarkGroupNextHop(b *testing.B)  { benchGroup(b, DimNextHop, MetricCount, MetricASR) }
func BenchmarkGroupToDomain(b *testing.B) { benchGroup(b, DimToDomain, MetricCount, MetricASR) }
func BenchmarkGroupHour(b *testing.B)     { benchGroup(b, DimHour, MetricCount, MetricASR) }

func BenchmarkTimeline1s(b *testing.B) {
	q := benchQuerier(b)
	ctx := context.Background()
	loop(b, func() {
		tl, err := q.Timeline(ctx, 1, 1000)
		if err != nil || tl.Dialogs != benchDialogs {
			b.Fatalf("timeline: %d, %v", tl.Dialogs, err)
		}
	})
}

// A page of 50 in a one-second window in the middle of the store.
func BenchmarkWindowPage(b *testing.B) {
	q := benchQuerier(b)
	rows := q.Rows(dialog.ByCreated)
	start := rows[50000].CreatedAt
	o := WindowOptions{Start: start, End: start.Add(time.Second), Limit: 50}
	ctx := context.Background()
	loop(b, func() {
		p, err := q.Window(ctx, o)
		if err != nil || len(p.Rows) != 50 {
			b.Fatalf("window: %d rows, %v", len(p.Rows), err)
		}
	})
}

// A look-once wait (timeout 0): one poll, one scan of the store. Later
// polls of a longer wait on an unchanged store compare two revision
// counters and skip the scan.
func BenchmarkAwaitLookOnce(b *testing.B) {
	q := benchQuerier(b)
	f, err := q.Compile("method == SUBSCRIBE")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	loop(b, func() {
		r, err := q.Await(ctx, AwaitOptions{Filter: f, Timeout: 0})
		if err != nil || r.Scans != 1 {
			b.Fatalf("await: %+v, %v", r, err)
		}
	})
}

// BenchmarkGroupManyDistinctValues groups 50,000 dialogs each to its own
// domain (TestGroupManyDistinctValues checks the answer on 5,000).
func BenchmarkGroupManyDistinctValues(b *testing.B) {
	const n = 50000
	q := grpManyDistinct(b, n)
	ctx := context.Background()
	loop(b, func() {
		g, err := q.Group(ctx, GroupOptions{By: DimToDomain, TopN: 50})
		if err != nil || g.DistinctValues != n || len(g.Groups) != 50 {
			b.Fatalf("group: %d distinct, %d groups, %v", g.DistinctValues, len(g.Groups), err)
		}
	})
}
