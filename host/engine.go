package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/detect"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/core/live"
	"github.com/sipnab/sipnab/core/mos"
	"github.com/sipnab/sipnab/core/packet"
)

// engineHandle is the running capture engine as the host holds it. Its
// services are handed to every bundle (sdk.Service): the *engine.Capture,
// the running live captures ([]*live.Capture, for their kernel drop
// counters) and, with -H, the HEP sender (*hepsend.Sender, its counters).
type engineHandle struct {
	capture *engine.Capture
	live    []*live.Capture
	egress  *egress // -O and -H (egress.go); nil when neither is set
	// endGCPause ends a batch load's pause of the collector (gcpace.go)
	// once the output is written; collect sets it.
	endGCPause func()
}

// stopEgress removes the -O/-H tap from the router, closes the file and
// the sender and writes their summaries to w: call it once the sources
// have stopped. An error means the -O output failed (exit 1).
func (e *engineHandle) stopEgress(w io.Writer) error {
	if e == nil || e.egress == nil {
		return nil
	}
	e.capture.SetTap(nil)
	eg := e.egress
	e.egress = nil
	return eg.finish(w, e.capture)
}

func (e *engineHandle) services() serviceList {
	if e == nil || e.capture == nil {
		return nil
	}
	s := serviceList{e.capture, e.live}
	if e.egress != nil && e.egress.hep != nil {
		s = append(s, e.egress.hep) // -H's running counters (runtime_stats hep_export)
	}
	return s
}

func inputsOf(cfg *Config) []string { return nonEmpty(cfg.Input) }

func nonEmpty(list []string) []string {
	var out []string
	for _, in := range list {
		if in != "" {
			out = append(out, in)
		}
	}
	return out
}

func engineConfig(cfg *Config) engine.Config {
	node := cfg.NodeName
	if node == "" {
		node, _ = os.Hostname()
	}
	ec := engine.Config{Node: node, Cores: cfg.Cores}
	ec.Dialog = dialog.Config{MaxDialogs: cfg.Limit}
	if mb := cfg.MaxStoreMB; mb > 0 {
		ec.Dialog.MaxBytes = int64(mb) << 20
	}
	th := thresholdsOf(cfg) // quality-interval verdicts judge with --loss-threshold and --jitter-threshold, as high_loss/high_jitter do
	ec.Media.LossThresholdPct, ec.Media.JitterThresholdMs = &th.LossPct, &th.JitterMs
	ec.Media.MaxStreams = cfg.Media.MaxStreams
	ec.Media.RetainAudio = cfg.Media.RetainAudio // export_audio (bundles/media); off: nothing retained
	if d := cfg.Media.OneWayDelay; d >= 0 {
		ec.Media.OneWayDelayMs, ec.Media.HasOneWayDelay = d, true // mos.ResolveDelay: source "declared"
	}
	ec.Gate = portGateOf(cfg)
	ec.Detect = detect.New(detectConfig(cfg))
	ec.Expand.Stdin = cfg.stdin                      // -I - reads it (core/capture/stdin.go)
	ec.Media.CodecIe, _ = codecIe(cfg.Media.CodecIe) // checked at startup (checkAnalysis)
	ec.Media.WidebandListening = mos.Listening(cfg.Media.AMRWBListening)
	if n := cfg.Count; n > 0 {
		ec.Load.MaxFrames = uint64(n) // batch --count: a file load stops itself, on request
	}
	return ec
}

// startEngine creates the capture and starts its sources: -i interfaces
// capture live (they need the starting user's rights), then beforeFiles
// runs (the HTTP server drops root there), then the -I inputs load in the
// background and -L addresses receive HEP, as the user sipnab runs as. A
// named source that cannot be opened is an error.
func startEngine(ctx context.Context, cfg *Config, log hclog.Logger, beforeFiles func() error) (*engineHandle, error) {
	c := engine.New(engineConfig(cfg), toSlog(log.Named("engine")))
	if why := c.Detector().Disabled(); why != "" {
		log.Warn("security detectors not running", "armed", c.Detector().Armed(), "why", why)
	}
	var f2b *fail2banLog
	if path := cfg.Detect.Fail2banLog; path != "" {
		var err error
		if f2b, err = openFail2banLog(path, log); err != nil {
			return nil, err
		}
		c.Detector().OnFinding(f2b.write)
		if len(c.Detector().Armed()) == 0 {
			log.Warn("--fail2ban-log without an armed detector (--detect-scanner, --reg-flood, --digest-leak, --fraud-detect): nothing will be written", "file", path)
		}
	}
	eg, err := startEgress(cfg, log)
	if err != nil {
		f2b.close()
		return nil, err
	}
	if eg != nil {
		c.SetTap(eg)
		if eg.hep != nil {
			// A live capture sees the envelopes -H sends: skipped.
			network, to := eg.hep.Remote()
			tr := packet.TransportUDP
			if network == "tcp" {
				tr = packet.TransportTCP
			}
			c.SkipLiveTo(tr, to)
		}
	}
	fail := func(err error) (*engineHandle, error) {
		_ = c.Close()
		c.SetTap(nil)
		_ = eg.finish(io.Discard, c)
		return nil, err
	}
	var lives []*live.Capture
	lo, err := liveFilterOf(cfg, log)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	for i, dev := range nonEmpty(cfg.Interface) {
		o := lo
		o.Device, o.Name, o.SourceID = dev, dev, uint16(100+i)
		lc, err := live.Start(ctx, o, c)
		if err != nil {
			return fail(fmt.Errorf("starting live capture on %s: %w", dev, err))
		}
		c.AttachLive(dev, lc.Stop, lc.Done(), lc.Err)
		lives = append(lives, lc)
		log.Info("capturing live", "interface", dev)
	}
	if beforeFiles != nil {
		if err := beforeFiles(); err != nil {
			return fail(err)
		}
	}
	if inputs := inputsOf(cfg); len(inputs) > 0 {
		if err := c.LoadFiles(ctx, inputs); err != nil {
			return fail(withFormats(err))
		}
	}
	for i, addr := range nonEmpty(cfg.HEP.Listen) {
		hc := heplisten.Config{UDP: addr, TCP: addr, Allow: nonEmpty(cfg.HEP.Allow),
			PerPeerRate: float64(cfg.HEP.RateLimitPerPeer), SourceID: uint16(200 + i),
			SilenceWarn: time.Duration(cfg.HEP.SilenceWarn) * time.Second,
			Logger:      toSlog(log.Named("hep"))}
		l, err := c.StartHEP(ctx, hc)
		if err != nil {
			return fail(err)
		}
		log.Info("receiving HEP", "listener", l.Name())
	}
	return &engineHandle{capture: c, live: lives, egress: eg}, nil
}

// readFormats names what -I reads (core/capture/format.go: pcap and
// pcapng, each plain or gzip-compressed).
const readFormats = "sipnab reads pcap and pcapng files, plain or gzip-compressed (.gz)"

// withFormats adds the formats sipnab reads to a file it cannot identify
// (a text file, a truncated stub), so a first -I of the wrong file says
// what to give instead. A recognized foreign format already says "only
// pcap and pcapng are read" and is left as it is.
func withFormats(err error) error {
	var fe *capture.FormatError
	if errors.As(err, &fe) && fe.Name != "" {
		return err
	}
	if errors.Is(err, capture.ErrUnsupportedFormat) {
		return fmt.Errorf("%w; %s", err, readFormats)
	}
	return err
}
