// Package benchload holds what the workload benchmarks of core/sip,
// core/dialog and core/engine share: the process CPU clock they report
// cpu-ns/op with, and bench/gen's signaling-only workload generated once
// per test binary (bench/README.md).
package benchload

import (
	"sync"
	"syscall"
	"testing"

	"github.com/sipnab/sipnab/bench/gen"
)

// CPUNow is the process's user plus system CPU time in ns: on a shared
// machine wall time per op mostly measures the wait for a core, so the
// workload benchmarks also report cpu-ns/op (garbage collection included).
func CPUNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

var signaling struct {
	once sync.Once
	msgs []gen.SIPMessage
	err  error
}

// SignalingMessages returns the SIP messages of bench/gen's signaling-only
// workload (20,000 calls and 1,000 REGISTERs, no media, seed 1), in capture
// order, generated once per test binary.
func SignalingMessages(tb testing.TB) []gen.SIPMessage {
	signaling.once.Do(func() { signaling.msgs, signaling.err = gen.SIPMessages(gen.Signaling(1)) })
	if signaling.err != nil {
		tb.Fatal(signaling.err)
	}
	return signaling.msgs
}
