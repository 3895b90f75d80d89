package capture

import "syscall"

func madvise(b []byte, advice int) error { return syscall.Madvise(b, advice) }
