package host

import (
	"context"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sipnab/sipnab/bench/gen"
)

// gcSettings reads GOGC and the memory limit without changing them.
func gcSettings() (percent int64, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// withDefaultGC runs the test with GOGC=100 and no memory limit, whatever
// the environment, and puts the process's settings back after.
func withDefaultGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	pct := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	})
}

// collectAndWait runs one collection and waits for the pause's cleanup to
// have looked at it (cleanups run on their own goroutine).
func collectAndWait(t *testing.T) {
	t.Helper()
	runtime.GC()
	done := gcCycles()
	for range 5000 {
		gcPause.mu.Lock()
		seen := gcPause.seen
		gcPause.mu.Unlock()
		if seen >= done {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no cleanup ran after the collection")
}

func wantSettings(t *testing.T, when string, percent, limit int64) {
	t.Helper()
	if p, l := gcSettings(); p != percent || l != limit {
		t.Fatalf("%s: GOGC %d, limit %d; want %d, %d", when, p, l, percent, limit)
	}
}

const neverReached = 1 << 40

// TestGCPauseStartsOnceTheLiveHeapIsLarge: a load is paused (collector off,
// the budget as the memory limit) once a collection finds pauseFrom live,
// not before; the last load to end puts GOGC=100 and no limit back, and a
// second call of the same resume changes nothing.
func TestGCPauseStartsOnceTheLiveHeapIsLarge(t *testing.T) {
	withDefaultGC(t)
	tests := []struct {
		name  string
		loads int
	}{
		{"one load", 1},
		{"three loads at once", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kept := make([]byte, 2*pauseFrom)
			runtime.GC()
			var resumes []func()
			for range tc.loads {
				resume := pauseGCForLoad(neverReached, nil)
				t.Cleanup(resume)
				resumes = append(resumes, resume)
			}
			wantSettings(t, "before a collection", 100, math.MaxInt64)
			collectAndWait(t)
			wantSettings(t, "after a collection with twice pauseFrom live", -1, neverReached)
			for _, resume := range resumes {
				wantSettings(t, "with loads running", -1, neverReached)
				resume()
				resume()
			}
			wantSettings(t, "after the loads", 100, math.MaxInt64)
			runtime.KeepAlive(kept)
		})
	}
}

// TestGCPauseLeavesASmallLoadAlone: under pauseFrom live, collections run
// as they do without a pause.
func TestGCPauseLeavesASmallLoadAlone(t *testing.T) {
	withDefaultGC(t)
	resume := pauseGCForLoad(neverReached, nil)
	t.Cleanup(resume)
	collectAndWait(t)
	wantSettings(t, "a small load after a collection", 100, math.MaxInt64)
	resume()
	wantSettings(t, "after the load", 100, math.MaxInt64)
}

// TestGCPauseEndsAtItsFirstCollection: paused, a collection (which only the
// memory limit starts) puts the previous settings back: past the limit a
// live heap would keep the collector running back to back.
func TestGCPauseEndsAtItsFirstCollection(t *testing.T) {
	withDefaultGC(t)
	kept := make([]byte, 2*pauseFrom)
	runtime.GC()
	resume := pauseGCForLoad(neverReached, nil)
	t.Cleanup(resume)
	collectAndWait(t)
	wantSettings(t, "paused", -1, neverReached)
	collectAndWait(t) // as the limit would start it
	wantSettings(t, "after the paused load's collection", 100, math.MaxInt64)
	runtime.GC() // the pause is over: nothing watches it
	wantSettings(t, "after one more collection", 100, math.MaxInt64)
	resume()
	wantSettings(t, "after the load", 100, math.MaxInt64)
	runtime.KeepAlive(kept)
}

// TestGCPauseLeavesTheUsersSettings: GOGC or GOMEMLIMIT in the environment,
// or no budget, and nothing is armed: the settings stay as they are.
func TestGCPauseLeavesTheUsersSettings(t *testing.T) {
	tests := []struct {
		name, env, value string
		budget           int64
	}{
		{"GOGC set", "GOGC", "100", neverReached},
		{"GOMEMLIMIT set", "GOMEMLIMIT", "1GiB", neverReached},
		{"no budget", "", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withDefaultGC(t)
			if tc.env != "" {
				t.Setenv(tc.env, tc.value)
			}
			kept := make([]byte, 2*pauseFrom)
			resume := pauseGCForLoad(tc.budget, nil)
			runtime.GC()
			runtime.GC()
			wantSettings(t, "with the load running", 100, math.MaxInt64)
			gcPause.mu.Lock()
			loads := gcPause.loads
			gcPause.mu.Unlock()
			if loads != 0 {
				t.Errorf("%d loads counted, want 0 (not armed)", loads)
			}
			resume()
			runtime.KeepAlive(kept)
		})
	}
}

// TestLoadPausesGCOnlyForFilesOnOneCore: the pause is for a load that ends
// by itself and keeps what it allocates.
func TestLoadPausesGCOnlyForFilesOnOneCore(t *testing.T) {
	tests := []struct {
		name  string
		src   batchSources
		cores int
		want  bool
	}{
		{"a file on one core", batchSources{files: []string{"a.pcap"}}, 1, true},
		{"files, cores unset", batchSources{files: []string{"a.pcap", "dir"}}, 0, true},
		{"two cores", batchSources{files: []string{"a.pcap"}}, 2, false},
		{"standard input", batchSources{files: []string{"-"}}, 1, false},
		{"a file and a live interface", batchSources{files: []string{"a.pcap"}, interfaces: []string{"eth0"}}, 1, false},
		{"a HEP listener", batchSources{listeners: []string{":9060"}}, 1, false},
		{"nothing", batchSources{}, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := loadPausesGC(tc.src, tc.cores); got != tc.want {
				t.Errorf("loadPausesGC(%+v, %d) = %v, want %v", tc.src, tc.cores, got, tc.want)
			}
		})
	}
}

// TestGCPauseGuardEndsThePauseWhenGarbageOutgrowsTheStore: paused, a load
// whose heap fills with what its store does not hold (evicted dialogs,
// unretained traffic) gets its collector back from the guard, long before
// the memory limit; a load whose store holds its heap stays paused.
func TestGCPauseGuardEndsThePauseWhenGarbageOutgrowsTheStore(t *testing.T) {
	tests := []struct {
		name      string
		held      int64 // what the store says it holds
		garbage   int   // MiB allocated and dropped while paused
		wantEnded bool
	}{
		{"garbage past the slack", 2 * pauseFrom, 96, true},
		{"garbage within a large store's quarter", 1 << 30, 96, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withDefaultGC(t)
			kept := make([]byte, 2*pauseFrom)
			runtime.GC()
			resume := pauseGCForLoad(neverReached, func() int64 { return tc.held })
			t.Cleanup(resume)
			collectAndWait(t)
			wantSettings(t, "paused", -1, neverReached)
			var sink []byte
			for range tc.garbage {
				sink = make([]byte, 1<<20)
				sink[0] = 1
			}
			ended := false
			for range 300 { // the guard looks every guardEvery (10 ms)
				gcPause.mu.Lock()
				ended = gcPause.guarded
				gcPause.mu.Unlock()
				if ended {
					break
				}
				time.Sleep(guardEvery)
			}
			if ended != tc.wantEnded {
				t.Fatalf("guard ended the pause: %v, want %v (heap objects %d MiB, held %d MiB)",
					ended, tc.wantEnded, heapObjects()>>20, tc.held>>20)
			}
			if tc.wantEnded {
				wantSettings(t, "after the guard", 100, math.MaxInt64)
			} else {
				wantSettings(t, "still paused", -1, neverReached)
			}
			resume()
			wantSettings(t, "after the load", 100, math.MaxInt64)
			runtime.KeepAlive(kept)
			runtime.KeepAlive(sink)
		})
	}
}

// TestGCPauseLastsUntilTheBatchRunEndsIt: the load collect runs keeps
// the pause's load open when it returns (the output is written under the
// pause: a collection there would mark the whole store just before the
// process exits), so a collection after the load still pauses the
// collector, and only the engine handle's endGCPause, which the batch run
// calls once its output is written, puts the settings back.
func TestGCPauseLastsUntilTheBatchRunEndsIt(t *testing.T) {
	withDefaultGC(t)
	gc := gen.Signaling(1)
	gc.Calls, gc.Registers = 300, 10
	path := filepath.Join(t.TempDir(), "signaling.pcap")
	if _, err := gen.WriteFiles(gc, path, ""); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig([]string{"-N", "-I", path, "--json-run", "--cores", "1", "--max-store-mb", "512"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	kept := make([]byte, 2*pauseFrom) // live: the next collection pauses a running load
	runtime.GC()
	// No collection during the load: the one below is the first the
	// pause sees, whenever the load's own would have come.
	debug.SetGCPercent(1 << 20)
	e, _, err := collect(context.Background(), cfg, hclog.NewNullLogger(), nil)
	debug.SetGCPercent(100)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.capture.Dialogs().Stats().Dialogs; got != 310 {
		t.Fatalf("loaded %d dialogs, want 310", got)
	}
	collectAndWait(t)
	wantSettings(t, "after the load, before endGCPause", -1, 512<<20)
	e.endGCPause()
	wantSettings(t, "after endGCPause", 100, math.MaxInt64)
	e.endGCPause()
	wantSettings(t, "after a second endGCPause", 100, math.MaxInt64)
	runtime.KeepAlive(kept)
}
