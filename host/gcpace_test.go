package host

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
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

// TestGCPauseForLoadRestoresTheSettings: paused, the collector is off with
// the budget as the memory limit; the last load to end puts GOGC=100 and no
// limit back, and a second call of the same resume changes nothing.
func TestGCPauseForLoadRestoresTheSettings(t *testing.T) {
	withDefaultGC(t)
	const budget = 1 << 40 // never reached
	tests := []struct {
		name  string
		loads int
	}{
		{"one load", 1},
		{"three loads at once", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var resumes []func()
			for range tc.loads {
				resumes = append(resumes, pauseGCForLoad(budget))
			}
			for i, resume := range resumes {
				if pct, limit := gcSettings(); pct != -1 || limit != budget {
					t.Fatalf("with %d of %d loads running: GOGC %d, limit %d; want off (-1), %d", tc.loads-i, tc.loads, pct, limit, budget)
				}
				resume()
				resume()
			}
			if pct, limit := gcSettings(); pct != 100 || limit != math.MaxInt64 {
				t.Fatalf("after the loads: GOGC %d, limit %d; want 100, %d", pct, limit, int64(math.MaxInt64))
			}
		})
	}
}

// TestGCPauseEndsAtItsFirstCollection: a load that reaches the limit gets
// the previous settings back with its first collection (past the limit a
// live heap would keep the collector running back to back).
func TestGCPauseEndsAtItsFirstCollection(t *testing.T) {
	withDefaultGC(t)
	resume := pauseGCForLoad(1 << 40)
	defer resume()
	runtime.GC() // as the limit would start it
	// The cleanup runs on its own goroutine after the collection.
	for range 1000 {
		if pct, limit := gcSettings(); pct == 100 && limit == math.MaxInt64 {
			resume() // nothing left to restore
			if pct, limit := gcSettings(); pct != 100 || limit != math.MaxInt64 {
				t.Fatalf("after the load: GOGC %d, limit %d; want 100, %d", pct, limit, int64(math.MaxInt64))
			}
			return
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	pct, limit := gcSettings()
	t.Fatalf("after a collection: GOGC %d, limit %d; want 100, %d", pct, limit, int64(math.MaxInt64))
}

// TestGCPauseLeavesTheUsersSettings: GOGC or GOMEMLIMIT in the environment,
// or no budget, and the settings stay as they are.
func TestGCPauseLeavesTheUsersSettings(t *testing.T) {
	tests := []struct {
		name, env, value string
		budget           int64
	}{
		{"GOGC set", "GOGC", "100", 1 << 40},
		{"GOMEMLIMIT set", "GOMEMLIMIT", "1GiB", 1 << 40},
		{"no budget", "", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withDefaultGC(t)
			if tc.env != "" {
				t.Setenv(tc.env, tc.value)
			}
			resume := pauseGCForLoad(tc.budget)
			if pct, limit := gcSettings(); pct != 100 || limit != math.MaxInt64 {
				t.Fatalf("paused: GOGC %d, limit %d; want 100, %d (untouched)", pct, limit, int64(math.MaxInt64))
			}
			resume()
		})
	}
}
