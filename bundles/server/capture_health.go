package server

import (
	"context"
	"strings"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/selfstat"
	"github.com/sipnab/sipnab/sdk"
)

const healthSchemaVersion = 1

// Attachment codes. No code is 0, so a defaulted answer cannot pass for a
// real one (design notes).
const (
	attachNone = 1
	attachLive = 2 // a live interface or a HEP listener
	attachFile = 3
)

type healthIn struct {
	SampleSeconds int `json:"sample_seconds" min:"1" desc:"window in seconds, 1 to 30 (above 30 clamped); required: a rate needs its interval"`
}

// CaptureHealth is the answer of capture_health: is the capture path
// losing packets. It carries no string at any depth, so it cannot carry
// packet content; the handler opens no device and writes no file.
type CaptureHealth struct {
	SchemaVersion int          `json:"schema_version" desc:"version of this answer's shape"`
	Attachment    int          `json:"attachment" desc:"1 nothing attached, 2 live (interface or HEP), 3 file"`
	Window        HealthWindow `json:"window" desc:"the sample window"`
	Totals        HealthCounts `json:"totals" desc:"since the capture started"`
	InWindow      HealthCounts `json:"in_window" desc:"during the window"`
	// UndecodedFraction is undecodable_frames / packets; null before any
	// frame was read.
	UndecodedFraction         *float64       `json:"undecoded_fraction" desc:"undecodable / frames read; null with no frame"`
	UndecodedFractionInWindow *float64       `json:"undecoded_fraction_in_window" desc:"the same in the window; null with no frame in it"`
	UndecodableByReason       []ReasonFrames `json:"undecodable_by_reason" nonnull:"true" desc:"undecodable frames by reason code and number"`
	// UndecodableReasonsDropped counts frames whose reason did not fit the
	// decoders' fixed-slot tables (in undecodable_frames, under no reason).
	UndecodableReasonsDropped uint64          `json:"undecodable_reasons_dropped" desc:"undecodable frames whose reason found no table slot"`
	OtherTrafficFrames        uint64          `json:"other_traffic_frames" desc:"frames that cannot carry SIP/RTP (ARP, LLDP, ICMP echo): never undecodable"`
	DialogsTracked            int             `json:"dialogs_tracked" desc:"dialogs held"`
	StreamsTracked            int             `json:"streams_tracked" desc:"RTP streams held"`
	Clock                     correlate.Clock `json:"clock" desc:"kernel clock discipline (adjtimex)"`
	HEP                       *HealthHEP      `json:"hep,omitempty" desc:"HEP listeners (-L); absent without one"`
	sdk.SourceFlags
}

// HealthWindow is the sample window.
type HealthWindow struct {
	RequestedSeconds int   `json:"requested_seconds" desc:"sample_seconds as asked"`
	AppliedSeconds   int   `json:"applied_seconds" desc:"after the 1-30 clamp"`
	ObservedMs       int64 `json:"observed_ms" desc:"time between the two readings"`
}

// HealthCounts are the loss counters. A counter not readable here is
// absent.
type HealthCounts struct {
	Packets uint64 `json:"packets" desc:"frames read (HEP datagrams included)"`
	// KernelDropped: frames the kernel dropped at a full socket buffer
	// (live interfaces, SO_RXQ_OVFL of HEP listeners).
	KernelDropped *uint64 `json:"kernel_dropped,omitempty" desc:"dropped by the kernel at a full socket buffer (live, HEP)"`
	// InterfaceDropped: the captured interfaces' rx_dropped
	// (/sys/class/net); in the window only: the interface counts since it
	// came up, not since the capture.
	InterfaceDropped  *uint64 `json:"interface_dropped,omitempty" desc:"dropped by the interface (rx_dropped; in the window only)"`
	InvalidTimestamps uint64  `json:"invalid_timestamps" desc:"frames with an unusable timestamp"`
	UndecodableFrames uint64  `json:"undecodable_frames" desc:"frames that could not be decoded"`
}

// ReasonFrames is one undecodable reason.
type ReasonFrames struct {
	// Reason: 1 no decoder for the link type, 2 non-IP EtherType (or an
	// 802.3/LLC frame), 3 unsupported IP protocol, 4 truncated frame, 5
	// decoder rejected.
	Reason int `json:"reason" desc:"1 no link decoder, 2 non-IP EtherType, 3 unsupported IP protocol, 4 truncated, 5 rejected"`
	// Number is the link type, EtherType (0x10000+ LLC kinds), IP protocol,
	// or for 5: 0 malformed, 1 nesting budget spent.
	Number         uint32 `json:"number" desc:"link type, EtherType, IP protocol; for 5, 1 = nesting limit"`
	Frames         uint64 `json:"frames" desc:"frames so far"`
	FramesInWindow uint64 `json:"frames_in_window" desc:"frames in the window"`
}

// HealthHEP is the HEP listeners' admission.
type HealthHEP struct {
	Listeners     int     `json:"listeners" desc:"running listeners"`
	Received      uint64  `json:"received" desc:"datagrams received"`
	Admitted      uint64  `json:"admitted" desc:"admitted"`
	Refused       uint64  `json:"refused" desc:"refused, any reason (hep_senders names them)"`
	Lost          uint64  `json:"lost" desc:"meant to be delivered and lost (rate, shape, kernel)"`
	KernelDropped *uint64 `json:"kernel_dropped,omitempty" desc:"dropped by the kernel at a full receive buffer"`
	Senders       int     `json:"senders" desc:"senders tracked"`
	Silent        int     `json:"silent" desc:"senders silent past --hep-silence-warn"`
}

var _ = addTool(func(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "capture_health",
		Title: "Capture health",
		Description: "Is the capture path losing packets: kernel and interface drops, invalid timestamps, undecodable frames by numbered reason, " +
			"totals and over a sample window (required), clock sync, HEP admission. Numbers only; opens no device.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples:    []sdk.Example{{Title: "Losses over one second", Args: map[string]any{"sample_seconds": 1}}},
		Refusals:    []sdk.Refusal{{Code: sdk.CodeInvalidParams, When: "sample_seconds missing or below 1"}},
	}, func(ctx context.Context, c *sdk.Call, in healthIn) (CaptureHealth, error) {
		return captureHealth(ctx, d, in.SampleSeconds)
	})
})

// healthReading is one reading of every counter capture_health reports.
type healthReading struct {
	at        time.Time
	st        engine.Status
	reasons   map[[2]uint64]uint64
	kernel    *uint64
	ifaceDrop *uint64
}

func readHealth(d *deps) healthReading {
	r := healthReading{at: time.Now(), st: d.capture.Status(), reasons: map[[2]uint64]uint64{}}
	rs, _ := d.capture.UndecodableByReason()
	for _, x := range rs {
		r.reasons[[2]uint64{uint64(x.Code), uint64(x.Number)}] = x.Count
	}
	var k uint64
	have := false
	for _, lc := range d.live {
		if s := lc.Stats(); s.KernelStats {
			k += s.KernelDrops
			have = true
		}
	}
	for _, l := range r.st.HEP.Listeners {
		if l.KernelDropped != nil {
			k += *l.KernelDropped
			have = true
		}
	}
	if have {
		r.kernel = &k
	}
	r.ifaceDrop = interfaceDrops(d)
	return r
}

// interfaceDrops sums the captured interfaces' rx_dropped; absent without
// a live capture or where it cannot be read (core/selfstat).
func interfaceDrops(d *deps) *uint64 {
	devs := make([]string, 0, len(d.live))
	for _, lc := range d.live {
		devs = append(devs, lc.Handle().Device())
	}
	return selfstat.InterfaceDrops(devs)
}

func captureHealth(ctx context.Context, d *deps, requested int) (CaptureHealth, error) {
	if requested < 1 {
		return CaptureHealth{}, sdk.InvalidParams("sample_seconds must be 1 to 30 (got %d): a rate needs its interval", requested)
	}
	applied := min(requested, maxSampleSeconds)
	a := readHealth(d)
	if err := wait(ctx, time.Duration(applied)*time.Second); err != nil {
		return CaptureHealth{}, sdk.Unavailable("capture_health: the call ended before its %d s window", applied)
	}
	b := readHealth(d)
	st := b.st
	out := CaptureHealth{
		SchemaVersion: healthSchemaVersion,
		Attachment:    attachment(st),
		Window:        HealthWindow{RequestedSeconds: requested, AppliedSeconds: applied, ObservedMs: b.at.Sub(a.at).Milliseconds()},
		Totals: HealthCounts{Packets: st.FramesRead, KernelDropped: b.kernel,
			InvalidTimestamps: st.InvalidTimestamps, UndecodableFrames: st.UndecodableFrames},
		InWindow: HealthCounts{Packets: st.FramesRead - a.st.FramesRead,
			InvalidTimestamps: st.InvalidTimestamps - a.st.InvalidTimestamps,
			UndecodableFrames: st.UndecodableFrames - a.st.UndecodableFrames},
		UndecodableByReason: []ReasonFrames{},
		OtherTrafficFrames:  st.OtherTrafficFrames,
		DialogsTracked:      st.Dialogs.Dialogs,
		Clock:               correlate.ReadClock(),
		SourceFlags:         answer.SourceState(st).Flags(),
	}
	if a.kernel != nil && b.kernel != nil {
		n := *b.kernel - min(*a.kernel, *b.kernel)
		out.InWindow.KernelDropped = &n
	}
	if a.ifaceDrop != nil && b.ifaceDrop != nil {
		n := *b.ifaceDrop - min(*a.ifaceDrop, *b.ifaceDrop)
		out.InWindow.InterfaceDropped = &n
	}
	out.UndecodedFraction = fraction(out.Totals.UndecodableFrames, out.Totals.Packets)
	out.UndecodedFractionInWindow = fraction(out.InWindow.UndecodableFrames, out.InWindow.Packets)
	rs, dropped := d.capture.UndecodableByReason()
	for _, r := range rs {
		k := [2]uint64{uint64(r.Code), uint64(r.Number)}
		before := a.reasons[k]
		out.UndecodableByReason = append(out.UndecodableByReason, ReasonFrames{Reason: r.Code, Number: r.Number,
			Frames: r.Count, FramesInWindow: r.Count - min(before, r.Count)})
	}
	out.UndecodableReasonsDropped = dropped
	if st.Media != nil {
		out.StreamsTracked = st.Media.Streams
	}
	if ls := d.capture.HEPListeners(); len(ls) > 0 {
		h := &HealthHEP{Listeners: len(ls)}
		var k uint64
		haveK := false
		for _, l := range ls {
			s := l.Stats()
			h.Received += s.Received
			h.Admitted += s.Admitted
			h.Refused += s.RefusedTotal()
			h.Lost += s.Lost()
			h.Senders += s.Senders
			h.Silent += len(l.Silent(l.SilenceWarn()))
			if s.KernelDropped != nil {
				k += *s.KernelDropped
				haveK = true
			}
		}
		if haveK {
			h.KernelDropped = &k
		}
		out.HEP = h
	}
	return out, nil
}

// attachment codes the source: live (an interface or a HEP listener)
// before file, none when nothing is attached.
func attachment(st engine.Status) int {
	switch {
	case strings.Contains(st.Source, "live") || strings.Contains(st.Source, "hep"):
		return attachLive
	case strings.Contains(st.Source, "file"):
		return attachFile
	}
	return attachNone
}

func fraction(n, of uint64) *float64 {
	if of == 0 {
		return nil
	}
	f := float64(n) / float64(of)
	return &f
}
