package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sipnab/sipnab/core/callreport"
	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/report"
)

// countPoll is how often a live or HEP batch run reads the frame counter
// against --count.
const countPoll = 20 * time.Millisecond

// tickEvery is how often a live or HEP run writes the per-message output
// (-N with no output flag, --json) of what it read since.
const tickEvery = 250 * time.Millisecond

// batchSources are the sources a batch run reads.
type batchSources struct {
	files, interfaces, listeners []string
}

func batchSourcesOf(cfg *Config) batchSources {
	return batchSources{files: inputsOf(cfg), interfaces: nonEmpty(cfg.Interface), listeners: nonEmpty(cfg.HEP.Listen)}
}

func (s batchSources) none() bool {
	return len(s.files) == 0 && len(s.interfaces) == 0 && len(s.listeners) == 0
}

// streaming reports a source with no end of its own: a live interface or a
// HEP listener. Such a run reads until it is stopped.
func (s batchSources) streaming() bool { return len(s.interfaces) > 0 || len(s.listeners) > 0 }

const noInput = "sipnab: no input: give -I FILE (repeatable) or -I DIR, -i IFACE (live) or -L ADDR (HEP)"

// checkBatch validates the batch stop conditions (--duration, --count) at
// startup: a usage error, exit 2.
func checkBatch(cfg *Config) error {
	d, n := cfg.Duration, cfg.Count
	if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 || d > 366*24*3600 {
		return usagef("--duration %v: want seconds, 0 (no limit) or more, at most a year", d)
	}
	if n < 0 {
		return usagef("--count %d: want a number of frames, 0 (no limit) or more", n)
	}
	if cfg.MCP.Enabled && (d > 0 || n > 0) {
		return usagef("--duration and --count stop a batch run; they do not combine with --mcp")
	}
	return checkOutputs(cfg)
}

// runBatch is the batch CLI: -N with sources (-I FILE|DIR, -i IFACE,
// -L ADDR) and one output (--json-run, --report, --json, --json-dialogs,
// --analyze, --json-analyze; the per-message text when none is given), or
// --call-report <Call-ID>. It reads until the files are read and, with a
// live interface or a HEP listener, until a stop is requested (SIGINT or
// SIGTERM, --duration, --count), then writes the output. Exit 0 when the
// read was whole or stopped on request, 1 when a source stopped early (a
// truncated file, a live source fault), 3 when the read was whole and
// --lint-fail-on found a finding at or above its severity (a partial read
// exits 1 whatever the lint found: the gate judged part of the input).
func runBatch(ctx context.Context, cfg *Config, sio IO, log hclog.Logger) int {
	if cfg.CallReport != "" {
		return runCallReport(ctx, cfg, sio, log)
	}
	out, err := outputOf(cfg)
	if err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
		return exitUsage
	}
	if batchSourcesOf(cfg).none() {
		fmt.Fprintln(sio.Stderr, noInput)
		return exitUsage
	}
	var live *liveMessages
	if batchSourcesOf(cfg).streaming() && (out == outText || out == outJSON) {
		live = &liveMessages{sink: messageSink(sio.Stdout, out, cfg, isTerminal(sio.Stdout))}
	}
	e, onRequest, err := collect(ctx, cfg, log, live.tick(cfg))
	if e != nil {
		defer e.endGCPause()
	}
	if err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
		if isUsage(err) {
			return exitUsage
		}
		return exitFailure
	}
	egErr := e.stopEgress(sio.Stderr)
	if live != nil {
		err = live.end(cfg, e.capture)
	} else {
		err = writeOutput(sio.Stdout, out, cfg, e.capture, isTerminal(sio.Stdout))
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(sio.Stderr, "sipnab: writing output: %v\n", err)
		return exitFailure
	}
	if egErr != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: %v\n", egErr)
		return exitFailure
	}
	code := batchExit(e.capture.Status(), onRequest)
	if cfg.LintFailOn != "" {
		tripped, err := lintGate(sio.Stderr, e.capture, cfg.LintFailOn)
		if err != nil {
			fmt.Fprintf(sio.Stderr, "sipnab: lint gate: %v\n", err)
			return exitFailure
		}
		if tripped && code == exitOK {
			return exitLint
		}
	}
	return code
}

// collect starts the run's sources and reads until they are done. Files
// alone: until the load ends (a stop request cancels it, and the load says
// so). With a live interface or a HEP listener: until SIGINT or SIGTERM
// (ctx), --duration or --count, or until a live source fails. Every source
// is stopped, and everything it had read is routed, before collect returns
// (frames still queued in the kernel at the stop are not read), so the
// stores are whole for what was read. onRequest reports a run that was
// stopped on request.
//
// write, when not nil, runs every tickEvery while a live or HEP run reads
// (the per-message outputs write what arrived); its error stops the run,
// which is then not a stop on request.
func collect(ctx context.Context, cfg *Config, log hclog.Logger, write func(*engineHandle) error) (e *engineHandle, onRequest bool, err error) {
	src := batchSourcesOf(cfg)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut <-chan time.Time
	if d := cfg.Duration; d > 0 {
		t := time.NewTimer(time.Duration(d * float64(time.Second)))
		defer t.Stop()
		timedOut = t.C
	}
	count := uint64(cfg.Count)

	var store atomic.Pointer[dialog.Store] // the load's, once started
	endPause := func() {}
	if loadPausesGC(src, cfg.Cores) {
		endPause = pauseGCForLoad(storeBudget(cfg), func() int64 {
			if s := store.Load(); s != nil {
				return s.Stats().Bytes
			}
			return 0
		})
	}
	e, err = startEngine(runCtx, cfg, log, nil)
	if err != nil {
		endPause()
		return nil, false, err
	}
	e.endGCPause = endPause
	store.Store(e.capture.Dialogs())
	if !src.streaming() {
		// The file load stops itself at --count (LoadOptions.MaxFrames)
		// and on a cancelled context; its snapshot says stopped on request.
		select {
		case <-e.capture.Done():
		case <-timedOut:
			cancel()
		case <-runCtx.Done():
		}
		e.capture.Wait()
		e.capture.Detector().Settle() // probes still waiting at the end of the files: judged now
		return e, false, nil
	}

	var limits []string
	if d := cfg.Duration; d > 0 {
		limits = append(limits, fmt.Sprintf("for %gs", d))
	}
	if count > 0 {
		limits = append(limits, fmt.Sprintf("up to %d frames", count))
	}
	if len(limits) > 0 {
		log.Info("reading until interrupted (SIGINT or SIGTERM), then writing the output", "limits", strings.Join(limits, ", "))
	} else {
		log.Info("reading until interrupted (SIGINT or SIGTERM), then writing the output")
	}

	var tick <-chan time.Time
	if count > 0 {
		t := time.NewTicker(countPoll)
		defer t.Stop()
		tick = t.C
	}
	var ticks <-chan time.Time
	if write != nil {
		t := time.NewTicker(tickEvery)
		defer t.Stop()
		ticks = t.C
	}
	ended := liveEnded(e)
	why := ""
	failed := false
	for why == "" {
		select {
		case <-ticks:
			if err := write(e); err != nil {
				why, failed = "writing the output failed: "+err.Error(), true
			}
		case <-runCtx.Done():
			why = "interrupted (SIGINT or SIGTERM)"
		case <-timedOut:
			why = "--duration reached"
		case <-tick:
			if e.capture.Status().FramesRead >= count {
				why = "--count reached"
			}
		case name := <-ended:
			why = "live capture on " + name + " ended"
			if runCtx.Err() != nil {
				// A signal closes the live sockets too: the stop was
				// requested, whichever of the two was seen first.
				why = "interrupted (SIGINT or SIGTERM)"
			}
		}
	}
	onRequest = !strings.HasPrefix(why, "live capture") && !failed
	log.Info("stopping", "reason", why)
	cancel()
	if err := e.capture.Close(); err != nil {
		log.Warn("a source ended with an error", "error", err) // also in the document's run.errors
	}
	e.capture.Wait()
	e.capture.Detector().Settle()
	return e, onRequest, nil
}

// liveEnded returns a channel that receives the name of the first live
// capture that ends on its own (a fault: a requested stop comes first).
func liveEnded(e *engineHandle) <-chan string {
	out := make(chan string, len(e.live))
	for _, lc := range e.live {
		go func() {
			<-lc.Done()
			out <- lc.Handle().Device()
		}()
	}
	return out
}

// readExit is a batch run's exit code from the capture's status alone: 1
// when a source stopped early (a truncated or unreadable file: the output
// describes a partial read), 0 when the read was whole or stopped on
// request.
func readExit(st engine.Status) int { return batchExit(st, false) }

// batchExit is a batch run's exit code: 1 when a source stopped early (a
// truncated or unreadable file, a live source fault), whatever else
// happened; 0 when the read was whole (even if a store shed something at a
// cap: complete is false and incomplete_reasons says why, but no input was
// lost to a fault), or stopped on request (the status
// says so for a file load; onRequest says so for a live or HEP run stopped
// by a signal, --duration or --count); 1 otherwise.
func batchExit(st engine.Status, onRequest bool) int {
	switch {
	case st.SourceStoppedEarly:
		return exitFailure
	case st.SourceExhausted, st.Complete, st.StoppedOnRequest, onRequest:
		return exitOK
	}
	return exitFailure
}

// runCallReport prints one call's report and ladder: the document
// render_ladder answers, byte for byte, built with the same correlation
// settings and PDD threshold (text; --markdown for Markdown). Unless
// --no-cli-print, a one-line summary goes to stderr; stdout carries only
// the document. With a live interface or a HEP listener it reads until a
// stop is requested, as runBatch does.
func runCallReport(ctx context.Context, cfg *Config, sio IO, log hclog.Logger) int {
	if on := chosenOutputs(cfg); len(on) > 0 {
		fmt.Fprintf(sio.Stderr, "sipnab: --call-report does not combine with %s\n", strings.Join(on, " or "))
		return exitUsage
	}
	if batchSourcesOf(cfg).none() {
		fmt.Fprintln(sio.Stderr, noInput)
		return exitUsage
	}
	e, onRequest, err := collect(ctx, cfg, log, nil)
	if e != nil {
		defer e.endGCPause()
	}
	if err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
		if isUsage(err) {
			return exitUsage
		}
		return exitFailure
	}
	if err := e.stopEgress(sio.Stderr); err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
		return exitFailure
	}
	id := cfg.CallReport
	call, ok := callreport.Build(e.capture, id, callReportOptions(cfg, e.capture))
	if !ok {
		fmt.Fprintf(sio.Stderr, "sipnab: no dialog with Call-ID %q in the capture\n", id)
		return exitFailure
	}
	f := callreport.Text
	if cfg.Markdown {
		f = callreport.Markdown
	}
	if _, err := io.WriteString(sio.Stdout, call.CallReport(f)); err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: writing output: %v\n", err)
		return exitFailure
	}
	st := e.capture.Status()
	if !cfg.NoCLIPrint {
		read := "read whole"
		switch {
		case st.SourceStoppedEarly:
			read = "read partially: " + strings.Join(st.Errors, "; ")
		case st.StoppedOnRequest || onRequest:
			read = "read stopped on request"
		}
		fmt.Fprintf(sio.Stderr, "sipnab: call %s: %d messages, %d legs drawn; capture %s\n", id, call.Detail.MsgCount, len(call.Legs), read)
	}
	return batchExit(st, onRequest)
}

// callReportOptions are the per-call document options of the run: a leg
// correlator with the run's settings ([correlation]) and its PDD threshold,
// as the signaling bundle builds them for render_ladder.
func callReportOptions(cfg *Config, c *engine.Capture) callreport.Options {
	th := thresholdsOf(cfg)
	return callreport.Options{
		Correlator: correlate.New(c.Dialogs(), correlationOf(cfg)),
		Diagnosis:  report.Options{Thresholds: th}.Analysis(),
	}
}
