package host

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/callreport"
	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/core/live"
	"github.com/sipnab/sipnab/core/report"
)

// engineHandle is the running capture engine as the host holds it. Its
// services are handed to every bundle (sdk.Service): the *engine.Capture
// and the running live captures ([]*live.Capture, for their kernel drop
// counters).
type engineHandle struct {
	capture *engine.Capture
	live    []*live.Capture
}

func (e *engineHandle) services() serviceList {
	if e == nil || e.capture == nil {
		return nil
	}
	return serviceList{e.capture, e.live}
}

func inputsOf(cfg *Config) []string { return nonEmpty(cfg.Strings("input")) }

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
	node := cfg.String("node_name")
	if node == "" {
		node, _ = os.Hostname()
	}
	ec := engine.Config{Node: node, Cores: cfg.Int("cores")}
	ec.Dialog = dialog.Config{MaxDialogs: cfg.Int("limit")}
	return ec
}

// startEngine creates the capture and starts its sources: -i interfaces
// capture live (they need the starting user's rights), then beforeFiles
// runs (the HTTP server drops root there), then the -I inputs load in the
// background and -L addresses receive HEP, as the user sipnab runs as. A
// named source that cannot be opened is an error.
func startEngine(ctx context.Context, cfg *Config, log hclog.Logger, beforeFiles func() error) (*engineHandle, error) {
	c := engine.New(engineConfig(cfg), toSlog(log.Named("engine")))
	var lives []*live.Capture
	for i, dev := range nonEmpty(cfg.Strings("interface")) {
		lc, err := live.Start(ctx, live.Options{Device: dev, Name: dev, SourceID: uint16(100 + i)}, c)
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("starting live capture on %s: %w", dev, err)
		}
		c.AttachLive(dev, lc.Stop, lc.Done(), lc.Err)
		lives = append(lives, lc)
		log.Info("capturing live", "interface", dev)
	}
	if beforeFiles != nil {
		if err := beforeFiles(); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	if inputs := inputsOf(cfg); len(inputs) > 0 {
		if err := c.LoadFiles(ctx, inputs); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	for i, addr := range nonEmpty(cfg.Strings("hep.listen")) {
		hc := heplisten.Config{UDP: addr, TCP: addr, Allow: nonEmpty(cfg.Strings("hep.allow")),
			PerPeerRate: float64(cfg.Int("hep.rate_limit_per_peer")), SourceID: uint16(200 + i)}
		l, err := c.StartHEP(ctx, hc)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		log.Info("receiving HEP", "listener", l.Name())
	}
	return &engineHandle{capture: c, live: lives}, nil
}

// runBatch is the batch CLI: -N -I FILE [-I FILE2|DIR] --json|--report, or
// --call-report <Call-ID>. It waits for the load, writes the document, and
// exits 1 on a partial read (a source that stopped early), 0 on a read
// stopped on request.
func runBatch(ctx context.Context, cfg *Config, sio IO, log hclog.Logger) int {
	if cfg.String("call_report") != "" {
		return runCallReport(ctx, cfg, sio, log)
	}
	wantJSON, wantReport := cfg.Bool("json"), cfg.Bool("report")
	if wantJSON == wantReport {
		fmt.Fprintln(sio.Stderr, "sipnab: give one of --json or --report (or --call-report <Call-ID>, or --mcp)")
		return exitUsage
	}
	if len(inputsOf(cfg)) == 0 {
		fmt.Fprintln(sio.Stderr, "sipnab: no input: give -I FILE (repeatable) or -I DIR")
		return exitUsage
	}
	e, err := startEngine(ctx, cfg, log, nil)
	if err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
		return exitFailure
	}
	e.capture.Wait()
	if wantJSON {
		err = report.WriteJSON(sio.Stdout, e.capture)
	} else {
		err = report.WriteText(sio.Stdout, e.capture)
	}
	if err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: writing output: %v\n", err)
		return exitFailure
	}
	return readExit(e.capture.Status())
}

// readExit is a batch run's exit code: 1 when a source stopped early
// (a truncated or unreadable file: the output describes a partial read),
// 0 when the read was whole or stopped on request.
func readExit(st engine.Status) int {
	if st.Complete || (st.StoppedOnRequest && !st.SourceStoppedEarly) {
		return exitOK
	}
	return exitFailure
}

// runCallReport prints one call's report and ladder: the document
// render_ladder answers, byte for byte, built with the same correlation
// settings and PDD threshold (text; --markdown for Markdown). Unless
// --no-cli-print, a one-line summary goes to stderr; stdout carries only
// the document.
func runCallReport(ctx context.Context, cfg *Config, sio IO, log hclog.Logger) int {
	if cfg.Bool("json") || cfg.Bool("report") {
		fmt.Fprintln(sio.Stderr, "sipnab: --call-report does not combine with --json or --report")
		return exitUsage
	}
	if len(inputsOf(cfg)) == 0 {
		fmt.Fprintln(sio.Stderr, "sipnab: no input: give -I FILE (repeatable) or -I DIR")
		return exitUsage
	}
	e, err := startEngine(ctx, cfg, log, nil)
	if err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
		return exitFailure
	}
	defer e.capture.Close()
	e.capture.Wait()
	id := cfg.String("call_report")
	call, ok := callreport.Build(e.capture, id, callReportOptions(cfg, e.capture))
	if !ok {
		fmt.Fprintf(sio.Stderr, "sipnab: no dialog with Call-ID %q in the capture\n", id)
		return exitFailure
	}
	f := callreport.Text
	if cfg.Bool("markdown") {
		f = callreport.Markdown
	}
	if _, err := io.WriteString(sio.Stdout, call.CallReport(f)); err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: writing output: %v\n", err)
		return exitFailure
	}
	st := e.capture.Status()
	if !cfg.Bool("no_cli_print") {
		read := "read whole"
		switch {
		case st.SourceStoppedEarly:
			read = "read partially: " + strings.Join(st.Errors, "; ")
		case st.StoppedOnRequest:
			read = "read stopped on request"
		}
		fmt.Fprintf(sio.Stderr, "sipnab: call %s: %d messages, %d legs drawn; capture %s\n", id, call.Detail.MsgCount, len(call.Legs), read)
	}
	return readExit(st)
}

// callReportOptions are the per-call document options of the run: a leg
// correlator with the run's settings ([correlation]) and its PDD threshold,
// as the signaling bundle builds them for render_ladder.
func callReportOptions(cfg *Config, c *engine.Capture) callreport.Options {
	th := thresholdsOf(cfg)
	return callreport.Options{
		Correlator: correlate.New(c.Dialogs(), correlationOf(cfg)),
		Diagnosis:  analysis.Options{SlowSetup: time.Duration(th.PDDSeconds * float64(time.Second))},
	}
}
