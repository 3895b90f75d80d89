package engine

import (
	"testing"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

func framesOf(b *testing.B, name string) []*packet.Frame {
	r, err := capture.Open(testcap.Public(name))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var out []*packet.Frame
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		cp := *f
		cp.Data = append([]byte(nil), f.Data...)
		out = append(out, &cp)
	}
	return out
}

// BenchmarkRouteRTP routes the frames of an RTP-only capture again and
// again through one capture (the streams exist after the first pass): the
// per-frame cost of the hot path, allocations included.
func BenchmarkRouteRTP(b *testing.B) {
	frames := framesOf(b, "voicecmd_combined.pcap")
	c := New(Config{}, nil)
	for _, f := range frames {
		c.handleFrame(kindFile, f)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.handleFrame(kindFile, frames[i%len(frames)])
	}
}

// BenchmarkRouteSIP routes a signaling-heavy capture into a fresh capture
// per pass.
func BenchmarkRouteSIP(b *testing.B) {
	frames := framesOf(b, "sipp-branch-scenario.pcapng")
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for n < b.N {
		c := New(Config{}, nil)
		for _, f := range frames {
			c.handleFrame(kindFile, f)
			n++
			if n == b.N {
				break
			}
		}
	}
}
