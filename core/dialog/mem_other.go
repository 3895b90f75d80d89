//go:build !linux

package dialog

// totalMemory is unknown outside Linux: DefaultMaxBytes takes its fallback.
func totalMemory() uint64 { return 0 }
