//go:build !linux

package tlsprobe

// Privileged is false: uprobes are Linux's.
func Privileged() (ok bool, why string) { return false, "TLS uprobes need Linux" }
