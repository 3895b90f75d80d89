//go:build !(linux && amd64)

package uprobe

import (
	"errors"

	"github.com/sipnab/sipnab/core/tlsprobe"
)

// Supported reports whether this build can attach probes (linux/amd64).
const Supported = false

// Probe is never attached on this platform.
type Probe struct{}

// Attach refuses: uprobes need Linux on amd64 in this build.
func Attach([]tlsprobe.Target, func(tlsprobe.Record)) (*Probe, error) {
	return nil, errors.New("TLS uprobes need Linux on amd64")
}

// Lost is 0.
func (*Probe) Lost() uint64 { return 0 }

// Unreadable is 0.
func (*Probe) Unreadable() uint64 { return 0 }

// Err is nil.
func (*Probe) Err() error { return nil }

// Done is closed.
func (*Probe) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// Close does nothing.
func (*Probe) Close() error { return nil }
