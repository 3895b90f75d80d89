package server

import (
	"context"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/hepsend"
	"github.com/sipnab/sipnab/core/selfstat"
	"github.com/sipnab/sipnab/sdk"
)

const runtimeSchemaVersion = 1

// maxSampleSeconds caps a sampling window: an MCP call blocks its caller
// and holds a request slot, and clients commonly cancel at 60 s (design
// notes, "Design notes for runtime_stats and capture_health").
const maxSampleSeconds = 30

// significantMemoryPct is the share of the host's memory past which
// sipnab's own footprint is itself a finding (impact.significant).
const significantMemoryPct = 10.0

type runtimeIn struct {
	SampleSeconds *int `json:"sample_seconds,omitempty" min:"1" desc:"measure rates over this many seconds (at most 30, capped); absent: no rates"`
}

// RuntimeStats is the answer of runtime_stats: what sipnab costs its host.
// A value that cannot be read here is absent, never 0.
type RuntimeStats struct {
	SchemaVersion int             `json:"schema_version" desc:"version of this answer's shape"`
	Process       ProcessStats    `json:"process" desc:"this process (/proc/self, getrusage)"`
	Host          HostStats       `json:"host" desc:"the host or the cgroup limiting this process"`
	Impact        *Impact         `json:"impact,omitempty" desc:"sipnab's share of the host's memory"`
	Interfaces    []InterfaceStat `json:"interfaces" nonnull:"true" desc:"running live captures (-i)"`
	Dialogs       Occupancy       `json:"dialogs" desc:"dialog store: held, cap (--limit)"`
	Streams       *Occupancy      `json:"streams,omitempty" desc:"RTP stream store: held, cap (--max-streams)"`
	// CapturePacketsTotal sums the live captures' frames; absent without one.
	CapturePacketsTotal *uint64 `json:"capture_packets_total,omitempty" desc:"frames the live captures delivered (absent without -i)"`
	// The live path routes each frame as it is read, with no queue between
	// the socket and the engine: capture_queue_depth_packets and
	// capture_backpressure_blocks_total are not measured, so absent.
	UptimeSeconds *float64 `json:"uptime_seconds,omitempty" desc:"seconds since the process started"`
	// HEPExport is -H's account so far: sent, queued, dropped by reason.
	HEPExport *hepsend.Stats `json:"hep_export,omitempty" desc:"the -H HEP sender: sent, queue, drops by reason (absent without -H)"`
	Rates     *Rates         `json:"rates,omitempty" desc:"rates over the sample window (sample_seconds)"`
}

// ProcessStats are the process's own costs.
type ProcessStats struct {
	RSSBytes     *uint64  `json:"rss_bytes,omitempty" desc:"resident memory (VmRSS)"`
	VirtualBytes *uint64  `json:"virtual_bytes,omitempty" desc:"virtual memory (VmSize)"`
	Threads      *uint64  `json:"threads,omitempty" desc:"OS threads"`
	OpenFDs      *uint64  `json:"open_fds,omitempty" desc:"open file descriptors"`
	CPUSeconds   *float64 `json:"cpu_seconds,omitempty" desc:"user + system CPU time"`
}

// HostStats are the host's (or the limiting cgroup's) resources.
type HostStats struct {
	MemoryTotalBytes     *uint64  `json:"memory_total_bytes,omitempty" desc:"MemTotal, or cgroup memory.max when lower"`
	MemoryAvailableBytes *uint64  `json:"memory_available_bytes,omitempty" desc:"MemAvailable, or memory.max - memory.current"`
	CPUs                 *float64 `json:"cpus,omitempty" desc:"CPUs usable: affinity, or cgroup cpu.max quota/period when lower"`
	Basis                string   `json:"basis" enum:"host|cgroup" desc:"cgroup: a cgroup v2 limit is the bound"`
}

// Impact says whether sipnab's memory is a significant share.
type Impact struct {
	MemoryPct   float64 `json:"memory_pct" desc:"rss_bytes / memory_total_bytes, percent"`
	Significant bool    `json:"significant" desc:"memory_pct >= 10"`
	Note        string  `json:"note" desc:"what the share means"`
}

// InterfaceStat is one live capture.
type InterfaceStat struct {
	Name        string  `json:"name" desc:"interface"`
	Packets     uint64  `json:"packets" desc:"frames delivered"`
	Bytes       uint64  `json:"bytes" desc:"their bytes"`
	KernelDrops *uint64 `json:"kernel_drops,omitempty" desc:"frames the kernel dropped at a full socket buffer"`
}

// Occupancy is a store's fill.
type Occupancy struct {
	Used     int     `json:"used" desc:"held now"`
	Capacity int     `json:"capacity" desc:"configured cap"`
	Pct      float64 `json:"pct" desc:"used / capacity, percent"`
}

// Rates are counter deltas over the sample window.
type Rates struct {
	WindowSeconds    float64 `json:"window_seconds" desc:"measured window"`
	PacketsPerSecond float64 `json:"packets_per_second" desc:"transport packets routed per second"`
	// CallsPerSecond counts new Call-IDs (dialogs created) per second.
	CallsPerSecond float64 `json:"calls_per_second" desc:"new Call-IDs (dialogs) per second"`
	// CallsPerSecondByMethod splits them by the method that opened them;
	// absent when dialogs left the store during the window (the split
	// would be wrong).
	CallsPerSecondByMethod map[string]float64 `json:"calls_per_second_by_method,omitempty" desc:"new dialogs per second by opening method"`
}

var _ = addTool(func(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "runtime_stats",
		Title: "Runtime stats",
		Description: "What sipnab costs its host: memory, threads, descriptors, CPU; host or cgroup limits; store fill; live interfaces; " +
			"with sample_seconds, packet and call rates. A value not readable here is absent, not 0.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Cost and store fill now"},
		},
		Refusals: []sdk.Refusal{{Code: sdk.CodeInvalidParams, When: "sample_seconds below 1"}},
	}, func(ctx context.Context, c *sdk.Call, in runtimeIn) (RuntimeStats, error) {
		var window time.Duration
		if in.SampleSeconds != nil {
			window = time.Duration(min(*in.SampleSeconds, maxSampleSeconds)) * time.Second
		}
		return runtimeStats(ctx, d, window)
	})
})

// counters are the values a rate is taken from.
type counters struct {
	at       time.Time
	packets  uint64
	created  uint64 // dialogs held + evicted: every Call-ID the store took
	evicted  uint64
	byMethod map[string]int
}

func readCounters(c *engine.Capture) counters {
	st := c.Status()
	t := c.Dialogs().Tally(dialog.TallyMethod)
	return counters{at: time.Now(), packets: st.Packets, created: uint64(st.Dialogs.Dialogs) + st.Dialogs.Evicted,
		evicted: st.Dialogs.Evicted, byMethod: t.Text}
}

func runtimeStats(ctx context.Context, d *deps, window time.Duration) (RuntimeStats, error) {
	out := RuntimeStats{SchemaVersion: runtimeSchemaVersion, Interfaces: []InterfaceStat{}}
	if window > 0 {
		start := readCounters(d.capture)
		if err := wait(ctx, window); err != nil {
			return RuntimeStats{}, sdk.Unavailable("runtime_stats: the call ended before its %v window", window)
		}
		end := readCounters(d.capture)
		secs := end.at.Sub(start.at).Seconds()
		r := &Rates{WindowSeconds: secs,
			PacketsPerSecond: float64(end.packets-start.packets) / secs,
			CallsPerSecond:   float64(end.created-start.created) / secs}
		if end.evicted == start.evicted {
			r.CallsPerSecondByMethod = map[string]float64{}
			for m, n := range end.byMethod {
				if dn := n - start.byMethod[m]; dn > 0 {
					r.CallsPerSecondByMethod[m] = float64(dn) / secs
				}
			}
		}
		out.Rates = r
	}
	p := selfstat.ReadProcess()
	out.Process = ProcessStats{RSSBytes: p.RSS, VirtualBytes: p.Virtual, Threads: p.Threads, OpenFDs: p.OpenFDs, CPUSeconds: p.CPUSeconds}
	h := selfstat.ReadHost()
	out.Host = HostStats{MemoryTotalBytes: h.MemoryTotal, MemoryAvailableBytes: h.MemoryAvailable, CPUs: h.CPUs, Basis: h.Basis}
	if p.RSS != nil && h.MemoryTotal != nil && *h.MemoryTotal > 0 {
		pct := 100 * float64(*p.RSS) / float64(*h.MemoryTotal)
		im := &Impact{MemoryPct: pct, Significant: pct >= significantMemoryPct}
		if im.Significant {
			im.Note = "sipnab holds at least 10% of the " + h.Basis + "'s memory: it may itself press the services it watches; lower --limit, --max-store-mb or --max-streams"
		} else {
			im.Note = "sipnab holds under 10% of the " + h.Basis + "'s memory"
		}
		out.Impact = im
	}
	var total uint64
	for _, lc := range d.live {
		s := lc.Stats()
		is := InterfaceStat{Name: lc.Handle().Device(), Packets: s.Received, Bytes: s.Bytes}
		if s.KernelStats {
			k := s.KernelDrops
			is.KernelDrops = &k
		}
		out.Interfaces = append(out.Interfaces, is)
		total += s.Received
	}
	if len(d.live) > 0 {
		out.CapturePacketsTotal = &total
	}
	ds := d.capture.Dialogs().Stats()
	out.Dialogs = occupancy(ds.Dialogs, d.capture.Dialogs().Config().MaxDialogs)
	if m := d.capture.Media(); m != nil {
		o := occupancy(m.Stats().Streams, m.Config().MaxStreams)
		out.Streams = &o
	}
	out.UptimeSeconds = selfstat.UptimeSeconds()
	if d.hepSend != nil {
		hs := d.hepSend.Stats()
		out.HEPExport = &hs
	}
	return out, nil
}

func occupancy(used, capacity int) Occupancy {
	o := Occupancy{Used: used, Capacity: capacity}
	if capacity > 0 {
		o.Pct = 100 * float64(used) / float64(capacity)
	}
	return o
}

// wait sleeps for a sample window between the two readings, or until the
// call ends. Tests replace it to act inside the window (and to see the
// window asked) without sleeping.
var wait = func(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
