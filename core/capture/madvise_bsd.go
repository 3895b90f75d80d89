//go:build darwin || freebsd || netbsd || openbsd

package capture

// madvise is a no-op where the standard library does not expose it: the
// mapping still works, its pages are reclaimed by the kernel alone.
func madvise([]byte, int) error { return nil }
