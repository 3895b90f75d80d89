//go:build race

package sip

// raceEnabled: the race detector slows generating and parsing about
// tenfold, so the workload-wide tests use a scaled-down workload
// (signalingWorkload).
const raceEnabled = true
