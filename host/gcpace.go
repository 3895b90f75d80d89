package host

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/sipnab/sipnab/core/dialog"
)

// pauseGCForLoad turns the garbage collector off while a batch run loads
// its files, up to a memory limit, and returns the function that ends the
// pause (collect calls it when the load ends; calling it again does
// nothing).
//
// What a file load allocates is nearly all kept until the output is
// written: the retained messages' bytes, the dialogs, the media endpoints
// (bench/README.md, memory). A collection during the load marks everything
// kept so far and frees little, and the default pacing (GOGC=100) runs one
// each time the heap doubles: five on the signaling workload, the last of
// them over half the final heap. Paused, the load runs none; when it ends,
// the previous settings come back and one collection frees the load's
// garbage before the output is written, which reuses it.
//
// The limit is the store's byte budget (--max-store-mb, or the machine's
// default: dialog.DefaultMaxBytes), the heap a full store holds anyway: a
// load that allocates more than that gets its first collection there, and
// that collection ends the pause (past the limit a live heap would keep
// the collector running back to back). GOGC or GOMEMLIMIT in the
// environment is the user's choice: left alone. Live captures, HEP
// listeners and the MCP server keep the defaults (their reads do not end).
// Loads in one process (tests) share one pause: the last to end it
// restores the settings the first found.
func pauseGCForLoad(budget int64) (resume func()) {
	if budget <= 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	p := &gcPause
	p.mu.Lock()
	if p.loads == 0 {
		p.percent = debug.SetGCPercent(-1)
		p.limit = debug.SetMemoryLimit(budget)
		p.ended = false
		// The first collection from here on finds the sentinel unreachable
		// and runs its cleanup: paused, only the limit starts one.
		runtime.AddCleanup(new(gcSentinel), func(struct{}) { p.limitReached() }, struct{}{})
	}
	p.loads++
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(p.loadEnded) }
}

// gcPause is the process's pause (pauseGCForLoad).
var gcPause gcPauseState

type gcPauseState struct {
	mu      sync.Mutex
	loads   int   // loads running paused
	percent int   // the settings the first found
	limit   int64 //
	ended   bool  // settings restored while loads still run (the limit was reached)
}

func (p *gcPauseState) restore() {
	debug.SetMemoryLimit(p.limit)
	debug.SetGCPercent(p.percent)
	p.ended = true
}

// loadEnded ends one load's pause; the last one restores the settings and
// collects the loads' garbage.
func (p *gcPauseState) loadEnded() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loads--
	if p.loads == 0 && !p.ended {
		p.restore()
		runtime.GC()
	}
}

// limitReached ends the pause after its first collection.
func (p *gcPauseState) limitReached() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loads > 0 && !p.ended {
		p.restore()
	}
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
