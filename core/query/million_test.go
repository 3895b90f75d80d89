package query

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
)

// TestQueryLatencyAtScale measures the dialog queries the tools make on a
// store of SIPNAB_QUERY_DIALOGS synthetic dialogs (synthDialog: calls,
// failed calls, registrations, OPTIONS; no media), quiet and while a writer
// keeps applying new dialogs at full speed (the store at its cap, so the
// oldest are evicted as in a long live capture), and fails when a
// maintained answer's p99 reaches 50 ms. It also times the same queries
// recomputed from the store (the behaviour before the maintained state) and
// reports the maintained state's bytes per dialog. Off by default (it needs
// about 5 GiB and several minutes):
//
//	SIPNAB_QUERY_DIALOGS=1000000 go test -run QueryLatencyAtScale -v -timeout 60m ./core/query
//
// SIPNAB_QUERY_SAMPLES (default 200) and SIPNAB_QUERY_BEFORE_SAMPLES
// (default 10) set the calls per query and phase. bench/README.md has the
// numbers.
func TestQueryLatencyAtScale(t *testing.T) {
	n := envInt("SIPNAB_QUERY_DIALOGS", 0)
	if n == 0 {
		t.Skip("set SIPNAB_QUERY_DIALOGS (e.g. 1000000) to measure")
	}
	samples := envInt("SIPNAB_QUERY_SAMPLES", 200)
	beforeSamples := envInt("SIPNAB_QUERY_BEFORE_SAMPLES", 10)
	const tie = 8
	s := dialog.New(dialog.Config{MaxDialogs: n, MaxBytes: -1})
	start := time.Now()
	for i := 0; i < n; i++ {
		synthDialog(t, s, i, tie)
	}
	t.Logf("store: %d dialogs in %v", s.Len(), time.Since(start).Round(time.Millisecond))
	heapBefore := liveHeap()

	th := filter.DefaultThresholds()
	q := New(s, nil, th)
	ctx := context.Background()
	start = time.Now()
	if _, err := q.List(ctx, ListOptions{Limit: 50}); err != nil {
		t.Fatal(err)
	}
	t.Logf("first query (builds the maintained state): %v", time.Since(start).Round(time.Millisecond))
	m := q.maintained()
	per := float64(liveHeap()-heapBefore) / float64(n)
	t.Logf("maintained state: %.0f bytes per dialog (live heap %.0f MiB before, store alone %.0f bytes per dialog)",
		per, float64(heapBefore)/(1<<20), float64(heapBefore)/float64(n))

	m.mu.Lock()
	deepRow := m.recs[m.order[len(m.order)*9/10]].row
	m.mu.Unlock()
	deep, err := ParseDialogCursor(CursorOf(&deepRow, dialog.ByCreated))
	if err != nil {
		t.Fatal(err)
	}
	compile := func(expr string) *filter.Filter {
		f, err := q.Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	failedSlow := compile("state == Failed and pdd > 2")
	invite := compile("method == INVITE")
	problems, err := q.CompileKinds(nil)
	if err != nil {
		t.Fatal(err)
	}
	clauses, err := filter.AliasClauses(nil, th)
	if err != nil {
		t.Fatal(err)
	}
	type query struct {
		name string
		run  func(q *Querier) error
	}
	queries := []query{
		{"list first page", func(q *Querier) error { _, err := q.List(ctx, ListOptions{Limit: 50}); return err }},
		{"list deep cursor (row 900,000)", func(q *Querier) error {
			_, err := q.List(ctx, ListOptions{Limit: 50, After: &deep})
			return err
		}},
		{"filtered list (state == Failed and pdd > 2)", func(q *Querier) error {
			_, err := q.List(ctx, ListOptions{Limit: 50, Filter: failedSlow})
			return err
		}},
		{"find_problems (problems, 50 rows explained)", func(q *Querier) error {
			p, err := q.List(ctx, ListOptions{Limit: 50, Filter: problems})
			for i := range p.Rows {
				q.Explain(&p.Rows[i], clauses)
			}
			return err
		}},
		{"aggregate ua, filter method == INVITE", func(q *Querier) error {
			_, err := q.Aggregate(ctx, invite, DimUA, 50)
			return err
		}},
		{"group by next_hop with ASR", func(q *Querier) error {
			_, err := q.Group(ctx, GroupOptions{By: DimNextHop, Metrics: []Metric{MetricCount, MetricASR}, TopN: 50})
			return err
		}},
	}
	for _, qq := range queries {
		start := time.Now()
		if err := qq.run(q); err != nil {
			t.Fatal(err)
		}
		t.Logf("first call, %s: %v", qq.name, time.Since(start).Round(time.Microsecond))
	}

	// measure runs every query k times, interleaved (A B C … A B C …),
	// and returns each one's latencies.
	// measure runs every query k times, interleaved (A B C … A B C …),
	// and returns each one's wall and CPU times (the calling thread's CPU:
	// at a load average of 20 on two cores, much of a call's wall time is
	// spent waiting for a core).
	measure := func(q *Querier, k int) timings {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		out := timings{wall: make([][]time.Duration, len(queries)), cpu: make([][]time.Duration, len(queries))}
		for r := 0; r < k; r++ {
			for i, qq := range queries {
				c0 := threadCPU()
				start := time.Now()
				if err := qq.run(q); err != nil {
					t.Fatal(err)
				}
				out.wall[i] = append(out.wall[i], time.Since(start))
				out.cpu[i] = append(out.cpu[i], threadCPU()-c0)
			}
		}
		return out
	}
	// loaded runs measure while a writer applies new dialogs, and returns
	// the writer's rate in SIP messages per second.
	next := n
	var batches uint64 // eviction batches during the loaded phases
	loaded := func(q *Querier, k int) (timings, float64, float64) {
		var stop atomic.Bool
		var wg sync.WaitGroup
		msgs0, batches0 := s.Stats().Messages, s.Stats().EvictionBatches
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				synthDialog(t, s, next, tie)
				next++
			}
		}()
		time.Sleep(200 * time.Millisecond) // the writer is running
		load := loadAvg()
		start := time.Now()
		lat := measure(q, k)
		el := time.Since(start)
		stop.Store(true)
		wg.Wait()
		batches += s.Stats().EvictionBatches - batches0
		return lat, float64(s.Stats().Messages-msgs0) / (el + 200*time.Millisecond).Seconds(), load
	}

	quietLoad := loadAvg()
	quiet := measure(q, samples)
	busy, rate, busyLoad := loaded(q, samples)
	busyBatches := batches
	m.mu.Lock()
	bgApplied, bgGone := m.bgApplied, m.bgGone
	m.mu.Unlock()

	recomp := New(s, nil, th)
	recomp.recompute = true
	var bQuiet, bBusy timings
	var bRate, bLoad float64
	if beforeSamples > 0 {
		bQuiet = measure(recomp, beforeSamples)
		bBusy, bRate, bLoad = loaded(recomp, beforeSamples)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n%d dialogs; %d calls per query and phase (before: %d); load average %.1f quiet, %.1f loaded; writer %.0f SIP messages/s (before: %.0f at load %.1f)\n",
		n, samples, beforeSamples, quietLoad, busyLoad, rate, bRate, bLoad)
	fmt.Fprintf(&b, "loaded: %d eviction batches of %d dialogs; the catch-up goroutine applied %d changes (%d evictions) from the first query to the end of the loaded phase\n\n",
		busyBatches, max(n/100, 1), bgApplied, bgGone)
	b.WriteString("Wall time (CPU time of the call), ms:\n\n")
	b.WriteString("| query | quiet p50 | quiet p99 | loaded p50 | loaded p99 | loaded max | before: quiet p50 | before: loaded p50 |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	var over []string
	for i, qq := range queries {
		bq, bb := "—", "—"
		if bQuiet.wall != nil {
			bq, bb = bQuiet.text(i, 50), bBusy.text(i, 50)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", qq.name, quiet.text(i, 50), quiet.text(i, 99),
			busy.text(i, 50), busy.text(i, 99), busy.text(i, 100), bq, bb)
		if p := max(pct(quiet.wall[i], 99), pct(busy.wall[i], 99)); p >= 50*time.Millisecond {
			over = append(over, fmt.Sprintf("%s: p99 %v", qq.name, p))
		}
	}
	t.Log(b.String())
	if len(over) > 0 {
		t.Errorf("p99 at or over 50 ms: %s", strings.Join(over, "; "))
	}
}

// timings are the wall and CPU times of each query's calls.
type timings struct{ wall, cpu [][]time.Duration }

// text is query i's p-th percentile wall time, and its CPU time's.
func (t timings) text(i, p int) string {
	return msText(pct(t.wall[i], p)) + " (" + msText(pct(t.cpu[i], p)) + ")"
}

// threadCPU is the calling thread's CPU time (RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // 1: RUSAGE_THREAD
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pct is the nearest-rank p-th percentile.
func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[NearestRank(len(s), p)]
}

func msText(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// liveHeap is the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// loadAvg is the 1-minute load average (0 when unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
