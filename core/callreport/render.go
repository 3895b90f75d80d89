package callreport

import (
	"fmt"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// Report renders the per-call report for a person (get_dialog_report
// markdown and text): span, parties, result, timing, the transaction chains
// with relative times, streams, issues and termination cause, and an
// INCOMPLETE RUN block last when the source was not read whole.
func (c *Call) Report(f Format) string {
	var b strings.Builder
	c.writeReport(&b, f)
	c.writeIncomplete(&b, f)
	return b.String()
}

// CallReport renders what `--call-report <Call-ID>` prints and render_ladder
// returns, byte for byte: the per-call report followed by the ladder, with
// the INCOMPLETE RUN block after the drawing so no line of it moves.
func (c *Call) CallReport(f Format) string {
	var b strings.Builder
	c.writeReport(&b, f)
	c.writeLadder(&b, f)
	c.writeIncomplete(&b, f)
	return b.String()
}

// writeReport writes the report sections.
func (c *Call) writeReport(b *strings.Builder, f Format) {
	md := f == Markdown
	d := &c.Detail
	// The Call-ID is an identifier: shown with invisible characters
	// escaped, never dropped, so it can be copied back (textsafe.ID).
	if md {
		fmt.Fprintf(b, "# sipnab call report: %s\n\n| Field | Value |\n|---|---|\n", showID(d.CallID, 200, true))
	} else {
		fmt.Fprintf(b, "sipnab call report: %s\n\n", showID(d.CallID, 200, false))
	}
	field := func(name, value string) {
		if md {
			fmt.Fprintf(b, "| %s | %s |\n", name, value)
		} else {
			fmt.Fprintf(b, "%-10s %s\n", name+":", value)
		}
	}
	esc := func(s string) string {
		if md {
			return mdEscape(s)
		}
		return s
	}

	field("Span", fmt.Sprintf("%s → %s (%.3f s, %s)", stamp(d.CreatedAt), stamp(d.UpdatedAt),
		d.UpdatedAt.Sub(d.CreatedAt).Seconds(), plural(d.MsgCount, "message")))
	if from, to, ok := c.parties(); ok {
		field("From", esc(c.quote(nameAddr(from.Display, from.URI))))
		field("To", esc(c.quote(nameAddr(to.Display, to.URI))))
	}
	if path := c.path(); len(path) > 0 {
		field("Path", esc(strings.Join(path, ", ")))
	}
	result := []string{textsafe.Line(d.Method, 40), d.State}
	if d.FinalStatusCode != 0 {
		result = append(result, strings.TrimSpace(fmt.Sprintf("final %d %s", d.FinalStatusCode, c.quote(textsafe.Line(d.FinalReason, 80)))))
	} else if d.Method == "INVITE" {
		result = append(result, "no final response")
	}
	field("Result", esc(strings.Join(result, ", ")))
	field("Verdict", c.Diagnosis.Verdict)
	field("Timing", c.timingLine())
	if len(c.Legs) > 1 || len(c.Guesses) > 0 || c.LegsTruncated {
		field("Legs", c.legsLine(md))
	}

	// Transactions.
	if md {
		fmt.Fprintf(b, "\n## Transactions (%d)\n\n", len(c.Transactions))
	} else {
		fmt.Fprintf(b, "\nTRANSACTIONS (%d)\n", len(c.Transactions))
	}
	if len(c.Transactions) == 0 {
		c.none(b, md)
	}
	for i := range c.Transactions {
		t := &c.Transactions[i]
		hop := addrs(t.Src, t.Dst)
		line := chain(t)
		if t.Offer != "" {
			line += " - " + t.Offer
		}
		if md {
			fmt.Fprintf(b, "- %s %s\n", mdCode(hop), mdEscape(line))
		} else {
			fmt.Fprintf(b, "  %s  %s\n", hop, line)
		}
	}

	// Streams.
	if md {
		fmt.Fprintf(b, "\n## Streams (%d)\n\n", len(c.Streams))
	} else {
		fmt.Fprintf(b, "\nSTREAMS (%d)\n", len(c.Streams))
	}
	if len(c.Streams) == 0 {
		c.none(b, md)
	} else if md {
		b.WriteString("| SSRC | Source | Destination | Codec | Packets | Lost | Jitter | Duration |\n|---|---|---|---|---|---|---|---|\n")
	}
	for i := range c.Streams {
		s := &c.Streams[i]
		codec := c.quote(textsafe.Line(s.Codec, 40))
		if codec == "" {
			codec = fmt.Sprintf("PT %d", s.PayloadType)
		}
		jit := "-"
		if s.JitterMs != nil {
			jit = fmt.Sprintf("%.2f ms", *s.JitterMs)
		}
		lost := fmt.Sprintf("%d (%.2f%%)", s.Lost, s.LossPct)
		dur := fmt.Sprintf("%.3f s", s.DurationMs/1000)
		if md {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %s | %s | %s |\n", s.SSRC, s.Src, s.Dst, mdEscape(codec), s.Packets, lost, jit, dur)
		} else {
			fmt.Fprintf(b, "  %s  %s → %s  %s  %s, lost %s, jitter %s, %s\n", s.SSRC, s.Src, s.Dst, codec, plural(int(s.Packets), "packet"), lost, jit, dur)
		}
	}

	// Issues.
	issues := c.issues()
	if md {
		fmt.Fprintf(b, "\n## Issues (%d)\n\n", len(issues))
	} else {
		fmt.Fprintf(b, "\nISSUES (%d)\n", len(issues))
	}
	if len(issues) == 0 {
		c.none(b, md)
	}
	for _, s := range issues {
		if md {
			fmt.Fprintf(b, "- %s\n", mdEscape(s))
		} else {
			fmt.Fprintf(b, "  - %s\n", s)
		}
	}

	// Termination.
	if md {
		b.WriteString("\n## Termination\n\n")
	} else {
		b.WriteString("\nTERMINATION\n")
	}
	line := "no message named a cause"
	if t := d.Termination; t != nil {
		line = fmt.Sprintf("%s cause %d from %s", t.Protocol, t.Code, t.SourceHeader)
		if t.Text != "" {
			line += fmt.Sprintf(": \"%s\"", c.quote(textsafe.Line(t.Text, 200)))
		}
		if t.FrameRef != "" {
			line += " (" + t.FrameRef + ")"
		}
	}
	if md {
		fmt.Fprintf(b, "%s\n", mdEscape(line))
	} else {
		fmt.Fprintf(b, "  %s\n", line)
	}
}

func (c *Call) none(b *strings.Builder, md bool) {
	if md {
		b.WriteString("None.\n")
	} else {
		b.WriteString("  none\n")
	}
}

// stamp renders a time for a report: UTC, microseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

func nameAddr(display, uri string) string {
	u := "<" + textsafe.Line(uri, 200) + ">"
	if display == "" {
		return u
	}
	return "\"" + textsafe.Line(display, 100) + "\" " + u
}

// path lists the signaling addresses of the call in order of first
// appearance.
func (c *Call) path() []string {
	var out []string
	seen := map[string]bool{}
	for i := range c.Detail.Messages {
		m := &c.Detail.Messages[i]
		for _, a := range []string{addr(m.Src.String(), m.Src.IsValid()), addr(m.Dst.String(), m.Dst.IsValid())} {
			if a != "" && !seen[a] && len(out) < 16 {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}

func addr(s string, ok bool) string {
	if !ok {
		return ""
	}
	return s
}

func (c *Call) timingLine() string {
	td := &c.Detail.TimingDetail
	// Capture duplicates are named only when there are some, apart from
	// the retransmissions (core/dialog/dup.go).
	dups := ""
	if n := c.Detail.Timing.Duplicates; n > 0 {
		dups = fmt.Sprintf(", capture duplicates %d (not retransmissions)", n)
	}
	if c.Detail.Family != "INVITE" {
		return fmt.Sprintf("not applicable (a %s dialog; call timing is measured on INVITE dialogs), retransmits %d%s",
			textsafe.Line(c.Detail.Family, 20), c.Detail.Timing.Retransmits, dups)
	}
	ms := func(name string, v *int64) string {
		if v == nil {
			return name + " -"
		}
		return fmt.Sprintf("%s %d ms", name, *v)
	}
	parts := []string{ms("trying", td.TryingMs), ms("PDD", td.PDDMs), ms("setup", td.SetupMs),
		ms("ring", td.RingMs), ms("teardown", td.TeardownMs), ms("duration", td.DurationMs),
		fmt.Sprintf("retransmits %d", c.Detail.Timing.Retransmits)}
	if td.AuthWaitMs != nil {
		// The delays run from the credentialed INVITE; the caller's wait
		// after the challenge is shown apart (docs/call-timing.md).
		parts = append(parts, fmt.Sprintf("auth wait %d ms (401/407 to the credentialed INVITE; not in PDD or setup)", *td.AuthWaitMs))
	}
	line := strings.Join(parts, ", ") + dups
	if td.ClockSuspect {
		line += " (a timestamp was substituted: timing may be wrong)"
	}
	return line
}

// legsLine names the call's other legs; Call-IDs are shown with showID,
// the rest escaped for Markdown when md.
func (c *Call) legsLine(md bool) string {
	esc := func(s string) string {
		if md {
			return mdEscape(s)
		}
		return s
	}
	id := func(s string) string { return showID(s, 120, md) }
	var parts []string
	for _, l := range c.Legs[1:] {
		parts = append(parts, esc(l.Label+" ")+id(l.Detail.CallID)+esc(fmt.Sprintf(" (%s, score %d, from ", l.Strategy, l.Score))+id(l.Parent)+esc(")"))
	}
	if c.LegsTruncated {
		parts = append(parts, esc("more legs were found than are drawn"))
	}
	for _, g := range c.Guesses {
		parts = append(parts, esc("timing guess only, not drawn: ")+id(g.CallID)+esc(fmt.Sprintf(" (started %d ms apart)", g.GapMs)))
	}
	if c.GuessesMore > 0 {
		parts = append(parts, esc(fmt.Sprintf("%d more timing guesses (find_correlated lists them)", c.GuessesMore)))
	}
	return strings.Join(parts, esc("; "))
}

// chain renders a transaction: `INVITE → 100 (25ms) → 180 (96ms) → 200 (708ms)`.
func chain(t *Transaction) string {
	var b strings.Builder
	method := textsafe.Line(t.Method, 40)
	if t.RequestSeen {
		b.WriteString(method)
		if t.Copies > 1 {
			fmt.Fprintf(&b, " ×%d", t.Copies)
		}
	} else {
		fmt.Fprintf(&b, "(%s not captured)", method)
	}
	for _, r := range t.Responses {
		fmt.Fprintf(&b, " → %d (%dms)", r.Code, r.After.Milliseconds())
		if r.Copies > 1 {
			fmt.Fprintf(&b, " ×%d", r.Copies)
		}
	}
	return b.String()
}

func addrs(src, dst interface {
	IsValid() bool
	String() string
}) string {
	s, d := "?", "?"
	if src.IsValid() {
		s = src.String()
	}
	if dst.IsValid() {
		d = dst.String()
	}
	return s + " → " + d
}

// issues lists what the diagnosis found, signaling first.
func (c *Call) issues() []string {
	var out []string
	// the clauses the verdict rests on, first
	for _, cl := range c.Diagnosis.Evidence {
		out = append(out, "evidence "+textsafe.Line(cl.String(), 600))
	}
	if s := c.Diagnosis.Signaling; s != nil {
		if ff := s.FinalFailure; ff != nil {
			out = append(out, strings.TrimSpace(fmt.Sprintf("final failure: %d %s (%s)", ff.Code, c.quote(textsafe.Line(ff.Reason, 80)), ff.Class)))
		}
		if ss := s.SlowSetup; ss != nil {
			out = append(out, fmt.Sprintf("slow setup: post-dial delay %.0f ms over %.0f ms", ss.PDDMs, ss.ThresholdMs))
		}
		for _, h := range s.Hints {
			out = append(out, textsafe.Line(h, 300))
		}
	}
	m := &c.Diagnosis.Media
	if !m.Applicable && m.Reason != "" {
		out = append(out, "media not judged: "+textsafe.Line(m.Reason, 200))
	}
	for _, h := range m.Hints {
		out = append(out, textsafe.Line(h, 300))
	}
	return out
}

// writeIncomplete explains why the document may not hold the whole call. It
// is the last block.
func (c *Call) writeIncomplete(b *strings.Builder, f Format) {
	var why []string
	switch {
	case c.Run.SourceStoppedEarly:
		why = append(why, "Reading stopped before the end of the input (a truncated or unreadable file, or a source fault): this call may have more messages than shown.")
	case c.Run.StoppedOnRequest:
		why = append(why, "Reading was stopped on request before the end of the input: this call may have more messages than shown.")
	case !c.Run.SourceExhausted:
		why = append(why, "The source was not read to its end (still loading, or a live source): this call may still change.")
	}
	if n := c.Detail.Bounds.MessagesNotRetained; n > 0 {
		why = append(why, fmt.Sprintf("%s of this call were counted but not kept (the per-dialog retention cap): the transactions and the ladder show the first %d.", plural(n, "message"), c.Detail.Retained))
	}
	if len(why) == 0 {
		return
	}
	for _, e := range c.Run.Errors {
		why = append(why, textsafe.Line(e, 300))
	}
	if f == Markdown {
		b.WriteString("\n## INCOMPLETE RUN\n\n")
		for _, w := range why {
			b.WriteString("- " + mdEscape(w) + "\n")
		}
		return
	}
	b.WriteString("\nINCOMPLETE RUN\n")
	for _, w := range why {
		b.WriteString("  " + w + "\n")
	}
}

// streamNote summarizes a stream for the ladder.
func streamNote(s *media.StreamInfo, rel func(time.Time) string) string {
	jit := ""
	if s.JitterMs != nil {
		jit = fmt.Sprintf(", jitter %.2f ms", *s.JitterMs)
	}
	return fmt.Sprintf("%s, %s, lost %d (%.2f%%)%s, until %s", s.SSRC, plural(int(s.Packets), "packet"), s.Lost, s.LossPct, jit, rel(s.LastSeen))
}
