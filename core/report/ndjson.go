package report

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// The NDJSON outputs (docs/cli-output.md, engine.md §16): `--json` writes
// one SIP message per line (dialog.MessageView, the shape get_dialog's
// messages[] use), `--json-dialogs` one dialog per line (DialogRow, the
// shape of the --json-run document's dialogs[]). Each line is one JSON
// object ended by "\n"; sender-written text is escaped, never dropped
// (ndjsonLine). When the run is not whole a last line {"sipnab_run": ...}
// carries the run's status (engine.Status, the --json-run document's
// "run"), so a reader of the lines can tell a partial read from a whole
// one without the exit code.

// RunLine is the trailing line of the NDJSON outputs.
type RunLine struct {
	Run engine.Status `json:"sipnab_run"`
}

// Selection picks the dialogs an NDJSON or per-message output writes: nil
// writes every dialog.
type Selection func(callID string) bool

// MessageOrder is one message of the per-message outputs, in the order
// they are written: capture time across dialogs, arrival order within
// one.
type MessageOrder struct {
	Msg dialog.Message
	// Dialog is the message's dialog's position in created_at order.
	Dialog int
}

// EachMessage calls fn for every retained message of the selected dialogs,
// in capture time order (ties: the dialog created first, then arrival
// order; a dialog's own messages keep their arrival order). It merges the
// dialogs as it goes: a dialog is opened when the walk reaches its
// created_at and closed after its last message, so what it holds at once
// is the capture times of the dialogs that overlap in time, and one
// message.
func EachMessage(c *engine.Capture, sel Selection, fn func(MessageOrder) error) error {
	ds := c.Dialogs()
	ids := ds.CallIDs() // created_at order
	h := &openDialogs{}
	emit := func(until time.Time, all bool) error {
		for h.Len() > 0 {
			o := (*h)[0]
			if !all && !o.times[o.pos].Before(until) {
				return nil
			}
			m, ok := ds.MessageAt(o.callID, o.pos)
			if ok {
				if err := fn(MessageOrder{Msg: m, Dialog: o.seq}); err != nil {
					return err
				}
			}
			o.pos++
			if !ok || o.pos >= len(o.times) {
				heap.Pop(h)
				continue
			}
			heap.Fix(h, 0)
		}
		return nil
	}
	for seq, id := range ids {
		if sel != nil && !sel(id) {
			continue
		}
		times, ok := ds.MessageTimes(id, nil)
		if !ok || len(times) == 0 {
			continue
		}
		first := times[0]
		for _, t := range times[1:] {
			if t.Before(first) {
				first = t
			}
		}
		if err := emit(first, false); err != nil {
			return err
		}
		heap.Push(h, &openDialog{callID: id, seq: seq, times: times})
	}
	return emit(time.Time{}, true)
}

type openDialog struct {
	callID string
	seq    int
	times  []time.Time
	pos    int
}

// openDialogs is a min-heap of open dialogs by their next message's time,
// then by created_at order.
type openDialogs []*openDialog

func (h openDialogs) Len() int { return len(h) }
func (h openDialogs) Less(i, j int) bool {
	a, b := h[i], h[j]
	if c := a.times[a.pos].Compare(b.times[b.pos]); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}
func (h openDialogs) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *openDialogs) Push(x any)   { *h = append(*h, x.(*openDialog)) }
func (h *openDialogs) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// MessageSink writes a per-message output one message at a time: the
// --json lines (NewMessagesJSON) or the per-message text
// (NewMessagesText). A file run feeds it EachMessage; a live run feeds it
// a Tail as it reads.
type MessageSink interface {
	// Message writes one message.
	Message(MessageOrder) error
	// Flush writes what is buffered (a live run flushes after each poll).
	Flush() error
	// End writes what closes the output for the run's status (the run
	// line, the INCOMPLETE RUN note) and flushes.
	End(st engine.Status) error
	// Count is the number of messages written.
	Count() int
}

// NewMessagesJSON returns the `--json` sink: one line per message, a
// dialog.MessageView; End adds the RunLine when the run was not read
// whole or some SIP messages read are in no line (MessagesUnwritten).
func NewMessagesJSON(w io.Writer) MessageSink { return &jsonMessages{nw: newNDJSON(w)} }

type jsonMessages struct {
	nw *ndjson
	n  int
	v  dialog.MessageView // reused: a view per message would escape
}

func (j *jsonMessages) Message(m MessageOrder) error {
	j.v = m.Msg.View()
	j.n++
	return j.nw.line(&j.v)
}

func (j *jsonMessages) Flush() error { return j.nw.flush() }
func (j *jsonMessages) Count() int   { return j.n }

func (j *jsonMessages) End(st engine.Status) error {
	if !st.Complete || MessagesUnwritten(st) > 0 {
		if err := j.nw.line(&RunLine{Run: st}); err != nil {
			return err
		}
	}
	return j.nw.flush()
}

// WriteMessagesJSON writes `--json` for a capture read to its end: every
// retained SIP message of the selected dialogs in capture time order
// (EachMessage) through NewMessagesJSON. It returns the number of message
// lines written.
func WriteMessagesJSON(w io.Writer, c *engine.Capture, sel Selection) (int, error) {
	s := NewMessagesJSON(w)
	if err := EachMessage(c, sel, s.Message); err != nil {
		return s.Count(), fmt.Errorf("writing messages: %w", err)
	}
	if err := s.End(c.Status()); err != nil {
		return s.Count(), fmt.Errorf("writing messages: %w", err)
	}
	return s.Count(), nil
}

// MessagesUnwritten counts the SIP messages a run read that no message
// line carries whatever the selection: those without a Call-ID (in no
// dialog), those of Call-IDs refused at the dialog cap, those past the
// per-dialog retention cap. Capture duplicates are not among them: each
// is counted on the line of the message it repeats ("duplicates").
func MessagesUnwritten(st engine.Status) uint64 {
	return st.SIPWithoutCallID + st.SIPRefused + st.Dialogs.MessagesNotRetained
}

// WriteDialogsJSON writes `--json-dialogs`: one line per selected dialog
// in created_at order, each the row the --json-run document's dialogs[]
// holds (DialogRow); then the RunLine when the run is not complete. It
// returns the number of dialog lines written.
func WriteDialogsJSON(w io.Writer, c *engine.Capture, sel Selection) (int, error) {
	st := c.Status()
	nw := newNDJSON(w)
	rs := newRows(c)
	n := 0
	var r DialogRow // one row reused: a row per dialog would escape (WriteJSON)
	if err := c.Dialogs().EachRow(dialog.ByCreated, func(s *dialog.Summary, ref packet.FrameRef) error {
		if sel != nil && !sel(s.CallID) {
			return nil
		}
		r = rs.rowRef(s, ref)
		n++
		return nw.writeRow(&r)
	}); err != nil {
		return n, fmt.Errorf("writing dialogs: %w", err)
	}
	if !st.Complete {
		if err := nw.line(&RunLine{Run: st}); err != nil {
			return n, fmt.Errorf("writing dialogs: %w", err)
		}
	}
	return n, nw.flush()
}

// ndjson writes one compact JSON object per line.
type ndjson struct {
	w   *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
	row []byte // a row as the appender writes it (writeRow)
	out []byte
	err error
}

func newNDJSON(w io.Writer) *ndjson {
	n := &ndjson{w: bufio.NewWriterSize(w, 64<<10)}
	n.enc = json.NewEncoder(&n.buf)
	n.enc.SetEscapeHTML(false)
	return n
}

// line writes v as one line. Sender-written strings reach the line
// escaped, never dropped (textsafe.JSON): a control, bidi or other
// invisible character is a \u escape, so the line a terminal shows holds
// none, and a JSON reader gets the wire value back.
func (n *ndjson) line(v any) error {
	if n.err != nil {
		return n.err
	}
	n.buf.Reset()
	if n.err = n.enc.Encode(v); n.err != nil {
		return n.err
	}
	n.out = textsafe.JSON(n.out[:0], n.buf.Bytes()) // keeps Encode's "\n"
	_, n.err = n.w.Write(n.out)
	return n.err
}

// writeRow writes a dialog row as line does, written by the row appender
// (rowjson.go) rather than encoding/json: the same bytes. A row the
// appender cannot write as encoding/json would goes through line, which
// returns encoding/json's error.
func (n *ndjson) writeRow(r *DialogRow) error {
	if n.err != nil {
		return n.err
	}
	b, ok := appendRowJSON(n.row[:0], r, false)
	n.row = b
	if !ok {
		return n.line(r.withFrame())
	}
	if textsafe.JSONUnchanged(n.row) {
		// nothing for textsafe.JSON to escape (the common row): written
		// as it is, without its copy
		n.row = append(n.row, '\n')
		_, n.err = n.w.Write(n.row)
		return n.err
	}
	n.row = append(n.row, '\n')
	n.out = textsafe.JSON(n.out[:0], n.row)
	_, n.err = n.w.Write(n.out)
	return n.err
}

func (n *ndjson) flush() error {
	if n.err != nil {
		return n.err
	}
	return n.w.Flush()
}

// AnalysisDocument is `--json-analyze`'s document: the capture analysis
// get_capture_report answers (analysis.Report from the same Analyze call)
// with the run's status beside it, so complete travels with the source
// flags that gate it.
type AnalysisDocument struct {
	analysis.Report
	Run engine.Status `json:"run"`
}

// WriteAnalysisJSON writes `--json-analyze`: one indented JSON document
// (AnalysisDocument), sender-written text escaped as the NDJSON lines
// escape it.
func WriteAnalysisJSON(w io.Writer, c *engine.Capture, opts Options) error {
	rep, st := Analyze(c, opts.Analysis())
	if rep.Findings == nil {
		rep.Findings = []analysis.Finding{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(AnalysisDocument{Report: rep, Run: st}); err != nil {
		return fmt.Errorf("writing analysis: %w", err)
	}
	if _, err := w.Write(textsafe.JSON(nil, buf.Bytes())); err != nil {
		return fmt.Errorf("writing analysis: %w", err)
	}
	return nil
}
