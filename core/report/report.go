// Package report renders a capture for batch output: the JSON document of
// `sipnab -N -I FILE --json-run` and the text summary of `--report`.
//
// Both read the capture's status first and its stores after, so a document
// whose run says complete describes stores that were read after the load
// ended. Rows use the shapes every other surface uses: dialog rows are
// dialog.Summary (the list_dialogs row), streams are media.StreamInfo (the
// rtp_stats stream).
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/stun"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// SchemaVersion is the version of the batch JSON document.
const SchemaVersion = 1

// Document is the batch JSON document.
type Document struct {
	// SchemaVersion is bumped on an incompatible change.
	SchemaVersion int `json:"schema_version"`
	// Run is what was read and how: counters, source flags, inputs.
	Run engine.Status `json:"run"`
	// Dialogs are the dialog rows, in created_at order.
	Dialogs []DialogRow `json:"dialogs"`
	// Streams are the RTP streams, in first_seen order.
	Streams []media.StreamInfo `json:"streams"`
	// STUN is the STUN/TURN/ICE evidence (core/stun): transactions by
	// method, unanswered requests, NAT mappings, TURN allocations with
	// their channels and lapse, ICE pairs, nominations and role conflicts.
	// Absent when the capture held no STUN or TURN.
	STUN *stun.Report `json:"stun,omitempty"`
}

// stunReport is the capture's STUN evidence as of its end, nil when it
// holds none.
func stunReport(c *engine.Capture, end time.Time) *stun.Report {
	t := c.STUN()
	if t == nil || !t.Stats().Any() {
		return nil
	}
	r := t.Report(end)
	return &r
}

// DialogRow is one dialog of the batch document: the dialog store's row,
// completed for a call still in progress when the capture ended (ended,
// duration_to_capture_end_ms: dialog.Store.MarkInProgress, the same the MCP
// row tools apply).
type DialogRow struct {
	dialog.Summary

	// failCode is the final failure's code (4xx-6xx) of a dialog without an
	// INVITE final (REGISTER 401/403, SUBSCRIBE 489, ...): the code the
	// diagnosis's final_failure names, for the text report's Code column.
	failCode int
	// frame is the row's frame pointer while Summary.Frame is empty
	// (dialog.Store.EachRow): the appender writes it as Frame would be
	// written, and withFrame makes Frame of it for encoding/json.
	frame packet.FrameRef
}

// withFrame returns r with Frame set from frame, as encoding/json must see
// it.
func (r *DialogRow) withFrame() *DialogRow {
	if r.Frame == "" && !r.frame.IsZero() {
		r.Frame = r.frame.String()
	}
	return r
}

// rows makes DialogRows: it knows where the capture ends.
type rows struct {
	ds  *dialog.Store
	end time.Time
}

func newRows(c *engine.Capture) rows {
	var src analysis.MediaSource
	if m := c.Media(); m != nil {
		src = m
	} else {
		src = media.NewStore(media.Config{})
	}
	return rows{ds: c.Dialogs(), end: analysis.CaptureEnd(c.Dialogs(), src)}
}

// row completes one summary: an InCall dialog's duration to the capture's
// end.
func (r rows) row(s *dialog.Summary) DialogRow {
	out := DialogRow{Summary: *s}
	r.ds.MarkInProgress(&out.Summary, r.end)
	return out
}

// rowRef is row for a summary of dialog.Store.EachRow and its frame
// pointer.
func (r rows) rowRef(s *dialog.Summary, ref packet.FrameRef) DialogRow {
	out := r.row(s)
	out.frame = ref
	return out
}

// Build assembles the document of a capture.
func Build(c *engine.Capture) Document {
	doc := Document{SchemaVersion: SchemaVersion, Run: c.Status()}
	rs := newRows(c)
	sums := c.Dialogs().Summaries(dialog.ByCreated)
	doc.Dialogs = make([]DialogRow, 0, len(sums))
	for i := range sums {
		doc.Dialogs = append(doc.Dialogs, rs.row(&sums[i]))
	}
	if m := c.Media(); m != nil {
		doc.Streams = m.All()
	}
	if doc.Streams == nil {
		doc.Streams = []media.StreamInfo{}
	}
	doc.STUN = stunReport(c, rs.end)
	return doc
}

// WriteJSON writes the batch JSON document of a capture (measurements only:
// it judges nothing, so it takes no thresholds): Build's Document,
// byte for byte as encoding/json writes it (two-space indent, HTML
// characters unescaped, a final newline), but streamed: the run first, then
// one dialog row and one stream at a time, so the document never exists in
// memory whole (it is 4 KB a call with two streams).
func WriteJSON(w io.Writer, c *engine.Capture) error {
	st := c.Status()
	jw := newJSONWriter(w)
	jw.raw("{\n  \"schema_version\": ")
	jw.value(SchemaVersion, "  ")
	jw.raw(",\n  \"run\": ")
	jw.value(&st, "  ")
	jw.raw(",\n  \"dialogs\": ")
	jw.open()
	rs := newRows(c)
	// One row reused for every dialog: should a row fall back to
	// encoding/json (rowElem), its encoder takes it as an interface, so a
	// row made per dialog would escape to the heap.
	var r DialogRow
	if err := c.Dialogs().EachRow(dialog.ByCreated, func(s *dialog.Summary, ref packet.FrameRef) error {
		r = rs.rowRef(s, ref)
		jw.rowElem(&r)
		return jw.err
	}); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	jw.close()
	jw.raw(",\n  \"streams\": ")
	jw.open()
	if m := c.Media(); m != nil {
		if err := m.Each(func(s *media.StreamInfo) error {
			jw.elem(s)
			return jw.err
		}); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
	}
	jw.close()
	if r := stunReport(c, rs.end); r != nil {
		jw.raw(",\n  \"stun\": ")
		jw.value(r, "  ")
	}
	jw.raw("\n}\n")
	if err := jw.flush(); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// jsonWriter writes a two-level indented JSON document piece by piece, as
// json.Encoder with SetIndent("", "  ") writes it whole: each value is
// encoded on its own with the prefix of its depth.
type jsonWriter struct {
	w   *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder // compact, into buf; indented by appendIndented
	ind []byte        // the indented value
	n   int           // elements in the open array
	err error
}

func newJSONWriter(w io.Writer) *jsonWriter {
	return &jsonWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

func (j *jsonWriter) raw(s string) {
	if j.err == nil {
		_, j.err = j.w.WriteString(s)
	}
}

// value writes v as it appears after a key or in an array at prefix.
func (j *jsonWriter) value(v any, prefix string) {
	if j.err != nil {
		return
	}
	if j.enc == nil {
		j.enc = json.NewEncoder(&j.buf)
		j.enc.SetEscapeHTML(false)
	}
	j.buf.Reset()
	if j.err = j.enc.Encode(v); j.err != nil {
		return
	}
	// Indented here rather than by SetIndent, whose validating scanner
	// cost as much as the encoding; the bytes are the same.
	j.ind = appendIndented(j.ind[:0], j.buf.Bytes(), prefix, "  ")
	_, j.err = j.w.Write(j.ind)
}

// open starts an array (written "[]" when no element follows).
func (j *jsonWriter) open() {
	j.n = 0
	j.raw("[")
}

func (j *jsonWriter) elem(v any) {
	if j.n > 0 {
		j.raw(",")
	}
	j.n++
	j.raw("\n    ")
	j.value(v, "    ")
}

// rowElem is elem for a dialog row, written by the row appender
// (rowjson.go): the same bytes, without encoding/json's reflection. A row
// the appender cannot write as encoding/json would (a value it refuses)
// goes through elem, which returns encoding/json's error.
func (j *jsonWriter) rowElem(r *DialogRow) {
	if j.err != nil {
		return
	}
	b := j.ind[:0]
	if j.n > 0 {
		b = append(b, ',')
	}
	b = append(b, "\n    "...)
	b, ok := appendRowJSON(b, r, true)
	j.ind = b
	if !ok {
		j.elem(r.withFrame())
		return
	}
	j.n++
	_, j.err = j.w.Write(b)
}

func (j *jsonWriter) close() {
	if j.n > 0 {
		j.raw("\n  ")
	}
	j.raw("]")
}

func (j *jsonWriter) flush() error {
	if j.err != nil {
		return j.err
	}
	return j.w.Flush()
}

// WriteText writes a summary of a capture for a person: the run, a table
// of dialogs, the streams, the worst streams and the findings of the
// capture analysis (worst first), what could not be decoded, and an
// INCOMPLETE RUN block when the source was not read whole. It judges at
// the default thresholds: WriteTextWith takes the run's.
func WriteText(w io.Writer, c *engine.Capture) error {
	return WriteTextWith(w, c, DefaultOptions())
}

// WriteTextWith is WriteText judging with the run's thresholds: slow
// setup, high loss and high jitter in FINDINGS, and which streams WORST
// STREAMS calls degraded.
//
// The dialog rows are read from the store twice, a row at a time (the
// DIALOGS table's column widths, then the table), never held all at once:
// the report of a large capture costs the analysis's memory, not a copy of
// every row.
func WriteTextWith(w io.Writer, c *engine.Capture, opts Options) error {
	st := c.Status()
	rs := newRows(c)
	doc := Document{SchemaVersion: SchemaVersion, Run: st}
	if m := c.Media(); m != nil {
		doc.Streams = m.All()
	}
	doc.STUN = stunReport(c, rs.end)
	rep, _ := Analyze(c, opts.Analysis())
	ew := &errWriter{w: w}
	writeTextFrom(ew, &doc, storeRows{c: c, rs: rs, ao: opts.Analysis(), codes: map[string]int{}}, &rep, opts)
	if ew.err != nil {
		return fmt.Errorf("writing report: %w", ew.err)
	}
	return nil
}

// dialogRows are the rows the text report lists: a document's, or a
// store's read as they are written.
type dialogRows interface {
	// each calls fn with every row in created_at order; the row is valid
	// during the call only.
	each(fn func(*DialogRow))
}

// docRows are a built document's rows.
type docRows []DialogRow

func (d docRows) each(fn func(*DialogRow)) {
	for i := range d {
		fn(&d[i])
	}
}

// storeRows are a capture's rows, made one at a time as Build and
// textDocument make them: the row completed to the capture's end, and the
// failure code of a dialog without an INVITE final.
type storeRows struct {
	c  *engine.Capture
	rs rows
	ao analysis.Options
	// codes are the failure codes the first walk diagnosed, by Call-ID
	// (rows without an INVITE final only): the table's walk reads them
	// instead of diagnosing each such dialog again. Nil: not kept.
	codes map[string]int
}

func (s storeRows) each(fn func(*DialogRow)) {
	var src analysis.MediaSource = media.NewStore(media.Config{})
	if m := s.c.Media(); m != nil {
		src = m
	}
	var r DialogRow
	var sc dialog.Scratch
	_ = s.c.Dialogs().EachSummary(dialog.ByCreated, func(sum *dialog.Summary) error {
		r = s.rs.row(sum)
		if r.FinalStatusCode == 0 {
			code, ok := s.codes[r.CallID]
			if !ok {
				code = failCodeOf(s.c, src, s.ao, &r, &sc)
				if s.codes != nil {
					s.codes[r.CallID] = code
				}
			}
			r.failCode = code
		}
		fn(&r)
		return nil
	})
}

// failCodeOf is the final failure's code of a row without an INVITE final
// (0 when it has one, or none failed). The dialog's messages are rebuilt
// into sc: the facts keep none of them but their strings.
func failCodeOf(c *engine.Capture, src analysis.MediaSource, ao analysis.Options, r *DialogRow, sc *dialog.Scratch) int {
	if r.FinalStatusCode != 0 {
		return 0
	}
	d, ok := c.Dialogs().GetWith(r.CallID, dialog.Options{Scratch: sc})
	if !ok {
		return 0
	}
	if s := analysis.Diagnose(analysis.FactsFrom(d), src, ao).Signaling; s != nil && s.FinalFailure != nil {
		return s.FinalFailure.Code
	}
	return 0
}

// textDocument builds what the text report renders: the document, each
// dialog's failure code when it has no INVITE final, and the analysis.
func textDocument(c *engine.Capture, opts Options) (Document, analysis.Report) {
	doc := Build(c)
	rep, _ := Analyze(c, opts.Analysis())
	var src analysis.MediaSource = media.NewStore(media.Config{})
	if m := c.Media(); m != nil {
		src = m
	}
	ao := opts.Analysis()
	var sc dialog.Scratch
	for i := range doc.Dialogs {
		doc.Dialogs[i].failCode = failCodeOf(c, src, ao, &doc.Dialogs[i], &sc)
	}
	return doc, rep
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// writeText renders the text summary; rep, when not nil, adds the WORST
// STREAMS and FINDINGS blocks after the streams.
func writeText(w io.Writer, doc *Document, rep *analysis.Report, opts Options) {
	writeTextFrom(w, doc, docRows(doc.Dialogs), rep, opts)
}

// writeTextFrom is writeText with the dialog rows read from dialogs (doc's
// own are not read).
func writeTextFrom(w io.Writer, doc *Document, dialogs dialogRows, rep *analysis.Report, opts Options) {
	// The DIALOGS table's first walk: the row count and column widths.
	var tab dialogTable
	nDialogs := 0
	tab.measure(dialogHeader)
	dialogs.each(func(d *DialogRow) {
		nDialogs++
		tab.measure(tab.cells(d))
	})
	r := &doc.Run
	name := r.Name
	if name == "" {
		name = r.Source
	}
	fmt.Fprintf(w, "sipnab report: %s\n\n", textsafe.Line(name, 200))
	// Capture duplicates are named only when there are some (the line is
	// unchanged on captures without), and always apart from the
	// retransmissions (core/dialog/dup.go).
	dups := ""
	if r.SIPDuplicates > 0 {
		dups = fmt.Sprintf(", %d capture duplicates", r.SIPDuplicates)
	}
	fmt.Fprintf(w, "Read %s (%d bytes) in %.2f s: %s (%d malformed, %d retransmissions%s), %s, %s.\n",
		plural(r.FramesRead, "frame"), r.Bytes, r.ElapsedSec, plural(r.SIPMessages, "SIP message"),
		r.SIPMalformed, r.SIPRetransmissions, dups, plural(uint64(nDialogs), "dialog"), plural(uint64(len(doc.Streams)), "RTP stream"))
	if r.SIPWithoutCallID > 0 {
		fmt.Fprintf(w, "%d SIP messages carried no Call-ID and belong to no dialog.\n", r.SIPWithoutCallID)
	}
	if r.OtherTrafficFrames > 0 {
		// Traffic that could not carry SIP or RTP: counted, not undecodable.
		var kinds []string
		for _, rc := range r.OtherTrafficKinds() {
			kinds = append(kinds, fmt.Sprintf("%s %d", rc.Name, rc.Count))
		}
		fmt.Fprintf(w, "%s of other traffic (not SIP or RTP, set aside): %s.\n", plural(r.OtherTrafficFrames, "frame"), strings.Join(kinds, ", "))
	}
	if capEvicted := r.Dialogs.Evicted - r.Dialogs.EvictedForBytes; capEvicted > 0 || r.Dialogs.Refused > 0 {
		fmt.Fprintf(w, "The dialog store was full: %d dialogs evicted (least recently updated first), %d refused.\n", capEvicted, r.Dialogs.Refused)
	}
	if r.Dialogs.EvictedForBytes > 0 {
		fmt.Fprintf(w, "The dialog store reached its byte budget (%d MiB, --max-store-mb): %s evicted, least recently updated first.\n",
			r.Dialogs.MaxBytes>>20, plural(r.Dialogs.EvictedForBytes, "dialog"))
	}
	writeHEPListeners(w, r.HEP.Listeners)

	fmt.Fprintf(w, "\nDIALOGS (%d)\n", nDialogs)
	if nDialogs == 0 {
		fmt.Fprintf(w, "  none\n")
	} else {
		// The second walk writes the rows, aligned as the first measured.
		tab.write(w, dialogHeader)
		open := 0
		dialogs.each(func(d *DialogRow) {
			if d.DurationToCaptureEndMs != nil {
				open++
			}
			tab.write(w, tab.cells(d))
		})
		if open > 0 {
			fmt.Fprintf(w, "  + still in call when the capture ended: answer to the capture's last packet (no BYE seen).\n")
		}
	}

	fmt.Fprintf(w, "\nSTREAMS (%d)\n", len(doc.Streams))
	if len(doc.Streams) == 0 {
		fmt.Fprintf(w, "  none\n")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  SSRC\tSource\tDestination\tCodec\tPackets\tLost\tLoss\tJitter\tMOS\tCall-ID\n")
		for i := range doc.Streams {
			s := &doc.Streams[i]
			jit, mos := "-", "-"
			if s.JitterMs != nil {
				jit = fmt.Sprintf("%.2fms", *s.JitterMs)
			}
			if s.MOS != nil {
				mos = fmt.Sprintf("%.2f", *s.MOS)
				if !s.MOSGrounded {
					mos += " (not grounded)"
				}
			}
			call := streamCall(s)
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%.2f%%\t%s\t%s\t%s\n",
				s.SSRC, s.Src, s.Dst, dash(textsafe.Line(s.Codec, 20)), s.Packets, s.Lost, s.LossPct, jit, mos, call)
		}
		tw.Flush()
	}

	if rep != nil {
		writeMediaText(w, doc, *rep, opts.limits())
	}
	writeSTUN(w, doc.STUN)
	writeEgress(w, r.Egress)

	if r.UndecodableFrames > 0 {
		fmt.Fprintf(w, "\nNOT DECODED\n")
		fmt.Fprintf(w, "  %d frames could not be decoded; what they carried is not in this report.\n", r.UndecodableFrames)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, rc := range r.UndecodableReasons() {
			fmt.Fprintf(tw, "    %s\t%d\n", rc.Name, rc.Count)
		}
		tw.Flush()
	}

	if na := r.NotAnalyzed; na != nil && na.SIPMessages > 0 {
		writeNotAnalyzed(w, na)
	}

	if !r.Complete {
		fmt.Fprintf(w, "\nINCOMPLETE RUN\n")
		var ms media.Stats
		if r.Media != nil {
			ms = *r.Media
		}
		for _, why := range r.IncompleteReasons {
			switch why {
			case "source_stopped_early":
				fmt.Fprintf(w, "  Reading stopped before the end of the input; everything above covers only what was read.\n")
			case "stopped_on_request":
				fmt.Fprintf(w, "  Reading was stopped on request before the end of the input; everything above covers only what was read.\n")
			case "source_not_exhausted":
				fmt.Fprintf(w, "  The source was not read to its end (still loading, or a live source); everything above covers only what was read so far.\n")
			case "dialogs_evicted":
				if n := r.Dialogs.Evicted - r.Dialogs.EvictedForBytes; n > 0 {
					fmt.Fprintf(w, "  %s evicted at the dialog cap (--limit): their calls are not above.\n", plural(n, "dialog"))
				}
				if n := r.Dialogs.EvictedForBytes; n > 0 {
					fmt.Fprintf(w, "  %s evicted at the store's byte budget (--max-store-mb): their calls are not above.\n", plural(n, "dialog"))
				}
			case "dialogs_refused":
				fmt.Fprintf(w, "  %s refused at the dialog cap (%s not analysed).\n", plural(r.Dialogs.Refused, "new Call-ID"), plural(r.Dialogs.RefusedMessages, "message"))
			case "messages_not_retained":
				fmt.Fprintf(w, "  %s past the per-dialog retention cap counted, not kept.\n", plural(r.Dialogs.MessagesNotRetained, "SIP message"))
			case "hep_data_lost":
				fmt.Fprintf(w, "  %s a HEP sender meant to deliver were refused or dropped (the HEP listener lines above say why).\n", plural(r.HEP.Lost(), "datagram"))
			case "streams_evicted":
				fmt.Fprintf(w, "  %s evicted at the stream cap (--max-streams): their media is not above.\n", plural(ms.StreamsEvicted, "stream"))
			case "media_endpoints_evicted":
				fmt.Fprintf(w, "  %s forgotten at the cap: later RTP to them reads as orphaned.\n", plural(ms.EndpointsEvicted, "SDP media endpoint"))
			case "rtp_candidates_evicted":
				fmt.Fprintf(w, "  %s dropped before they proved to be RTP.\n", plural(ms.CandidatesEvicted, "unsignaled flow"))
			case "sip_not_analyzed":
				fmt.Fprintf(w, "  %s outside the SIP ports not analysed (NOT ANALYZED above): their calls are not above.\n", plural(r.NotAnalyzed.SIPMessages, "SIP message"))
			default:
				fmt.Fprintf(w, "  %s.\n", why)
			}
		}
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  - %s\n", textsafe.Line(e, 300))
		}
	}
}

func plural(n uint64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeHEPListeners says what each HEP listener refused, dropped or held
// back, when it did (core/heplisten): nothing a sender meant to deliver is
// lost without a line here.
func writeHEPListeners(w io.Writer, ls []engine.HEPListener) {
	for _, l := range ls {
		var kernel uint64
		if l.KernelDropped != nil {
			kernel = *l.KernelDropped
		}
		if l.RefusedTotal() == 0 && kernel == 0 && l.TCPThrottled == 0 && l.TCPIdleReaped == 0 && l.ReadErrors == 0 {
			continue
		}
		var parts []string
		if n := l.RefusedTotal(); n > 0 {
			keys := make([]string, 0, len(l.Refused))
			for k := range l.Refused {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var by []string
			for _, k := range keys {
				by = append(by, fmt.Sprintf("%s %d", k, l.Refused[k]))
			}
			parts = append(parts, fmt.Sprintf("%d refused (%s)", n, strings.Join(by, ", ")))
		}
		if kernel > 0 {
			parts = append(parts, fmt.Sprintf("%d dropped by the kernel at a full receive buffer", kernel))
		}
		if l.ReadErrors > 0 {
			parts = append(parts, fmt.Sprintf("%d read errors", l.ReadErrors))
		}
		if l.TCPThrottled > 0 {
			parts = append(parts, fmt.Sprintf("%d TCP messages held back %d ms by the rate budget (delivered)", l.TCPThrottled, l.TCPThrottledMS))
		}
		if l.TCPIdleReaped > 0 {
			parts = append(parts, fmt.Sprintf("%d idle TCP connections closed at the connection cap", l.TCPIdleReaped))
		}
		fmt.Fprintf(w, "HEP listener %s: %d received, %d admitted; %s; %d lost.\n",
			textsafe.Line(l.Name, 120), l.Received, l.Admitted, strings.Join(parts, "; "), l.Lost)
	}
}

// maxNotAnalyzedPorts is how many of the busiest ports the NOT ANALYZED
// block names; the JSON document's run.not_analyzed has them all.
const maxNotAnalyzedPorts = 10

// writeNotAnalyzed writes the port gate's account (engine.md §1): how many
// SIP messages were set aside, the busiest ports, and the flag that would
// analyse them.
func writeNotAnalyzed(w io.Writer, na *engine.NotAnalyzed) {
	fmt.Fprintf(w, "\nNOT ANALYZED\n")
	fmt.Fprintf(w, "  %s on neither a SIP port (--portrange %s) nor, over WebSocket, a WebSocket port (--ws-portrange %s): counted, not analysed.\n",
		plural(na.SIPMessages, "SIP message"), na.SIPPortRange, na.WSPortRange)
	var ports []string
	for i, pc := range na.Ports {
		if i == maxNotAnalyzedPorts {
			ports = append(ports, fmt.Sprintf("%d more ports", len(na.Ports)-i))
			break
		}
		ports = append(ports, fmt.Sprintf("%d (%d)", pc.Port, pc.SIPMessages))
	}
	if na.PortsDropped > 0 {
		ports = append(ports, fmt.Sprintf("%d on ports past the table", na.PortsDropped))
	}
	fmt.Fprintf(w, "  Busiest ports (the lower of the two): %s.\n", strings.Join(ports, ", "))
	if len(na.Ports) > 0 {
		fmt.Fprintf(w, "  To analyse them: --portrange %s,%d\n", na.SIPPortRange, na.Ports[0].Port)
	}
}

// dialogCells are the cells of one DIALOGS line: the first seven are
// aligned, the last (PDD) ends the line.
type dialogCells [8]string

var dialogHeader = dialogCells{"  Call-ID", "From", "To", "State", "Code", "Duration", "Msgs", "PDD"}

// dialogTable writes the DIALOGS table as text/tabwriter (no minimum
// width, padding 2, spaces, no flags) aligns it, one line at a time: every
// line has the same cells, so each aligned column is as wide as its widest
// cell in runes plus the padding. measure sees every line first.
type dialogTable struct {
	width [len(dialogCells{}) - 1]int
	line  []byte
}

func (t *dialogTable) cells(d *DialogRow) dialogCells {
	code := "-"
	switch {
	case d.FinalStatusCode != 0:
		code = fmt.Sprint(d.FinalStatusCode)
	case d.failCode != 0:
		code = fmt.Sprint(d.failCode)
	}
	pdd := "-"
	if d.Timing.PDDMs != nil {
		pdd = fmt.Sprintf("%.3fs", float64(*d.Timing.PDDMs)/1000)
	}
	dur := fmt.Sprintf("%.3fs", d.DurationSec)
	if d.DurationToCaptureEndMs != nil {
		dur = fmt.Sprintf("%.3fs+", float64(*d.DurationToCaptureEndMs)/1000)
	}
	return dialogCells{"  " + textsafe.ID(d.CallID, 48), dash(textsafe.Line(d.FromUser, 24)), dash(textsafe.Line(d.ToUser, 24)),
		d.State, code, dur, fmt.Sprint(d.MsgCount), pdd}
}

func (t *dialogTable) measure(c dialogCells) {
	for i := range t.width {
		t.width[i] = max(t.width[i], utf8.RuneCountInString(c[i]))
	}
}

func (t *dialogTable) write(w io.Writer, c dialogCells) {
	b := t.line[:0]
	for i, wd := range t.width {
		b = append(b, c[i]...)
		for n := utf8.RuneCountInString(c[i]); n < wd+2; n++ {
			b = append(b, ' ')
		}
	}
	b = append(b, c[len(c)-1]...)
	b = append(b, '\n')
	t.line = b
	w.Write(b)
}
