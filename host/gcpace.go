package host

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
)

// pauseGCForLoad turns the garbage collector off while a batch run loads
// its files and writes its output, once the live heap has reached
// pauseFrom, up to a memory limit, and returns the function that ends the
// pause (the batch run calls it once its output is written; calling it
// again does nothing).
//
// What a file load allocates is nearly all kept until the output is
// written: the retained messages' bytes, the dialogs, the media endpoints
// (bench/README.md, memory). A collection during the load marks everything
// kept so far and frees little, and the default pacing (GOGC=100) runs one
// each time the heap doubles: five on the signaling workload, the last of
// them over half the final heap. Paused, the load runs none, and neither
// does the output that follows unless it makes garbage (the documents are
// written with little; the analysis outputs re-derive each dialog and are
// the guard's to catch, below); the previous settings come back once the
// output is written, just before the process exits. A small load (a
// live heap under pauseFrom) is never paused: its collections cost little,
// and they keep what the start-up leaves behind from adding to its peak.
//
// The limit is the store's byte budget (--max-store-mb, or the machine's
// default: dialog.DefaultMaxBytes), the heap a full store holds anyway: a
// load that allocates more than that gets its first collection there, and
// that collection ends the pause (past the limit a live heap would keep
// the collector running back to back). GOGC or GOMEMLIMIT in the
// environment is the user's choice: left alone. Live captures, HEP
// listeners, standard input and the MCP server keep the defaults (their
// reads may not end), and so does a load on two cores or more (collect).
// Loads in one process (tests) share one pause: the last to end restores
// the settings the first found.
//
// The pause pays only while what the load allocates is kept. held reports
// what the load's dialog store holds (its held_bytes); while paused, a
// guard compares it every guardEvery with the heap's objects, live and
// dead, and ends the pause once they exceed it by more than guardSlack or
// a quarter of it: a capture whose store evicts (a full store replaces
// dialogs), or whose traffic is mostly garbage, gets its collector back
// long before the budget, so its peak stays near what the default pacing
// gives. held may be nil (nothing held: the slack alone).
func pauseGCForLoad(budget int64, held func() int64) (resume func()) {
	if budget <= 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	p := &gcPause
	p.mu.Lock()
	if p.loads == 0 {
		p.gen++
		p.budget, p.paused, p.ended, p.guarded = budget, false, false, false
		p.held = p.held[:0]
		p.watch()
	}
	if held != nil {
		p.held = append(p.held, held)
	}
	p.loads++
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(p.loadEnded) }
}

// loadPausesGC reports whether a batch run's load pauses the collector:
// files only (not live interfaces or HEP listeners, whose reads end on
// request, nor standard input, a pipe that may not end), on one core (with
// --cores 2 or more the workers' batches are garbage: paused, signaling's
// peak RSS rose by a sixth).
func loadPausesGC(src batchSources, cores int) bool {
	return len(src.files) > 0 && !src.streaming() && !slices.Contains(src.files, "-") && cores <= 1
}

// pauseFrom is the live heap from which a load is paused.
const pauseFrom = 8 << 20

// gcPause is the process's pause (pauseGCForLoad).
var gcPause gcPauseState

type gcPauseState struct {
	mu      sync.Mutex
	loads   int    // loads running
	gen     uint64 // the pause's generation: a sentinel watched by an earlier one is not this one's
	budget  int64  // the memory limit while paused
	paused  bool   // the collector is off
	ended   bool   // the pause is over while loads still run (the limit was reached, or the guard)
	seen    uint64 // the collection afterGC last looked at (one look per collection)
	checks  int    // collections looked at with loads running (tests wait on it)
	percent int    // the settings the pause found
	limit   int64  //
	held    []func() int64
	stop    chan struct{} // closed when the pause ends: the guard returns
	guarded bool          // the guard ended the pause (garbage outgrew the store)
}

// The guard's period and slack (pauseGCForLoad).
const (
	guardEvery = 10 * time.Millisecond
	guardSlack = 32 << 20
)

// guard ends the pause once the heap's objects exceed what the stores hold
// by more than the slack; it returns when the pause ends.
func (p *gcPauseState) guard(stop <-chan struct{}) {
	t := time.NewTicker(guardEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		held := slices.Clone(p.held)
		p.mu.Unlock()
		var h int64
		for _, f := range held {
			h += f()
		}
		if heapObjects() <= h+max(guardSlack, h/4) {
			continue
		}
		p.mu.Lock()
		if p.paused && !p.ended {
			p.restore()
			p.ended, p.guarded = true, true
		}
		p.mu.Unlock()
		return
	}
}

// watch runs afterGC after the next collection: a sentinel allocated now
// is found unreachable by it, which runs the sentinel's cleanup. Call it
// with p.mu held.
func (p *gcPauseState) watch() {
	runtime.AddCleanup(new(gcSentinel), func(w gcWatch) { w.p.afterGC(w.gen) }, gcWatch{p, p.gen})
}

// gcWatch is what a sentinel's cleanup gets: the pause and the generation
// that watched.
type gcWatch struct {
	p   *gcPauseState
	gen uint64
}

// afterGC pauses a load whose live heap has reached pauseFrom (and watches
// the next collection until then), and ends the pause at the first
// collection it meets: the memory limit started it. A sentinel left by an
// earlier pause (its loads ended before a collection found it) decides
// nothing: the collection that freed it may have run before this pause's
// loads started.
func (p *gcPauseState) afterGC(gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if gen != p.gen {
		return
	}
	// One look per collection: seen is the collection looked at (the
	// tests wait on it); a sentinel of an earlier pause returned above.
	c := gcCycles()
	if c == p.seen {
		return
	}
	p.seen = c
	if p.loads > 0 {
		p.checks++
	}
	switch {
	case p.loads == 0 || p.ended:
	case p.paused:
		p.restore()
		p.ended = true
	case liveHeap() >= pauseFrom:
		p.percent = debug.SetGCPercent(-1)
		p.limit = debug.SetMemoryLimit(p.budget)
		p.paused = true
		p.stop = make(chan struct{})
		go p.guard(p.stop)
		p.watch()
	default:
		p.watch()
	}
}

func (p *gcPauseState) restore() {
	debug.SetMemoryLimit(p.limit)
	debug.SetGCPercent(p.percent)
	p.paused = false
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
}

// loadEnded ends one load; the last one ends the pause. It collects
// nothing: the batch run ends it once its output is written, when the
// process is about to exit (a collection then would mark the whole store
// to free a few megabytes nobody reuses); the collector's settings come
// back for whatever the process does next.
func (p *gcPauseState) loadEnded() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loads--
	if p.loads == 0 && p.paused {
		p.restore()
	}
}

// gcCycles counts the collections completed.
func gcCycles() uint64 { return readUint64Metric("/gc/cycles/total:gc-cycles") }

// liveHeap is the heap the last collection found live.
func liveHeap() uint64 { return readUint64Metric("/gc/heap/live:bytes") }

// heapObjects is the heap's objects now: live, and dead ones no collection
// has freed yet.
func heapObjects() int64 { return int64(readUint64Metric("/memory/classes/heap/objects:bytes")) }

// readUint64Metric reads one runtime metric (0 when this runtime lacks it).
func readUint64Metric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// gcSentinel holds a pointer so that it is an allocation of its own (the
// tiny allocator packs small pointer-free objects together, which delays
// their cleanups).
type gcSentinel struct{ _ *byte }

// storeBudget is the dialog store's byte budget the run gets (engineConfig).
func storeBudget(cfg *Config) int64 {
	if mb := cfg.MaxStoreMB; mb > 0 {
		return int64(mb) << 20
	}
	return dialog.DefaultMaxBytes()
}
