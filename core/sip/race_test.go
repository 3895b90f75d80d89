//go:build race

package sip

// raceEnabled: the race detector slows parsing about tenfold, so the
// workload-wide tests sample the workload.
const raceEnabled = true
