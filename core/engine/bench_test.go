package engine

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/benchload"
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

// signaling holds the frames of bench/gen's signaling-only workload
// (20,000 calls and 1,000 REGISTERs, SIP only), read once per run.
var signaling struct {
	once   sync.Once
	frames []*packet.Frame
	err    error
}

func signalingFrames(b *testing.B) []*packet.Frame {
	signaling.once.Do(func() {
		dir, err := os.MkdirTemp("", "sipnab-bench")
		if err != nil {
			signaling.err = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "signaling.pcap")
		if _, err := gen.WriteFiles(gen.Signaling(1), path, ""); err != nil {
			signaling.err = err
			return
		}
		r, err := capture.Open(path)
		if err != nil {
			signaling.err = err
			return
		}
		defer r.Close()
		for {
			f, err := r.Next()
			if err != nil {
				break
			}
			cp := *f
			cp.Data = append([]byte(nil), f.Data...)
			signaling.frames = append(signaling.frames, &cp)
		}
	})
	if signaling.err != nil {
		b.Fatal(signaling.err)
	}
	return signaling.frames
}

// BenchmarkRouteSignaling routes the frames of the signaling-only workload
// (one SIP message each) in capture order, one frame per op: decode, SIP
// parse, dialog store, SDP and media store, frame evidence pointer. A new
// capture starts each pass over the workload.
func BenchmarkRouteSignaling(b *testing.B) {
	frames := signalingFrames(b)
	c := New(Config{}, nil)
	runtime.GC() // the workload generator's garbage is not this benchmark's
	b.ReportAllocs()
	cpu0 := benchload.CPUNow()
	defer func() { b.ReportMetric(float64(benchload.CPUNow()-cpu0)/float64(b.N), "cpu-ns/op") }()
	i := 0
	for b.Loop() {
		c.handleFrame(kindFile, frames[i])
		if i++; i == len(frames) {
			i = 0
			b.StopTimer()
			c = New(Config{}, nil)
			b.StartTimer()
		}
	}
}
