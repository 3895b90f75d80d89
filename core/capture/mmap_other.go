//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package capture

import (
	"errors"
	"os"
)

// mapping is unavailable here: files are read with read calls.
type mapping struct{}

func mapFile(*os.File, int) (mapping, error) {
	return mapping{}, errors.New("memory mapping not supported")
}

func (mapping) bytes() []byte           { return nil }
func (mapping) release(from, _ int) int { return from }
func (mapping) unmap()                  {}
func (mapping) contains(uintptr) bool   { return false }
