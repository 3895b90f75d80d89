package lint

import (
	"sort"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
)

// DefaultCap is the most findings one rule reports per dialog. A dialog
// retransmitting a bad INVITE eleven times trips a message rule eleven
// times; reporting every one buries the other rules.
const DefaultCap = 25

// MaxObservedBytes bounds the observed text a finding carries (the tools
// cut it further when they fence it).
const MaxObservedBytes = 1024

// Reasons a selected rule was not evaluated.
const (
	// ReasonNoRTP: the stream store attributed no RTP to the dialog, so the
	// observation rules had nothing to compare the SDP against.
	ReasonNoRTP = "no RTP attributed to the dialog"
	// ReasonRTCPPort: the RTCP-mux rule needs the port RTCP landed on, which
	// the stream store folds away; it is never raised.
	ReasonRTCPPort = "needs the port RTCP landed on, which the stream store does not keep"
	// ReasonSingleMessage: validate_message lints one message; dialog and
	// media rules read more than one.
	ReasonSingleMessage = "single-message mode: the rule reads the whole dialog or its media"
)

// rtcpMuxRule is never raised (ReasonRTCPPort).
const rtcpMuxRule = "OBS-5761-5.1.1-RTCP-MUX-UNANSWERED"

// Input is what a dialog is linted on.
type Input struct {
	// Messages are the dialog's retained messages in arrival order
	// (dialog.Detail.Messages).
	Messages []dialog.Message
	// Streams are the RTP streams the stream store attributed to the
	// dialog (media.Store.StreamsFor).
	Streams []media.StreamInfo
	// QualityInterval is the stream store's interval length; 0 means
	// media.DefaultQualityInterval.
	QualityInterval time.Duration
}

// Options tune an evaluation.
type Options struct {
	// Selection picks the rules; nil selects all.
	Selection *Selection
	// SeverityMin withholds findings below it (counted, not reported).
	SeverityMin Severity
	// Suppression withholds findings of the rules it covers (counted, not
	// reported); nil suppresses nothing.
	Suppression *Suppression
	// Cap is the most findings one rule reports per dialog; 0 means
	// DefaultCap.
	Cap int
}

// Finding is one conformance defect.
type Finding struct {
	// RuleID names the rule that fired.
	RuleID string `json:"rule_id"`
	// Severity is the rule's severity.
	Severity Severity `json:"severity"`
	// Basis is the rule's basis.
	Basis Basis `json:"basis"`
	// RFC is the cited RFC's number.
	RFC int `json:"rfc"`
	// Section is the cited section.
	Section string `json:"section"`
	// MessageIndex is the index (within the Call-ID) of the message the
	// finding was drawn from; for a media finding, the message whose SDP
	// made the declaration the RTP contradicts.
	MessageIndex int `json:"message_index"`
	// Observed is what the capture holds: raw text from the wire for
	// message findings (sender-written: fence it before display).
	Observed string `json:"observed"`
	// Expected is what the cited section calls for.
	Expected string `json:"expected"`
	// Explanation says why the difference matters.
	Explanation string `json:"explanation"`
	// FrameRef is the evidence pointer of the message at MessageIndex;
	// empty when unknown.
	FrameRef string `json:"frame_ref,omitempty"`
}

// NotEvaluated groups the selected rules that did not run by reason.
type NotEvaluated struct {
	Reason  string   `json:"reason"`
	RuleIDs []string `json:"rule_ids"`
}

// Withheld counts findings raised but not reported.
type Withheld struct {
	// Suppressed counts findings of suppressed rules (exact).
	Suppressed int `json:"suppressed"`
	// BelowSeverity counts unsuppressed findings below the severity floor
	// (exact).
	BelowSeverity int `json:"below_severity"`
	// Capped counts findings past the per-rule cap: a lower bound.
	Capped int `json:"capped"`
}

// Counts are reported findings per severity.
type Counts struct {
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Notice  int `json:"notice"`
	Info    int `json:"info"`
}

// Result is an evaluation's outcome.
type Result struct {
	// Findings reported, ordered by message index, then catalogue order.
	Findings []Finding
	// Counts are the reported findings per severity.
	Counts Counts
	// NotEvaluated lists selected rules that did not run, by reason.
	NotEvaluated []NotEvaluated
	// Withheld counts findings raised but not reported.
	Withheld Withheld
	// Raised counts every finding each rule raised, before suppression,
	// the severity floor and the cap (rule id → count; rules that raised
	// nothing are absent).
	Raised map[string]int
}

// Lint evaluates the selected rules over a dialog.
func Lint(in Input, opt Options) Result {
	e := newEval(in, opt)
	noRTP := len(in.Streams) == 0
	for i := range catalog {
		if !e.sel.has(i) {
			continue
		}
		r := &catalog[i]
		switch {
		case r.ID == rtcpMuxRule:
			e.skip(ReasonRTCPPort, r.ID)
			continue
		case r.Scope == ScopeMedia && noRTP:
			e.skip(ReasonNoRTP, r.ID)
			continue
		}
		e.run(i, -1)
	}
	return e.finish()
}

// LintMessage evaluates the selected message rules over one message; the
// selected dialog and media rules are listed as not evaluated.
func LintMessage(m dialog.Message, opt Options) Result {
	e := newEval(Input{Messages: []dialog.Message{m}}, opt)
	for i := range catalog {
		if !e.sel.has(i) {
			continue
		}
		if catalog[i].Scope != ScopeMessage {
			e.skip(ReasonSingleMessage, catalog[i].ID)
			continue
		}
		e.run(i, 0)
	}
	return e.finish()
}

type eval struct {
	in     Input
	opt    Options
	sel    *Selection
	d      *dctx
	res    Result
	kept   [RuleCount]int
	order  []int // catalogue position of each kept finding
	skips  map[string][]string
	reason []string
}

func newEval(in Input, opt Options) *eval {
	sel := opt.Selection
	if sel == nil {
		sel, _ = Select(nil)
	}
	if opt.Cap <= 0 {
		opt.Cap = DefaultCap
	}
	if in.QualityInterval <= 0 {
		in.QualityInterval = media.DefaultQualityInterval
	}
	return &eval{
		in: in, opt: opt, sel: sel,
		d:     newDctx(in),
		res:   Result{Findings: []Finding{}, Raised: map[string]int{}},
		skips: map[string][]string{},
	}
}

func (e *eval) skip(reason, id string) {
	if _, ok := e.skips[reason]; !ok {
		e.reason = append(e.reason, reason)
	}
	e.skips[reason] = append(e.skips[reason], id)
}

// run evaluates catalogue rule i; only >= 0 restricts a message rule to one
// message position.
func (e *eval) run(i, only int) {
	r := &catalog[i]
	c, ok := checks[r.ID]
	if !ok {
		return
	}
	report := func(pos int, observed, expected, explanation string) { e.add(i, pos, observed, expected, explanation) }
	switch {
	case c.msg != nil:
		for pos := range e.in.Messages {
			if only >= 0 && pos != only {
				continue
			}
			m := &e.in.Messages[pos]
			if m.Msg == nil {
				continue
			}
			c.msg(m, func(observed, expected, explanation string) { report(pos, observed, expected, explanation) })
		}
	case c.dlg != nil:
		c.dlg(e.d, report)
	}
}

// add files one raised finding: suppressed, below the floor, capped or kept.
// Every raised finding is counted, so suppression never hides work.
func (e *eval) add(i, pos int, observed, expected, explanation string) {
	r := &catalog[i]
	e.res.Raised[r.ID]++
	switch {
	case e.opt.Suppression.Matches(r.ID):
		e.res.Withheld.Suppressed++
		return
	case r.Severity < e.opt.SeverityMin:
		e.res.Withheld.BelowSeverity++
		return
	case e.kept[i] >= e.opt.Cap:
		e.res.Withheld.Capped++
		return
	}
	e.kept[i]++
	m := &e.in.Messages[pos]
	f := Finding{
		RuleID: r.ID, Severity: r.Severity, Basis: r.Basis, RFC: r.RFC, Section: r.Section,
		MessageIndex: m.Index, Observed: clip(observed, MaxObservedBytes),
		Expected: expected, Explanation: explanation,
	}
	if !m.Frame.IsZero() {
		f.FrameRef = m.Frame.String()
	}
	e.res.Findings = append(e.res.Findings, f)
	e.order = append(e.order, i)
	switch r.Severity {
	case Error:
		e.res.Counts.Error++
	case Warning:
		e.res.Counts.Warning++
	case Notice:
		e.res.Counts.Notice++
	default:
		e.res.Counts.Info++
	}
}

func (e *eval) finish() Result {
	idx := make([]int, len(e.res.Findings))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		fa, fb := &e.res.Findings[idx[a]], &e.res.Findings[idx[b]]
		if fa.MessageIndex != fb.MessageIndex {
			return fa.MessageIndex < fb.MessageIndex
		}
		return e.order[idx[a]] < e.order[idx[b]]
	})
	sorted := make([]Finding, len(idx))
	for i, j := range idx {
		sorted[i] = e.res.Findings[j]
	}
	e.res.Findings = sorted
	e.res.NotEvaluated = []NotEvaluated{}
	for _, reason := range e.reason {
		e.res.NotEvaluated = append(e.res.NotEvaluated, NotEvaluated{Reason: reason, RuleIDs: e.skips[reason]})
	}
	return e.res
}

// clip cuts s to at most n bytes on a UTF-8 boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
