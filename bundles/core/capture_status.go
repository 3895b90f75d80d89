package core

import (
	"context"
	"strings"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/ami"
	"github.com/sipnab/sipnab/core/detect"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/live"
	"github.com/sipnab/sipnab/core/stun"
	"github.com/sipnab/sipnab/sdk"
)

// captureStatusSchemaVersion is capture_status's response schema version.
const captureStatusSchemaVersion = 2

type captureStatusIn struct{}

// CaptureStatus is capture_status's answer. Counters the engine does not
// measure are absent, never zero.
type CaptureStatus struct {
	// Source says what feeds the capture: file, live, hep, a "+"-joined mix, or unknown.
	Source string `json:"source" desc:"what feeds the capture: file, live, hep, a + joined mix, or unknown"`
	// Name names the source: file names, interface, listener.
	Name string `json:"name,omitempty" desc:"file names, interface or listener"`
	// UptimeSec is the time since the server started, seconds.
	UptimeSec float64 `json:"uptime_sec" desc:"seconds since the server started"`
	// DialogCount counts the dialogs held.
	DialogCount int `json:"dialog_count" desc:"dialogs held"`
	// StreamCount counts the RTP streams held.
	StreamCount *int `json:"stream_count,omitempty" desc:"RTP streams held"`
	// OrphanedStreamCount counts streams tied to no dialog.
	OrphanedStreamCount *int `json:"orphaned_stream_count,omitempty" desc:"streams tied to no dialog"`
	// ActiveDialogCount counts dialogs not in a final state (Completed, Cancelled, Failed, Redirected, Expired, Terminated).
	ActiveDialogCount int `json:"active_dialog_count" desc:"dialogs not in a final state"`
	// ActiveCallCount counts dialogs in InCall.
	ActiveCallCount int `json:"active_call_count" desc:"dialogs in InCall"`
	// CaptureQuality says how much of the input could be read.
	CaptureQuality CaptureQuality `json:"capture_quality" desc:"how much of the input could be read"`
	// DialogStore is the dialog store's bytes, budget and evictions.
	DialogStore DialogStore `json:"dialog_store" desc:"the dialog store's bytes, budget and evictions"`
	sdk.SourceFlags
	// WritingTo names the output file captured packets are written to; absent when none.
	WritingTo string `json:"writing_to,omitempty" desc:"output file packets are written to"`
	// Unsaved: a live source with no output target (stopping loses the packets).
	Unsaved bool `json:"unsaved" desc:"a live source with no output target: stopping loses packets"`
	// CaptureIdentity names the capture.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture identity"`
	// Load describes the file load; absent without one.
	Load *LoadStatus `json:"load,omitempty" desc:"the background file load"`
	// AMICleartext lists Asterisk Manager Interface sightings in cleartext
	// (banners and login actions on TCP payloads that are not SIP, any
	// port). Always present: [] means looked and found none. Never carries
	// a username or a secret.
	AMICleartext []AMISighting `json:"ami_cleartext" nonnull:"true" desc:"cleartext AMI sightings (banner, login); [] means looked, none"`
	// STUN counts the STUN and TURN traffic read and what its evidence
	// tables shed (core/stun, docs/stun.md); absent when the capture held
	// none.
	STUN *stun.Stats `json:"stun,omitempty" desc:"STUN/TURN/ICE counts (docs/stun.md); absent when none was seen"`
	// Detectors are the security detectors' counters: findings recorded
	// and what their attacker-keyed tables shed (core/detect); absent when
	// none is armed.
	Detectors *detect.Stats `json:"detectors,omitempty" desc:"security detector counters and evictions (core/detect); absent when none is armed"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

// DialogStore is the dialog store's bounds and what they shed.
type DialogStore struct {
	// Bytes is what the store holds now (messages and their structures).
	Bytes int64 `json:"held_bytes" desc:"bytes held: messages and their structures"`
	// MaxBytes is its byte budget (--max-store-mb); absent: none.
	MaxBytes int64 `json:"max_bytes,omitempty" desc:"byte budget (--max-store-mb)"`
	// Evicted counts dialogs evicted, at the dialog cap or the byte budget.
	Evicted uint64 `json:"evicted" desc:"dialogs evicted (dialog cap or byte budget)"`
	// EvictedForBytes counts those evicted for the byte budget.
	EvictedForBytes uint64 `json:"evicted_for_bytes" desc:"of those, for the byte budget"`
	// Refused counts new Call-IDs refused at the cap (no-rotate).
	Refused uint64 `json:"refused" desc:"new Call-IDs refused (no-rotate)"`
	// MessagesNotRetained counts messages past the per-dialog cap.
	MessagesNotRetained uint64 `json:"messages_not_retained" desc:"messages past the per-dialog cap"`
}

// CaptureQuality are the blind-spot counters.
type CaptureQuality struct {
	// KernelDroppedPackets counts packets the kernel dropped (live only).
	KernelDroppedPackets *uint64 `json:"kernel_dropped_packets,omitempty" desc:"packets the kernel dropped (live)"`
	// InterfaceDroppedPackets counts packets the interface dropped (live only).
	InterfaceDroppedPackets *uint64 `json:"interface_dropped_packets,omitempty" desc:"packets the interface dropped (live)"`
	// InvalidTimestamps counts frames whose timestamp was unusable.
	InvalidTimestamps uint64 `json:"invalid_timestamps" desc:"frames with an unusable timestamp"`
	// UndecodableFrames counts frames that could not be decoded.
	UndecodableFrames uint64 `json:"undecodable_frames" desc:"frames that could not be decoded"`
	// OtherTrafficFrames counts frames of traffic that could not carry SIP
	// or RTP (ARP, LLDP, STP, ICMP echo): counted, never undecodable, never
	// degrading the capture.
	OtherTrafficFrames uint64 `json:"other_traffic_frames" desc:"non-VoIP frames (ARP, LLDP)"`
	// HEPRefused counts what the HEP listeners refused, by reason
	// (global_rate, rate_limited, malformed, too_many_conns, not_allowed,
	// auth_failed...), plus kernel_dropped for datagrams the kernel dropped
	// at a full receive buffer. Absent without a listener or a refusal.
	HEPRefused map[string]uint64 `json:"hep_refused,omitempty" desc:"HEP refusals by reason, kernel_dropped included"`
	// NotAnalyzedSIP counts SIP the port gate set aside (neither port in
	// --portrange): counted, not analysed; the --json-run document and
	// --report name the ports. Absent without a gate.
	NotAnalyzedSIP *uint64 `json:"not_analyzed_sip,omitempty" desc:"SIP with neither port in --portrange: not analysed"`
	// Degraded: over 1% of frames undecodable, any invalid timestamp, a kernel drop, a source stopped early, or HEP data lost.
	Degraded bool `json:"degraded" desc:"over 1% undecodable, invalid timestamps, kernel drops, a source stopped early, or HEP data lost"`
}

// LoadStatus is the background file load.
type LoadStatus struct {
	// Filename names the files loaded.
	Filename string `json:"filename" desc:"files loaded"`
	// Instance is the capture instance the load feeds.
	Instance string `json:"instance" desc:"capture instance"`
	// Packets counts frames read so far.
	Packets uint64 `json:"packets" desc:"frames read so far"`
	// ElapsedSec is the load's duration so far.
	ElapsedSec float64 `json:"elapsed_sec" desc:"seconds spent loading"`
	// Done: the load finished.
	Done bool `json:"done" desc:"the load finished"`
	// Error says why reading stopped early; absent when it did not.
	Error string `json:"error,omitempty" desc:"why reading stopped early"`
}

// AMISighting is one cleartext AMI observation, keyed by (src, dst,
// dst_port, observation). src is the manager client and dst:dst_port the
// AMI server, whichever way the payload travelled (a banner goes server to
// client).
type AMISighting struct {
	// Observation is what was seen: the manager's banner or a login action.
	Observation string `json:"observation" enum:"banner|cleartext-login" desc:"what was seen"`
	// SecretPresent: a login carried a secret (its value is never read into the answer).
	SecretPresent bool `json:"secret_present" desc:"a login sent a secret (never echoed)"`
	// Src is the client's address.
	Src string `json:"src" desc:"client address"`
	// Dst is the AMI server's address.
	Dst string `json:"dst" desc:"AMI server address"`
	// DstPort is the port the server answered on (reported, never assumed).
	DstPort int `json:"dst_port" desc:"AMI server port"`
	// DefaultPort is AMI's registered port, 5038, beside the port seen.
	DefaultPort int `json:"default_port" desc:"AMI's default port, 5038"`
	// Count counts the payloads seen under this key.
	Count uint64 `json:"count" desc:"payloads seen"`
}

var _ = addTool(captureStatusTool)

func captureStatusTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "capture_status",
		Title: "Capture status",
		Description: "What the server reads and how far: source, counts, capture quality, load progress, " +
			"source_exhausted. Call first: files load in the background. unsaved: stopping a live source loses its packets.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Load state and counts of the capture", Args: nil},
		},
	}, func(ctx context.Context, c *sdk.Call, _ captureStatusIn) (CaptureStatus, error) {
		return captureStatus(d, time.Now()), nil
	})
}

var finalStates = map[string]bool{
	dialog.Completed.String(): true, dialog.Cancelled.String(): true, dialog.Failed.String(): true,
	dialog.Redirected.String(): true, dialog.Expired.String(): true, dialog.Terminated.String(): true,
}

func captureStatus(d *deps, now time.Time) CaptureStatus {
	st := d.capture.Status()
	src := answer.SourceState(st)
	out := CaptureStatus{
		Source:          st.Source,
		Name:            st.Name,
		UptimeSec:       now.Sub(d.started).Seconds(),
		SourceFlags:     src.Flags(),
		CaptureIdentity: src.Identity,
		STUN:            st.STUN,
		Detectors:       st.Detectors,
		SchemaVersion:   captureStatusSchemaVersion,
	}
	if out.Source == "none" || out.Source == "" {
		out.Source = "unknown"
	}
	// Counted from the store's tally by state, not from built rows: a row
	// per dialog cost 40-50 ms at 100,000 dialogs. A dialog without a state
	// (Absent) is not in a final one.
	byState := d.capture.Dialogs().Tally(dialog.TallyState)
	out.DialogCount = byState.Total
	out.ActiveDialogCount = byState.Total
	for state, n := range byState.Text {
		if finalStates[state] {
			out.ActiveDialogCount -= n
		}
	}
	out.ActiveCallCount = byState.Text[dialog.InCall.String()]
	if st.Media != nil {
		n, o := st.Media.Streams, st.Media.OrphanedStreams
		out.StreamCount, out.OrphanedStreamCount = &n, &o
	}
	ds := st.Dialogs
	out.DialogStore = DialogStore{Bytes: ds.Bytes, MaxBytes: ds.MaxBytes, Evicted: ds.Evicted, EvictedForBytes: ds.EvictedForBytes,
		Refused: ds.Refused, MessagesNotRetained: ds.MessagesNotRetained}
	out.CaptureQuality = CaptureQuality{
		InvalidTimestamps:  st.InvalidTimestamps,
		UndecodableFrames:  st.UndecodableFrames,
		OtherTrafficFrames: st.OtherTrafficFrames,
		Degraded: st.InvalidTimestamps > 0 || st.SourceStoppedEarly ||
			(st.FramesRead > 0 && st.UndecodableFrames*100 > st.FramesRead),
	}
	if na := st.NotAnalyzed; na != nil {
		n := na.SIPMessages
		out.CaptureQuality.NotAnalyzedSIP = &n
	}
	for _, l := range st.HEP.Listeners {
		add := func(k string, n uint64) {
			if n > 0 {
				if out.CaptureQuality.HEPRefused == nil {
					out.CaptureQuality.HEPRefused = map[string]uint64{}
				}
				out.CaptureQuality.HEPRefused[k] += n
			}
		}
		for k, n := range l.Refused {
			add(k, n)
		}
		if l.KernelDropped != nil {
			add("kernel_dropped", *l.KernelDropped)
		}
	}
	if st.HEP.Lost() > 0 {
		out.CaptureQuality.Degraded = true
	}
	if drops, ok := kernelDrops(d.live); ok {
		out.CaptureQuality.KernelDroppedPackets = &drops
		out.CaptureQuality.Degraded = out.CaptureQuality.Degraded || drops > 0
	}
	// A live source writes nowhere in this build: stopping loses its packets.
	out.Unsaved = strings.Contains(st.Source, "live") || strings.Contains(st.Source, "hep")
	if len(st.Files) > 0 {
		names := make([]string, len(st.Files))
		for i, f := range st.Files {
			names[i] = f.Name
		}
		out.Load = &LoadStatus{
			Filename:   strings.Join(names, ", "),
			Instance:   st.Identity.Instance,
			Packets:    st.FramesRead,
			ElapsedSec: st.ElapsedSec,
			Done:       !st.Loading,
			Error:      strings.Join(st.Errors, "; "),
		}
	}
	out.AMICleartext = amiSightings(d.capture)
	return out
}

// amiSightings converts the engine's AMI sightings (core/ami).
func amiSightings(c *engine.Capture) []AMISighting {
	seen, _ := c.AMISightings()
	out := make([]AMISighting, 0, len(seen))
	for _, s := range seen {
		out = append(out, AMISighting{Observation: s.Kind.String(), SecretPresent: s.SecretPresent,
			Src: s.Src.String(), Dst: s.Dst.String(), DstPort: int(s.DstPort), DefaultPort: ami.DefaultPort, Count: s.Count})
	}
	return out
}

// kernelDrops sums the kernel's drop counters of the live sources that
// could read them; ok is false when none could (the count is then absent:
// not measured is not zero). Interface drops are not measured.
func kernelDrops(lives []*live.Capture) (uint64, bool) {
	var sum uint64
	ok := false
	for _, l := range lives {
		if st := l.Stats(); st.KernelStats {
			sum += st.KernelDrops
			ok = true
		}
	}
	return sum, ok
}
