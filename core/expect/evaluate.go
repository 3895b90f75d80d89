package expect

import (
	"context"
	"fmt"
	"slices"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/query"
)

// Verdicts of a rule and of a suite.
const (
	Pass         = "pass"
	Fail         = "fail"
	Skipped      = "skipped"
	NotEvaluated = "not_evaluated"
)

// Exit codes of a suite: pass 0, fail 1, not_evaluated 2.
const (
	ExitPass         = 0
	ExitFail         = 1
	ExitNotEvaluated = 2
)

// UnevaluablePrefix starts the reason of a rule whose population is empty.
const UnevaluablePrefix = "unevaluable:"

// Units of the metrics.
const (
	UnitDialogs  = "dialogs"
	UnitPercent  = "percent"
	UnitFindings = "findings"
	UnitMOS      = "mos"
)

// Capture is what a suite is judged on.
type Capture struct {
	// Q is the dialog query layer (rows, filters, carrier metrics).
	Q *query.Querier
	// Dialogs is the dialog store, read for lint.
	Dialogs *dialog.Store
	// Media is the stream store; nil when the engine keeps none.
	Media *media.Store
	// Suppression is the lint suppression list applied (nil: none), as
	// --lint-fail-on and lint_dialog apply it.
	Suppression *lint.Suppression
}

// Result is one rule's outcome.
type Result struct {
	Index     int
	Name      string
	Metric    string
	Unit      string
	Op        string
	Threshold float64
	Scope     string
	// Observed is the measured value; nil when the population was empty.
	Observed *float64
	// Sample is the population the value was measured over: dialogs in
	// the capture (count), seizures (asr), dialogs linted (lint_errors),
	// streams scored (mos).
	Sample    int
	MinSample int
	// UngroundedExcluded counts MOS streams left out by grounded_only.
	UngroundedExcluded *int
	Verdict            string
	Reason             string
	Notes              []string
}

// Suite is a suite's outcome.
type Suite struct {
	Verdict                            string
	ExitCode                           int
	Evaluated, Passed, Failed, Skipped int
	DialogsInCapture, StreamsInCapture int
	// SuppressionsApplied counts lint findings the suppression list
	// withheld (lint_errors rules only read it).
	SuppressionsApplied int
	Results             []Result
}

// Evaluate judges every rule on the capture.
func Evaluate(ctx context.Context, c Capture, rules []Compiled) (Suite, error) {
	rows := c.Q.Rows(dialog.ByCreated)
	var streams []media.StreamInfo
	if c.Media != nil {
		streams = c.Media.All()
	}
	s := Suite{DialogsInCapture: len(rows), StreamsInCapture: len(streams)}
	e := &evaluator{c: c, rows: rows, streams: streams}
	for i := range rules {
		if err := ctx.Err(); err != nil {
			return Suite{}, err
		}
		r, err := e.rule(ctx, &rules[i])
		if err != nil {
			return Suite{}, err
		}
		switch r.Verdict {
		case Pass:
			s.Passed++
			s.Evaluated++
		case Fail:
			s.Failed++
			s.Evaluated++
		default:
			s.Skipped++
		}
		s.Results = append(s.Results, r)
	}
	s.SuppressionsApplied = e.suppressed
	switch {
	case s.Failed > 0:
		s.Verdict, s.ExitCode = Fail, ExitFail
	case s.Evaluated > 0:
		s.Verdict, s.ExitCode = Pass, ExitPass
	default:
		s.Verdict, s.ExitCode = NotEvaluated, ExitNotEvaluated
	}
	return s, nil
}

type evaluator struct {
	c       Capture
	rows    []dialog.Summary
	streams []media.StreamInfo
	// lint is every dialog's lint result (all severities), computed once.
	lint       map[string]lint.Result
	suppressed int
}

// matched returns the rows a rule's filter keeps (all without one).
func (e *evaluator) matched(ctx context.Context, r *Compiled) ([]*dialog.Summary, error) {
	out := make([]*dialog.Summary, 0, len(e.rows))
	for i := range e.rows {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		row := &e.rows[i]
		if r.f != nil && !r.f.Match(e.c.Q.Record(row)) {
			continue
		}
		out = append(out, row)
	}
	return out, nil
}

func (e *evaluator) rule(ctx context.Context, r *Compiled) (Result, error) {
	res := Result{Index: r.index, Name: r.Name, Metric: r.Metric, Op: r.Op, Threshold: *r.Value, Scope: r.scopeLabel, MinSample: r.minSample}
	var (
		observed float64
		empty    string // why the population is empty
	)
	switch {
	case r.Metric == MetricCount:
		res.Unit = UnitDialogs
		rows, err := e.matched(ctx, r)
		if err != nil {
			return Result{}, err
		}
		res.Sample = len(e.rows)
		observed = float64(len(rows))
		empty = "the capture holds no dialog"
	case r.Metric == MetricASR:
		res.Unit = UnitPercent
		g, err := e.c.Q.Group(ctx, query.GroupOptions{Filter: r.f, By: query.DimMethod, Metrics: []query.Metric{query.MetricASR}})
		if err != nil {
			return Result{}, err
		}
		for _, gr := range g.Groups {
			if gr.Value == "INVITE" && !gr.Absent {
				res.Sample = gr.Population.Seizures
				if v := gr.Metrics[query.MetricASR]; v != nil {
					observed = *v
				}
			}
		}
		empty = "no INVITE reached an outcome (seizures: a final response, a CANCEL or a timeout) in scope"
	case r.Metric == MetricLintErrors:
		res.Unit = UnitFindings
		rows, err := e.matched(ctx, r)
		if err != nil {
			return Result{}, err
		}
		if err := e.lintAll(ctx); err != nil {
			return Result{}, err
		}
		floor := lint.Error
		if r.hasSev {
			floor = r.sev
		}
		n, withheld := 0, 0
		for _, row := range rows {
			lr, ok := e.lint[row.CallID]
			if !ok {
				continue
			}
			res.Sample++
			withheld += lr.Withheld.Suppressed
			for _, f := range lr.Findings {
				if f.Severity >= floor {
					n++
				}
			}
		}
		observed = float64(n)
		empty = "no dialog in scope to lint"
		if withheld > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%d findings withheld by the suppression list", withheld))
		}
		if capped := e.capped(rows); capped > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("at least %d more findings past the per-rule cap of %d per dialog: observed is a lower bound", capped, lint.DefaultCap))
		}
	default: // mos_p<N>
		res.Unit = UnitMOS
		scores, ungrounded, err := e.mos(ctx, r)
		if err != nil {
			return Result{}, err
		}
		res.Sample = len(scores)
		if r.grounded {
			res.UngroundedExcluded = &ungrounded
		}
		if len(scores) > 0 {
			slices.Sort(scores)
			observed = query.Round2(scores[query.NearestRank(len(scores), max(r.pct, 1))])
			if r.pct == 0 {
				observed = query.Round2(scores[0])
			}
		}
		empty = "no RTP stream in scope has a MOS"
		if r.grounded && ungrounded > 0 {
			empty = fmt.Sprintf("no stream in scope has a grounded MOS (%d ungrounded excluded: their codec's impairment is a placeholder, not a published value)", ungrounded)
		}
	}
	switch {
	case res.Sample == 0 && r.minSample >= 1:
		res.Verdict, res.Reason = Skipped, fmt.Sprintf("skipped: empty population (%s); min_sample %d tolerates it", empty, r.minSample)
	case res.Sample == 0:
		res.Verdict, res.Reason = Fail, UnevaluablePrefix+" "+empty+"; a rule that judged nothing does not pass (set min_sample >= 1 to skip instead)"
	case res.Sample < r.minSample:
		v := observed
		res.Observed = &v
		res.Verdict, res.Reason = Skipped, fmt.Sprintf("skipped: sample %d below min_sample %d", res.Sample, r.minSample)
	default:
		v := observed
		res.Observed = &v
		if compare(r.Op, v, *r.Value) {
			res.Verdict = Pass
			res.Reason = fmt.Sprintf("%s %s %s %s holds", fmtNum(v), res.Unit, r.Op, fmtNum(*r.Value))
		} else {
			res.Verdict = Fail
			res.Reason = fmt.Sprintf("%s %s %s %s does not hold", fmtNum(v), res.Unit, r.Op, fmtNum(*r.Value))
		}
	}
	return res, nil
}

func fmtNum(v float64) string { return fmt.Sprintf("%g", v) }

// lintAll lints every dialog once (all severities; the floor is each
// rule's), as --lint-fail-on does: the dialog's retained messages and its
// attributed streams, the suppression list applied.
func (e *evaluator) lintAll(ctx context.Context) error {
	if e.lint != nil {
		return nil
	}
	e.lint = make(map[string]lint.Result, len(e.rows))
	qi := media.DefaultQualityInterval
	if e.c.Media != nil {
		qi = e.c.Media.Config().QualityInterval
	}
	for i := range e.rows {
		if i%64 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		id := e.rows[i].CallID
		det, ok := e.c.Dialogs.Get(id)
		if !ok {
			continue
		}
		var streams []media.StreamInfo
		if e.c.Media != nil {
			streams = e.c.Media.StreamsFor(id)
		}
		res := lint.Lint(lint.Input{Messages: det.Messages, Streams: streams, QualityInterval: qi},
			lint.Options{SeverityMin: lint.Info, Suppression: e.c.Suppression})
		res.Findings = slices.Clip(res.Findings)
		e.lint[id] = lint.Result{Findings: res.Findings, Withheld: res.Withheld}
		e.suppressed += res.Withheld.Suppressed
	}
	return nil
}

func (e *evaluator) capped(rows []*dialog.Summary) int {
	n := 0
	for _, row := range rows {
		n += e.lint[row.CallID].Withheld.Capped
	}
	return n
}

type streamKey struct{ ssrc, src, dst string }

// mos returns the MOS of the streams in scope (every stream of the
// capture without a filter, the matched dialogs' streams with one), and
// how many ungrounded ones grounded_only left out.
func (e *evaluator) mos(ctx context.Context, r *Compiled) (scores []float64, ungrounded int, err error) {
	var in []media.StreamInfo
	if r.f == nil {
		in = e.streams
	} else if e.c.Media != nil {
		rows, err := e.matched(ctx, r)
		if err != nil {
			return nil, 0, err
		}
		seen := map[streamKey]bool{}
		for _, row := range rows {
			for _, s := range e.c.Media.StreamsFor(row.CallID) {
				k := streamKey{s.SSRC, s.Src, s.Dst}
				if !seen[k] {
					seen[k] = true
					in = append(in, s)
				}
			}
		}
	}
	for i := range in {
		s := &in[i]
		if s.MOS == nil {
			continue
		}
		if r.grounded && !s.MOSGrounded {
			ungrounded++
			continue
		}
		scores = append(scores, *s.MOS)
	}
	return scores, ungrounded, nil
}
