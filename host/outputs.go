package host

import (
	"io"
	"strings"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/report"
)

// exitLint is the exit code of a tripped lint gate (--lint-fail-on;
// engine.md §19).
const exitLint = 3

// batchOutput is the one document a batch run writes (docs/cli-output.md).
type batchOutput int

const (
	// outText is the per-message text: -N with sources and no other
	// output.
	outText batchOutput = iota
	outJSONRun
	outReport
	outJSON
	outJSONDialogs
	outAnalyze
	outJSONAnalyze
	// outNone writes nothing to stdout: a run with -O or -H and no output
	// flag (docs/egress.md), as a capture agent or a recorder runs.
	outNone
)

// outputFlags names each output's flag, in --help order.
var outputFlags = []struct {
	out  batchOutput
	flag string
	on   func(*Config) bool
}{
	{outJSONRun, "json-run", func(c *Config) bool { return c.JSON }},
	{outReport, "report", func(c *Config) bool { return c.Report }},
	{outJSON, "json", func(c *Config) bool { return c.JSONMessages }},
	{outJSONDialogs, "json-dialogs", func(c *Config) bool { return c.JSONDialogs }},
	{outAnalyze, "analyze", func(c *Config) bool { return c.Analyze }},
	{outJSONAnalyze, "json-analyze", func(c *Config) bool { return c.JSONAnalyze }},
}

// chosenOutputs lists the output flags given.
func chosenOutputs(cfg *Config) []string {
	var on []string
	for _, o := range outputFlags {
		if o.on(cfg) {
			on = append(on, "--"+o.flag)
		}
	}
	return on
}

// outputOf is the run's output: the one output flag given, or the
// per-message text when none is.
func outputOf(cfg *Config) (batchOutput, error) {
	var out batchOutput
	n := 0
	for _, o := range outputFlags {
		if o.on(cfg) {
			out = o.out
			n++
		}
	}
	if n > 1 {
		return 0, usagef("give one output, not %s", strings.Join(chosenOutputs(cfg), " and "))
	}
	if n == 0 && (cfg.Output.File != "" || cfg.HEP.Send != "") {
		return outNone, nil
	}
	return out, nil
}

// checkOutputs validates the batch output flags at startup (exit 2): one
// output at most, the per-message text's options only with it, the dialog
// filter only with an output that selects dialogs, a known severity and
// color mode.
func checkOutputs(cfg *Config) error {
	out, err := outputOf(cfg)
	if err != nil {
		return err
	}
	if cfg.CallReport != "" {
		if on := chosenOutputs(cfg); len(on) > 0 {
			return usagef("--call-report does not combine with %s", strings.Join(on, " or "))
		}
		if cfg.LintFailOn != "" {
			return usagef("--lint-fail-on gates a whole capture; it does not combine with --call-report")
		}
		out = -1
	}
	if out != outText {
		for f, on := range map[string]bool{"raw": cfg.Raw, "hexdump": cfg.Hexdump, "delta-time": cfg.DeltaTime,
			"proto-numbers": cfg.ProtoNumbers, "payload-limit": cfg.PayloadLimit != 0} {
			if on {
				return usagef("--%s goes with the per-message text (-N with sources and no --json-run, --report, --json, --json-dialogs, --analyze or --json-analyze)", f)
			}
		}
	}
	if out != outText && out != outJSON && out != outJSONDialogs {
		for f, on := range map[string]bool{"filter": cfg.Filter != "", "calls-only": cfg.CallsOnly} {
			if on {
				return usagef("--%s selects dialogs for --json, --json-dialogs or the per-message text", f)
			}
		}
	}
	if cfg.PayloadLimit < 0 {
		return usagef("--payload-limit %d: want bytes, 0 (all) or more", cfg.PayloadLimit)
	}
	switch cfg.Color {
	case "auto", "always", "never":
	default:
		return usagef("--color %q: want auto, always or never", cfg.Color)
	}
	if s := cfg.LintFailOn; s != "" {
		if _, ok := lint.ParseSeverity(s); !ok {
			return usagef("--lint-fail-on %q: want one of %s", s, strings.Join(lint.SeverityNames(), ", "))
		}
	}
	if cfg.Filter != "" {
		if _, err := filter.Compile(cfg.Filter, thresholdsOf(cfg)); err != nil {
			return usagef("--filter: %v", err)
		}
	}
	return nil
}

// selectionOf is the dialogs --filter and --calls-only keep (nil: all),
// judged on the stores after the run, with the run's thresholds.
func selectionOf(cfg *Config, c *engine.Capture) (report.Selection, error) {
	if cfg.Filter == "" && !cfg.CallsOnly {
		return nil, nil
	}
	var src analysis.MediaSource = media.NewStore(media.Config{})
	if m := c.Media(); m != nil {
		src = m
	}
	q := query.New(c.Dialogs(), src, thresholdsOf(cfg))
	f, err := q.Compile(cfg.Filter)
	if err != nil {
		return nil, usagef("--filter: %v", err)
	}
	rows := append([]dialog.Summary(nil), q.Rows(dialog.ByCreated)...)
	q.MarkInProgress(rows)
	keep := make(map[string]bool)
	for i := range rows {
		r := &rows[i]
		if cfg.CallsOnly && r.Method != "INVITE" {
			continue
		}
		if f != nil && !f.Match(q.Record(r)) {
			continue
		}
		keep[r.CallID] = true
	}
	return func(id string) bool { return keep[id] }, nil
}

// writeOutput writes the run's output to w.
func writeOutput(w io.Writer, out batchOutput, cfg *Config, c *engine.Capture, isTerminal bool) error {
	switch out {
	case outNone:
		return nil
	case outJSONRun:
		return report.WriteJSON(w, c)
	case outReport:
		return report.WriteTextWith(w, c, report.Options{Thresholds: thresholdsOf(cfg)})
	case outAnalyze, outJSONAnalyze:
		return writeAnalysis(w, out, cfg, c)
	}
	sel, err := selectionOf(cfg, c)
	if err != nil {
		return err
	}
	if out == outJSONDialogs {
		_, err = report.WriteDialogsJSON(w, c, sel)
		return err
	}
	sink := messageSink(w, out, cfg, isTerminal)
	if err := report.EachMessage(c, sel, sink.Message); err != nil {
		return err
	}
	return sink.End(c.Status())
}

// messageSink is the per-message output's writer: --json or the text.
func messageSink(w io.Writer, out batchOutput, cfg *Config, isTerminal bool) report.MessageSink {
	if out == outJSON {
		return report.NewMessagesJSON(w)
	}
	return report.NewMessagesText(w, report.MessageTextOptions{
		Raw: cfg.Raw, Hexdump: cfg.Hexdump, DeltaTime: cfg.DeltaTime, ProtoNumbers: cfg.ProtoNumbers,
		PayloadLimit: cfg.PayloadLimit, Color: cfg.Color == "always" || cfg.Color == "auto" && isTerminal,
	})
}

// liveMessages writes the per-message output of a live or HEP run as it
// reads (report.Tail, every tickEvery), then the rest and the closing
// lines when it stops.
type liveMessages struct {
	sink report.MessageSink
	tail *report.Tail
}

// tick returns collect's tick (nil without a live per-message output).
func (l *liveMessages) tick(cfg *Config) func(*engineHandle) error {
	if l == nil {
		return nil
	}
	return func(e *engineHandle) error {
		if l.tail == nil {
			l.tail = report.NewTail(e.capture.Dialogs(), keepOf(cfg, e.capture))
		}
		if err := l.tail.Next(false, l.sink.Message); err != nil {
			return err
		}
		return l.sink.Flush()
	}
}

// end writes what arrived since the last tick and closes the output.
func (l *liveMessages) end(cfg *Config, c *engine.Capture) error {
	if l.tail == nil {
		l.tail = report.NewTail(c.Dialogs(), keepOf(cfg, c))
	}
	if err := l.tail.Next(true, l.sink.Message); err != nil {
		return err
	}
	return l.sink.End(c.Status())
}

// keepOf is --filter and --calls-only for a live run, asked of one
// Call-ID at a time (report.Tail); nil when neither is given.
func keepOf(cfg *Config, c *engine.Capture) func(callID string) bool {
	if cfg.Filter == "" && !cfg.CallsOnly {
		return nil
	}
	var src analysis.MediaSource = media.NewStore(media.Config{})
	if m := c.Media(); m != nil {
		src = m
	}
	q := query.New(c.Dialogs(), src, thresholdsOf(cfg))
	f, _ := q.Compile(cfg.Filter) // checked at startup (checkOutputs)
	return func(id string) bool {
		row, ok := c.Dialogs().Lookup(id)
		if !ok || cfg.CallsOnly && row.Method != "INVITE" {
			return false
		}
		return f == nil || f.Match(q.Record(&row))
	}
}

// writeAnalysis writes --analyze (the rendered findings, the text
// get_capture_report's format text answers) or --json-analyze.
func writeAnalysis(w io.Writer, out batchOutput, cfg *Config, c *engine.Capture) error {
	opts := report.Options{Thresholds: thresholdsOf(cfg)}
	if out == outAnalyze {
		rep, st := report.Analyze(c, opts.Analysis())
		_, err := io.WriteString(w, report.RenderFindings(rep, st.Name, report.FindingsText))
		return err
	}
	return report.WriteAnalysisJSON(w, c, opts)
}

// isTerminal reports whether w is a terminal (--color auto).
func isTerminal(w io.Writer) bool { return report.IsTerminal(w) }

// lintGate runs --lint-fail-on (report.LintGate): it writes what it found
// to w (stderr) and reports whether the gate tripped.
func lintGate(w io.Writer, c *engine.Capture, severity string) (bool, error) {
	sev, _ := lint.ParseSeverity(severity)
	return report.LintGate(w, c, sev)
}
