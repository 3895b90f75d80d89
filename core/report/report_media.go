package report

// This file renders the media half of a capture for people: the capture
// analysis (ranked findings, worst first) as the rendered document of
// get_capture_report (markdown and text), and the WORST STREAMS and FINDINGS
// blocks of `--report`. The assembler (Analyze) is shared by the CLI and the
// MCP tool so the two can never disagree about a capture.

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// Options are the run's settings the reports judge with.
type Options struct {
	// Thresholds are the run's analysis thresholds (--pdd-threshold,
	// --loss-threshold, --jitter-threshold, [analysis]): slow setup,
	// high_loss (loss_pct) and high_jitter (jitter_ms) in the findings, and
	// what WORST STREAMS calls degraded. The short-call and retransmit
	// thresholds are not read by these reports.
	Thresholds filter.Thresholds
}

// DefaultOptions are the defaults: filter.DefaultThresholds (PDD 11 s, loss
// 5 %, jitter 50 ms).
func DefaultOptions() Options { return Options{Thresholds: filter.DefaultThresholds()} }

// Analysis returns the analysis options of the thresholds.
func (o Options) Analysis() analysis.Options {
	loss, jitter := o.Thresholds.LossPct, o.Thresholds.JitterMs
	return analysis.Options{
		SlowSetup:    time.Duration(o.Thresholds.PDDSeconds * float64(time.Second)),
		HighLossPct:  &loss,
		HighJitterMs: &jitter,
	}
}

func (o Options) limits() limits {
	return limits{loss: o.Thresholds.LossPct, jitter: o.Thresholds.JitterMs}
}

// Analyze runs the capture analysis. It reads the capture's status first and
// its stores after, so a report whose flags say the source was read whole
// describes stores read after the load ended; during a load the report says
// complete false. The returned status is the one the report was gated on.
func Analyze(c *engine.Capture, opts analysis.Options) (analysis.Report, engine.Status) {
	st := c.Status()
	var src analysis.MediaSource = c.Media()
	if c.Media() == nil {
		// A custom media sink keeps no streams: judge the dialogs alone.
		src = media.NewStore(media.Config{})
	}
	return analysis.CaptureReportFromStore(c.Dialogs(), src, CaptureFacts(st), opts), st
}

// CaptureFacts is what a capture's status says about reading it, in the
// shape the capture analysis takes: the frame counter, the source flags,
// undecodable frames by reason, and what the dialog store shed (dialogs
// evicted or refused at its cap, messages past the per-dialog cap).
func CaptureFacts(st engine.Status) analysis.CaptureFacts {
	cf := analysis.CaptureFacts{
		FramesRead:         st.FramesRead,
		SourceExhausted:    st.SourceExhausted,
		SourceStoppedEarly: st.SourceStoppedEarly,
		Undecodable:        st.Undecodable,
		DialogsEvicted:     st.Dialogs.Evicted + st.Dialogs.Refused,
		MessagesDropped:    st.Dialogs.MessagesNotRetained,
		SIPMalformed:       st.SIPMalformed,
		MalformedExamples:  malformedExamples(st.SIPMalformedExamples),
		PortGatedSIP:       portGated(st.NotAnalyzed),
	}
	if st.ICMP != nil {
		cf.ICMPUnmatched, cf.ICMPUnmatchedExamples = st.ICMP.Unmatched, st.ICMP.UnmatchedExamples
	}
	return cf
}

// portGated is the port gate's count by port, as the capture analysis
// takes it (nil without a gate or with nothing set aside).
func portGated(na *engine.NotAnalyzed) map[string]uint64 {
	if na == nil || na.SIPMessages == 0 {
		return nil
	}
	out := make(map[string]uint64, len(na.Ports)+1)
	for _, pc := range na.Ports {
		out[strconv.Itoa(int(pc.Port))] = pc.SIPMessages
	}
	if na.PortsDropped > 0 {
		out["other ports"] = na.PortsDropped
	}
	return out
}

func malformedExamples(in []engine.MalformedSIP) []analysis.MalformedExample {
	out := make([]analysis.MalformedExample, 0, len(in))
	for _, x := range in {
		out = append(out, analysis.MalformedExample{Frame: x.Frame, CallID: x.CallID, Reasons: x.Reasons})
	}
	return out
}

// FindingsFormat selects a rendering of the capture analysis.
type FindingsFormat int

const (
	// FindingsText is plain text for a terminal.
	FindingsText FindingsFormat = iota
	// FindingsMarkdown is CommonMark.
	FindingsMarkdown
)

// shedKinds are the findings that say part of the input was not analysed.
var shedKinds = map[string]bool{
	"undecodable": true, "port_gated_sip": true, "streams_evicted": true, "dialogs_evicted": true,
	"messages_dropped": true, "media_endpoints_evicted": true, "rtp_candidates_evicted": true,
}

// RenderFindings renders the capture analysis as a document for a person:
// a title naming the capture, what was examined, the findings worst first
// with their evidence (up to analysis.MaxEvidence rows each, the rest
// counted), and an INCOMPLETE RUN block last whenever the report is not
// complete. A clean capture (complete, nothing found) is one line.
//
// Capture text (Call-IDs, reason phrases) is printed without control
// characters and, in Markdown, escaped so it cannot format the document.
func RenderFindings(r analysis.Report, name string, f FindingsFormat) string {
	return RenderFindingsQuoted(r, name, f, nil)
}

// SenderNote reports whether a finding's evidence notes are text the sender
// wrote whole: a final failure's note is the final response's reason
// phrase (core/analysis). Other notes are sipnab's own words (a kind, a
// port, an SSRC) or a method token.
func SenderNote(f *analysis.Finding) bool {
	return f.Kind == "final_failure" || strings.HasPrefix(f.Kind, "final_failure_")
}

// RenderFindingsQuoted is RenderFindings with quote applied to every
// evidence note the sender wrote whole (SenderNote), after it is made one
// clean line: get_capture_report passes the fence (sdk.Fence through its
// call), so an agent reads a reason phrase inside the untrusted-capture-data
// markers. nil quotes nothing (--report prints to a terminal).
func RenderFindingsQuoted(r analysis.Report, name string, f FindingsFormat, quote func(string) string) string {
	var b strings.Builder
	md := f == FindingsMarkdown
	name = textsafe.Line(name, 200)
	if name == "" {
		name = "capture"
	}
	examined := fmt.Sprintf("%s and %s examined over %s read",
		plural(uint64(r.DialogsExamined), "dialog"), plural(uint64(r.StreamsExamined), "RTP stream"), plural(r.FramesRead, "frame"))
	if r.Clean {
		if md {
			fmt.Fprintf(&b, "**sipnab capture report: %s is clean**: %s; nothing found.\n", mdEscape(name), examined)
		} else {
			fmt.Fprintf(&b, "sipnab capture report: %s is clean: %s; nothing found.\n", name, examined)
		}
		return b.String()
	}
	if md {
		fmt.Fprintf(&b, "# sipnab capture report: %s\n\n%s.\n", mdEscape(name), examined)
	} else {
		fmt.Fprintf(&b, "sipnab capture report: %s\n\n%s.\n", name, examined)
	}
	switch {
	case len(r.Findings) == 0 && md:
		fmt.Fprintf(&b, "\nNo findings in what was read.\n")
	case len(r.Findings) == 0:
		fmt.Fprintf(&b, "\nNo findings in what was read.\n")
	case md:
		fmt.Fprintf(&b, "\n## Findings, worst first (%d)\n", len(r.Findings))
	default:
		fmt.Fprintf(&b, "\nFINDINGS, worst first (%d)\n", len(r.Findings))
	}
	for i := range r.Findings {
		fd := &r.Findings[i]
		if md {
			fmt.Fprintf(&b, "\n### %d. %s: %s, %s\n\n%s%s.\n", i+1, mdEscape(fd.Kind), fd.Severity,
				count(fd.Occurrences, fd.Unit), mdEscape(fd.Summary), mdEscape(thresholdText(fd)))
			if len(fd.Evidence) > 0 || fd.EvidenceOmitted > 0 {
				b.WriteString("\n")
			}
		} else {
			fmt.Fprintf(&b, "\n%d. [%s] %s: %s (%s%s)\n", i+1, fd.Severity, fd.Kind, count(fd.Occurrences, fd.Unit), fd.Summary, thresholdText(fd))
		}
		q := quote
		if !SenderNote(fd) {
			q = nil
		}
		for j := range fd.Evidence {
			if md {
				fmt.Fprintf(&b, "- %s\n", evidenceLine(&fd.Evidence[j], true, q))
			} else {
				fmt.Fprintf(&b, "   - %s\n", evidenceLine(&fd.Evidence[j], false, q))
			}
		}
		if fd.EvidenceOmitted > 0 {
			if md {
				fmt.Fprintf(&b, "- … %d more not listed (evidence_omitted)\n", fd.EvidenceOmitted)
			} else {
				fmt.Fprintf(&b, "   - … %d more not listed (evidence_omitted)\n", fd.EvidenceOmitted)
			}
		}
	}
	if !r.Complete {
		writeIncomplete(&b, r, md)
	}
	return b.String()
}

// writeIncomplete explains why the report is not complete. It is the last
// block: a reader of a rendered report has no exit status and no JSON, and
// a partial report looks like a whole one.
func writeIncomplete(b *strings.Builder, r analysis.Report, md bool) {
	var why []string
	switch {
	case r.SourceStoppedEarly:
		why = append(why, "Reading stopped before the end of the input (a truncated or unreadable file, or a source fault): everything above covers only what was read.")
	case !r.SourceExhausted:
		why = append(why, "The source was not read to its end (still loading, or a live source): everything above covers only what was read so far.")
	}
	var shed []string
	for i := range r.Findings {
		if shedKinds[r.Findings[i].Kind] {
			shed = append(shed, r.Findings[i].Kind)
		}
	}
	if len(shed) > 0 {
		why = append(why, "Part of what was read was not analysed ("+strings.Join(shed, ", ")+"): the findings of that name say how much.")
	}
	if len(why) == 0 {
		why = append(why, "The analysis is not complete: treat the findings above as a lower bound.")
	}
	if md {
		b.WriteString("\n## INCOMPLETE RUN\n\n")
		for _, w := range why {
			b.WriteString("- " + w + "\n")
		}
		return
	}
	b.WriteString("\nINCOMPLETE RUN\n")
	for _, w := range why {
		b.WriteString("  " + w + "\n")
	}
}

// evidenceLine renders one evidence row: Call-ID, time, endpoints, counts
// (sorted by name) and the note.
func evidenceLine(e *analysis.Evidence, md bool, quote func(string) string) string {
	var parts []string
	if e.CallID != "" {
		// An identifier: shown whole, invisible characters escaped
		// visibly, never dropped, so it can be copied back.
		if md {
			parts = append(parts, mdCode(textsafe.ID(e.CallID, 120)))
		} else {
			parts = append(parts, textsafe.ID(e.CallID, 120))
		}
	}
	if e.At != nil {
		parts = append(parts, "at "+e.At.UTC().Format(time.RFC3339Nano))
	}
	if len(e.Endpoints) > 0 {
		eps := make([]string, 0, len(e.Endpoints))
		for _, ep := range e.Endpoints {
			eps = append(eps, textsafe.Line(ep, 80))
		}
		s := strings.Join(eps, ", ")
		if md {
			s = mdEscape(s)
		}
		parts = append(parts, s)
	}
	if len(e.Counts) > 0 {
		keys := make([]string, 0, len(e.Counts))
		for k := range e.Counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		kv := make([]string, 0, len(keys))
		for _, k := range keys {
			kv = append(kv, fmt.Sprintf("%s=%d", k, e.Counts[k]))
		}
		s := strings.Join(kv, " ")
		if md {
			s = mdEscape(s)
		}
		parts = append(parts, s)
	}
	if len(e.Frames) > 0 {
		s := "frames " + strings.Join(e.Frames, " ")
		if md {
			s = mdEscape(s)
		}
		parts = append(parts, s)
	}
	if e.Note != "" {
		// sender text (a reason phrase): no control, bidi or fence code
		// point, as every rendered document prints it
		n := textsafe.Line(e.Note, 200)
		if md {
			n = mdEscape(n)
		}
		if quote != nil {
			n = quote(n)
		}
		parts = append(parts, n)
	}
	if len(parts) == 0 {
		return "(no detail)"
	}
	return strings.Join(parts, "; ")
}

// thresholdText names the limits a finding's rule compared with
// ("; threshold pdd_ms=11000"), "" when it has none.
func thresholdText(f *analysis.Finding) string {
	if len(f.Threshold) == 0 {
		return ""
	}
	keys := make([]string, 0, len(f.Threshold))
	for k := range f.Threshold {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kv := make([]string, 0, len(keys))
	for _, k := range keys {
		kv = append(kv, k+"="+strconv.FormatFloat(f.Threshold[k], 'g', -1, 64))
	}
	return "; threshold " + strings.Join(kv, " ")
}

// count renders an occurrence count with its unit, singular for one.
func count(n int64, unit string) string {
	if n == 1 {
		switch {
		case strings.HasSuffix(unit, "ies"):
			unit = strings.TrimSuffix(unit, "ies") + "y"
		default:
			unit = strings.TrimSuffix(unit, "s")
		}
	}
	return fmt.Sprintf("%d %s", n, unit)
}

// mdEscape backslash-escapes the characters that would format Markdown, so
// capture text renders as the text it is.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>#|~&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdCode wraps s in a code span whose backtick fence is longer than any run
// of backticks inside it (CommonMark), padded when s starts or ends with one.
func mdCode(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// WorstStreams returns up to n streams, worst first: streams over a
// threshold (loss above 5 %, jitter_ms above 50 ms, or a grounded score
// under R 70) before the others; then by grounded MOS (lowest first; a
// placeholder score ranks after every grounded one), loss and jitter_ms
// (highest first), then first_seen.
func WorstStreams(streams []media.StreamInfo, n int) []media.StreamInfo {
	return worstStreams(streams, n, DefaultOptions().limits())
}

// limits are the loss_pct and jitter_ms thresholds a report judges with.
type limits struct{ loss, jitter float64 }

func worstStreams(streams []media.StreamInfo, n int, lim limits) []media.StreamInfo {
	idx := make([]int, len(streams))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := &streams[idx[a]], &streams[idx[b]]
		if dx, dy := degraded(x, lim), degraded(y, lim); dx != dy {
			return dx
		}
		mx, my := groundedMOS(x), groundedMOS(y)
		if mx != my {
			return mx < my
		}
		if x.LossPct != y.LossPct {
			return x.LossPct > y.LossPct
		}
		if jx, jy := deref(x.JitterMs), deref(y.JitterMs); jx != jy {
			return jx > jy
		}
		return x.FirstSeen.Before(y.FirstSeen)
	})
	if n > len(idx) {
		n = len(idx)
	}
	out := make([]media.StreamInfo, 0, n)
	for _, i := range idx[:n] {
		out = append(out, streams[i])
	}
	return out
}

// StreamProblems names what makes a stream degraded at the default
// thresholds, empty when nothing.
func StreamProblems(s *media.StreamInfo) []string {
	return streamProblems(s, DefaultOptions().limits())
}

func streamProblems(s *media.StreamInfo, lim limits) []string {
	var p []string
	if s.LossPct > lim.loss {
		p = append(p, fmt.Sprintf("loss %.2f%% > %g%%", s.LossPct, lim.loss))
	}
	if s.JitterMs != nil && *s.JitterMs > lim.jitter {
		p = append(p, fmt.Sprintf("jitter %.1f ms > %g ms", *s.JitterMs, lim.jitter))
	}
	if s.MOSGrounded && s.RFactor != nil && *s.RFactor < media.AcceptableRMin {
		p = append(p, fmt.Sprintf("R %.1f < %.0f", *s.RFactor, media.AcceptableRMin))
	}
	return p
}

func degraded(s *media.StreamInfo, lim limits) bool { return len(streamProblems(s, lim)) > 0 }

// streamCall is a stream's Call-ID cell: "(orphaned)", or its dialog's
// Call-ID, with "(+N)" when N other dialogs share it (a B2BUA's legs).
func streamCall(s *media.StreamInfo) string {
	if s.Orphaned {
		return "(orphaned)"
	}
	c := textsafe.ID(s.AssociatedDialog, 48)
	if n := len(s.SharedWith); n > 0 {
		c += fmt.Sprintf(" (+%d)", n)
	}
	return c
}

func groundedMOS(s *media.StreamInfo) float64 {
	if s.MOS == nil || !s.MOSGrounded {
		return math.Inf(1)
	}
	return *s.MOS
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// worstShown is how many streams the WORST STREAMS block lists.
const worstShown = 5

// findingsEvidenceShown is how many evidence rows per finding --report lists.
const findingsEvidenceShown = 3

// WriteMediaText writes the blocks of `--report` that read at a glance what
// the streams and the capture analysis say: WORST STREAMS (up to five,
// worst first, with what makes each one bad) and FINDINGS (every finding,
// worst first, with up to three evidence rows each). It writes nothing
// about completeness: the INCOMPLETE RUN block of the report covers it.
//
// It judges streams at the default thresholds; writeMediaText takes the
// run's.
func WriteMediaText(w io.Writer, doc *Document, r analysis.Report) {
	writeMediaText(w, doc, r, DefaultOptions().limits())
}

func writeMediaText(w io.Writer, doc *Document, r analysis.Report, lim limits) {
	worst := worstStreams(doc.Streams, worstShown, lim)
	bad := 0
	for i := range doc.Streams {
		if degraded(&doc.Streams[i], lim) {
			bad++
		}
	}
	fmt.Fprintf(w, "\nWORST STREAMS (%d of %d degraded)\n", bad, len(doc.Streams))
	if len(worst) == 0 {
		fmt.Fprintf(w, "  none\n")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  SSRC\tSource\tDestination\tMOS\tLoss\tJitter\tMax jitter\tProblems\tCall-ID\n")
		for i := range worst {
			s := &worst[i]
			mosText, jit, jmax := "-", "-", "-"
			if s.MOS != nil {
				mosText = fmt.Sprintf("%.2f", *s.MOS)
				if !s.MOSGrounded {
					mosText += " (not grounded)"
				}
			}
			if s.JitterMs != nil {
				jit = fmt.Sprintf("%.2fms", *s.JitterMs)
			}
			if s.JitterMaxMs != nil {
				jmax = fmt.Sprintf("%.2fms", *s.JitterMaxMs)
			}
			probs := strings.Join(streamProblems(s, lim), ", ")
			call := streamCall(s)
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.2f%%\t%s\t%s\t%s\t%s\n", s.SSRC, s.Src, s.Dst, mosText, s.LossPct, jit, jmax, dash(probs), call)
		}
		tw.Flush()
		writeBurstGap(w, worst)
	}

	fmt.Fprintf(w, "\nFINDINGS (%d), worst first\n", len(r.Findings))
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "  none\n")
		return
	}
	for i := range r.Findings {
		fd := &r.Findings[i]
		fmt.Fprintf(w, "  [%s] %s: %s (%s%s)\n", fd.Severity, fd.Kind, count(fd.Occurrences, fd.Unit), fd.Summary, thresholdText(fd))
		shown := min(len(fd.Evidence), findingsEvidenceShown)
		for j := 0; j < shown; j++ {
			fmt.Fprintf(w, "      %s\n", evidenceLine(&fd.Evidence[j], false, nil))
		}
		if more := int64(len(fd.Evidence)-shown) + fd.EvidenceOmitted; more > 0 {
			fmt.Fprintf(w, "      … %d more\n", more)
		}
	}
}
