package tls

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/tlsprobe"
	"github.com/sipnab/sipnab/core/tlsprobe/uprobe"
	"github.com/sipnab/sipnab/sdk"
)

type startIn struct {
	// Flavors keeps its spelling: an unknown key is refused by the closed
	// input schema, so a misspelling never silently widens the probe to
	// every library (mcp-surface §3.9).
	Flavors   []string `json:"flavors,omitempty" desc:"openssl and/or wolfssl; absent: both"`
	Libraries []string `json:"libraries,omitempty" desc:"only these libraries: path or probe_path as list_tls_libraries names them; absent: every probeable one of the flavors"`
}

// Target is one probed library.
type Target struct {
	Flavor       string `json:"flavor" enum:"openssl|wolfssl" desc:"library family"`
	Path         string `json:"path" desc:"the mapped file's path"`
	ProbePath    string `json:"probe_path" desc:"the path the probes were attached through"`
	Inode        uint64 `json:"inode" desc:"the file's inode"`
	ProcessCount int    `json:"process_count" desc:"processes mapping it when the capture started"`
	Symbols      string `json:"symbols" desc:"the functions probed (entry and return)"`
}

// Framing counts what the user-space framer did with the calls read.
type Framing struct {
	Calls      uint64 `json:"calls" desc:"write/read calls recorded"`
	Bytes      uint64 `json:"bytes" desc:"plaintext bytes they carried"`
	Streams    int    `json:"streams" desc:"streams held now (process, SSL object, direction)"`
	Evicted    uint64 `json:"evicted" desc:"streams evicted at 1024"`
	Oversized  uint64 `json:"oversized" desc:"buffers dropped past 64 KiB without a whole message"`
	Gaps       uint64 `json:"gaps" desc:"calls longer than the 16 KiB copy: the stream's buffer was dropped"`
	NotSIP     uint64 `json:"not_sip" desc:"buffers dropped as not SIP (other TLS traffic of the probed processes)"`
	KeepAlives uint64 `json:"keepalives" desc:"CRLF keep-alives skipped (RFC 5626)"`
	Unreadable uint64 `json:"unreadable" desc:"calls whose buffer the kernel could not read"`
}

// Capture is the answer of start_tls_capture and stop_tls_capture.
type Capture struct {
	Running bool     `json:"running" desc:"probes are attached"`
	Targets []Target `json:"targets" nonnull:"true" desc:"libraries probed"`
	// Messages counts SIP messages handed to the engine (input origin
	// uprobe): list_dialogs, get_dialog and the rest read them.
	Messages uint64 `json:"messages" desc:"SIP messages handed to the engine (input_origin uprobe)"`
	// Lost counts calls the kernel side could not record: the ring buffer
	// was full.
	Lost      uint64  `json:"lost" desc:"calls not recorded: the kernel's ring buffer was full"`
	Framing   Framing `json:"framing" desc:"what was read and dropped in user space"`
	UptimeSec float64 `json:"uptime_sec" desc:"seconds since the probes were attached (to the stop once stopped)"`
	// Error is why the capture stopped by itself or could not detach;
	// null when nothing failed.
	Error   *string `json:"error" desc:"why the capture failed; null when nothing did"`
	Summary string  `json:"summary" desc:"one line"`
}

// session is one capture: the attached probe and its framer.
type session struct {
	probe   *uprobe.Probe
	framer  *tlsprobe.Framer
	targets []Target
	started time.Time

	mu      sync.Mutex
	stopped time.Time // zero while running
	stopErr error
}

func (s *session) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped.IsZero() {
		return s.stopErr
	}
	s.stopErr = s.probe.Close()
	s.stopped = time.Now()
	return s.stopErr
}

func (s *session) state() Capture {
	s.mu.Lock()
	stopped, stopErr := s.stopped, s.stopErr
	s.mu.Unlock()
	fs := s.framer.Stats()
	out := Capture{Running: stopped.IsZero(), Targets: s.targets, Messages: fs.Messages, Lost: s.probe.Lost(),
		Framing: Framing{Calls: fs.Calls, Bytes: fs.Bytes, Streams: fs.Streams, Evicted: fs.Evicted, Oversized: fs.Oversized,
			Gaps: fs.Gaps, NotSIP: fs.NotSIP, KeepAlives: fs.KeepAlives, Unreadable: s.probe.Unreadable()}}
	end := time.Now()
	if !stopped.IsZero() {
		end = stopped
	}
	out.UptimeSec = math.Round(end.Sub(s.started).Seconds()*10) / 10
	err := stopErr
	if err == nil {
		err = s.probe.Err()
	}
	if err != nil {
		e := err.Error()
		out.Error = &e
	}
	names := make([]string, len(s.targets))
	for i, t := range s.targets {
		names[i] = t.Path
	}
	verb := "probing"
	if !out.Running {
		verb = "probed"
	}
	out.Summary = fmt.Sprintf("%s %d librar%s (%s): %d SIP messages to the engine, %d calls lost, %d not SIP",
		verb, len(s.targets), plural(len(s.targets), "y", "ies"), strings.Join(names, ", "), out.Messages, out.Lost, fs.NotSIP)
	return out
}

var _ = addTool(func(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "start_tls_capture",
		Title: "Start a TLS uprobe capture",
		Description: "Attach uprobes to SSL_write/SSL_read and their _ex variants (wolfSSL_write/wolfSSL_read) of the mapped TLS libraries and feed the SIP " +
			"they carry, in plaintext, to the capture (input_origin uprobe; addresses are placeholders: 127.<pid>:5061 is the process). " +
			"Needs --mcp-allow-tls-capture and root. Every refusal comes before anything is attached.",
		Annotations: sdk.Annotations{Effect: sdk.Writes, Idempotency: sdk.NotIdempotent, World: sdk.ClosedWorld},
		Examples:    []sdk.Example{{Title: "Probe every OpenSSL library", Args: map[string]any{"flavors": []any{"openssl"}}}},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "--mcp-allow-tls-capture is off (not_enabled)"},
			{Code: sdk.CodeInvalidParams, When: "sipnab is not root (no CAP_SYS_ADMIN, nor CAP_BPF with CAP_PERFMON), or the build cannot attach uprobes (not_enabled)"},
			{Code: sdk.CodeInvalidParams, When: "a live interface or HEP listener feeds the capture, or a file load is in flight (unavailable)"},
			{Code: sdk.CodeInvalidParams, When: "a TLS capture already runs (unavailable)"},
			{Code: sdk.CodeInvalidParams, When: "an unknown flavor (invalid_argument), or no probeable library matches (unknown_id)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in startIn) (Capture, error) {
		return start(d, in)
	})
})

// start runs every refusal before any kernel state exists, in the order
// of mcp-surface §3.9: the flag, root (before the attach, so a privilege
// failure is never reported later as an empty capture), a live source, a
// load in flight, then the one-writer check under the recording lock.
func start(d *deps, in startIn) (Capture, error) {
	if !d.env.Option(optTLSCapture) {
		return Capture{}, sdk.NotEnabled("", "start_tls_capture is disabled: start sipnab with --%s to allow it", optTLSCapture)
	}
	flavors, err := flavorSet(in.Flavors)
	if err != nil {
		return Capture{}, err
	}
	if !uprobe.Supported {
		return Capture{}, sdk.Refuse(sdk.KindNotEnabled, "", "this build cannot attach uprobes: they need Linux on amd64")
	}
	if ok, why := tlsprobe.Privileged(); !ok {
		return Capture{}, sdk.Refuse(sdk.KindNotEnabled, "", "start_tls_capture needs root: %s", why)
	}
	st := d.capture.Status()
	for _, name := range d.capture.LiveSources() {
		if !strings.HasPrefix(name, sourcePrefix) {
			return Capture{}, sdk.Refuse(sdk.KindUnavailable, "", "a live source (%s) feeds the capture: its messages and the uprobes' would mix in one run; stop it or run a second sipnab", answer.Unfenced(name))
		}
	}
	if strings.Contains(st.Source, "hep") {
		return Capture{}, sdk.Refuse(sdk.KindUnavailable, "", "a HEP listener feeds the capture: its messages and the uprobes' would mix in one run")
	}
	if st.Loading {
		return Capture{}, sdk.Refuse(sdk.KindUnavailable, "", "a file load is in flight: wait for it (capture_status load.done) and call again")
	}
	targets, plan, err := planTargets(d, flavors, in.Libraries)
	if err != nil {
		return Capture{}, err
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur != nil {
		if s := d.cur.state(); s.Running {
			return Capture{}, sdk.Refuse(sdk.KindUnavailable, "", "a TLS capture already runs (%s): stop_tls_capture first", s.Summary)
		}
	}
	fr := tlsprobe.NewFramer(d.capture)
	probe, err := uprobe.Attach(plan, fr.Add)
	if err != nil {
		// Attach detached whatever it had attached: nothing stays.
		return Capture{}, sdk.Refuse(sdk.KindUnavailable, "", "the kernel refused the uprobes (nothing is attached): %v", err)
	}
	s := &session{probe: probe, framer: fr, targets: targets, started: time.Now()}
	d.cur = s
	d.starts++
	name := sourcePrefix + "tls"
	if d.starts > 1 {
		name += fmt.Sprintf("#%d", d.starts)
	}
	d.capture.AttachLive(name, s.stop, probe.Done(), probe.Err)
	return s.state(), nil
}

// sourcePrefix names the engine's live sources this bundle attaches.
const sourcePrefix = "uprobe:"

// flavorSet validates flavors (absent: both).
func flavorSet(in []string) (map[string]bool, error) {
	valid := make([]string, 0, len(tlsprobe.Flavors))
	for _, f := range tlsprobe.Flavors {
		valid = append(valid, f.Name)
	}
	set := map[string]bool{}
	for _, f := range in {
		if !slices.Contains(valid, f) {
			return nil, sdk.Refuse(sdk.KindInvalidArgument, "flavors", "unknown flavor %q", answer.Unfenced(f)).Accepting(valid)
		}
		set[f] = true
	}
	if len(set) == 0 {
		for _, f := range valid {
			set[f] = true
		}
	}
	return set, nil
}

// planTargets picks the probeable libraries of the flavors (and of the
// named paths, when given) from a fresh scan.
func planTargets(d *deps, flavors map[string]bool, libs []string) ([]Target, []tlsprobe.Target, error) {
	res, err := tlsprobe.Scan(d.procRoot)
	if err != nil {
		return nil, nil, sdk.Internal("start_tls_capture: %v", err)
	}
	named := map[string]bool{}
	for _, l := range libs {
		named[l] = false
	}
	var targets []Target
	var plan []tlsprobe.Target
	for _, l := range res.Libraries {
		if !flavors[l.Flavor] {
			continue
		}
		if len(libs) > 0 {
			_, a := named[l.Path]
			_, b := named[l.ProbePath]
			if !a && !b {
				continue
			}
			if a {
				named[l.Path] = true
			}
			if b {
				named[l.ProbePath] = true
			}
		}
		if l.ProbePath == "" || l.WriteSymbol == "" || l.ReadSymbol == "" {
			continue
		}
		plan = append(plan, tlsprobe.Target{Path: l.ProbePath, WriteSymbol: l.WriteSymbol, ReadSymbol: l.ReadSymbol,
			WriteExSymbol: l.WriteExSymbol, ReadExSymbol: l.ReadExSymbol})
		syms := l.WriteSymbol + ", " + l.ReadSymbol
		if l.WriteExSymbol != "" {
			syms += ", " + l.WriteExSymbol + ", " + l.ReadExSymbol
		}
		targets = append(targets, Target{Flavor: l.Flavor, Path: answer.Unfenced(l.Path), ProbePath: answer.Unfenced(l.ProbePath),
			Inode: l.Inode, ProcessCount: l.ProcessCount, Symbols: syms})
	}
	for _, l := range libs {
		if !named[l] {
			return nil, nil, sdk.UnknownID("libraries", "no mapped TLS library of the flavors asked is at %q (list_tls_libraries names them)", answer.Unfenced(l))
		}
	}
	if len(plan) == 0 {
		return nil, nil, sdk.UnknownID("", "no probeable TLS library is mapped (%d libraries seen in %d processes, %d unreachable): list_tls_libraries says why",
			len(res.Libraries), res.Scanned, res.Unreachable)
	}
	return targets, plan, nil
}
