//go:build linux || darwin || freebsd || netbsd || openbsd

package capture

import (
	"os"
	"syscall"
	"unsafe"
)

// mapping is a read-only shared mapping of a whole file.
type mapping struct {
	b          []byte
	base, size uintptr // where it was mapped (kept after unmap)
}

func mapFile(f *os.File, size int) (mapping, error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return mapping{}, err
	}
	_ = madvise(b, syscall.MADV_SEQUENTIAL)
	return mapping{b: b, base: uintptr(unsafe.Pointer(unsafe.SliceData(b))), size: uintptr(len(b))}, nil
}

func (m mapping) bytes() []byte { return m.b }

// release gives back the pages of [from, to) (whole pages only) and
// returns the new released offset.
func (m mapping) release(from, to int) int {
	page := os.Getpagesize()
	to -= to % page
	if to <= from {
		return from
	}
	_ = madvise(m.b[from:to], syscall.MADV_DONTNEED)
	return to
}

func (m mapping) unmap() { _ = syscall.Munmap(m.b) }

func (m mapping) contains(addr uintptr) bool { return addr >= m.base && addr-m.base < m.size }
