package core

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/report"
	"github.com/sipnab/sipnab/sdk"
)

// Formats of get_capture_report.
const (
	formatJSON     = "json"
	formatYANG     = "yang-json"
	formatMarkdown = "markdown"
	formatText     = "text"
)

// yangModule is the YANG module the yang-json format instantiates
// (docs/yang/sipnab-diagnosis.yang).
const yangModule = "sipnab-diagnosis"

type captureReportIn struct {
	Format string `json:"format,omitempty" default:"json" enum:"json|yang-json|markdown|text" desc:"json (default), yang-json (RFC 7951), markdown or text"`
}

// CaptureReport is get_capture_report's json answer: the whole-capture
// verdict, findings ranked worst first. An evidence note that is a
// sender-written value (a final failure's reason phrase) is fenced; the
// other notes are sipnab's words or method tokens, cleaned (cleanNotes).
type CaptureReport struct {
	// SchemaVersion of the report shape.
	SchemaVersion int `json:"schema_version" desc:"report schema version"`
	// Clean: complete and nothing found.
	Clean bool `json:"clean" desc:"complete and nothing found"`
	// Findings are ranked worst first (severity, then occurrences).
	Findings []analysis.Finding `json:"findings" desc:"findings, worst first"`
	// DialogsExamined and StreamsExamined count what the analysis judged.
	DialogsExamined int `json:"dialogs_examined" desc:"dialogs judged"`
	StreamsExamined int `json:"streams_examined" desc:"RTP streams judged"`
	// FramesRead is the capture's frame counter, the denominator of every
	// other number.
	FramesRead uint64 `json:"frames_read" desc:"frames read (the capture packet counter)"`
	// Complete is never true over a partial read or when anything was shed
	// (undecodable frames, evictions): it is gated by the source flags
	// that travel beside it.
	Complete bool `json:"complete" desc:"the source was read whole and nothing was shed"`
	sdk.SourceFlags
	// CaptureIdentity names the capture the report came from.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the report came from"`
}

var _ = addTool(getCaptureReportTool)

func getCaptureReportTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "get_capture_report",
		Title: "Capture report",
		Description: "Whole-capture verdict: findings worst first with evidence (failures, media, RTP of no known call, " +
			"what was not read). complete is false over a partial read.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		// yang-json, markdown and text are documents: no outputSchema.
		Renders: true,
	}, func(ctx context.Context, c *sdk.Call, in captureReportIn) (CaptureReport, error) {
		format := in.Format
		if format == "" {
			format = formatJSON
		}
		rep, st := report.Analyze(d.capture, analysisOptions(d))
		rep = cleanNotes(rep)
		src := answer.SourceState(st)
		// A report fences the notes the sender wrote whole (a final
		// failure's reason phrase) and carries the provenance note; the
		// rest is sipnab's analysis, left unmarked.
		c.MarkFenced()
		if format == formatJSON || format == formatYANG {
			fenceSenderNotes(c, rep)
		}
		switch format {
		case formatJSON:
			out := CaptureReport{
				SchemaVersion:   rep.SchemaVersion,
				Clean:           rep.Clean,
				Findings:        rep.Findings,
				DialogsExamined: rep.DialogsExamined,
				StreamsExamined: rep.StreamsExamined,
				FramesRead:      rep.FramesRead,
				Complete:        rep.Complete,
				SourceFlags:     src.Flags(),
				CaptureIdentity: src.Identity,
			}
			if out.Findings == nil {
				out.Findings = []analysis.Finding{}
			}
			return out, nil
		case formatYANG:
			doc, flags, err := yangReport(rep, src)
			if err != nil {
				return CaptureReport{}, sdk.Internal("rendering yang-json: %v", err)
			}
			c.ReplyText(doc)
			c.AddBlock(flags)
		case formatMarkdown:
			c.ReplyText(report.RenderFindingsQuoted(rep, st.Name, report.FindingsMarkdown, c.Fence))
		case formatText:
			c.ReplyText(report.RenderFindingsQuoted(rep, st.Name, report.FindingsText, c.Fence))
		default:
			return CaptureReport{}, sdk.InvalidParams("unknown format %q: want json, yang-json, markdown or text", in.Format)
		}
		return CaptureReport{}, nil
	})
}

// cleanNotes gives every evidence note the fence's hygiene without its
// markers (answer.Unfenced), before any format is written: fence code
// points rewritten to [ ], terminal escapes, control, bidi and other format
// characters dropped, at most 256 bytes. A note can carry text the sender
// wrote: a final failure's reason phrase (then fenced as well, by
// fenceSenderNotes or the renderer's quote), method tokens, the codec names
// of an asymmetry. sipnab's own notes (an SSRC, a port, a decoder reason)
// come back unchanged; Call-IDs and endpoints are identifiers and stay
// verbatim. The findings and their evidence are copied, never written in
// place.
func cleanNotes(r analysis.Report) analysis.Report {
	if r.Findings == nil {
		return r
	}
	fs := make([]analysis.Finding, len(r.Findings))
	for i, f := range r.Findings {
		if f.Evidence != nil {
			ev := make([]analysis.Evidence, len(f.Evidence))
			for j, e := range f.Evidence {
				e.Note = answer.Unfenced(e.Note)
				ev[j] = e
			}
			f.Evidence = ev
		}
		fs[i] = f
	}
	r.Findings = fs
	return r
}

// fenceSenderNotes fences, in place, the evidence notes the sender wrote
// whole (report.SenderNote: a final failure's reason phrase) of a report
// cleanNotes copied.
func fenceSenderNotes(c *sdk.Call, r analysis.Report) {
	for i := range r.Findings {
		if !report.SenderNote(&r.Findings[i]) {
			continue
		}
		for j := range r.Findings[i].Evidence {
			if e := &r.Findings[i].Evidence[j]; e.Note != "" {
				e.Note = c.Fence(e.Note)
			}
		}
	}
}

// RFC 7951 encoding of the sipnab-diagnosis module. 64-bit integers are
// JSON strings (RFC 7951 §6.1); a list with no entries is absent (§5.4).

type yangCount struct {
	Name  string `json:"name"`
	Value string `json:"value"` // int64
}

type yangEvidence struct {
	CallID   string      `json:"call-id,omitempty"`
	Endpoint []string    `json:"endpoint,omitempty"`
	At       string      `json:"at,omitempty"`
	Count    []yangCount `json:"count,omitempty"`
	Note     string      `json:"note,omitempty"`
}

type yangFinding struct {
	Kind            string         `json:"kind"`
	Severity        string         `json:"severity"`
	Occurrences     string         `json:"occurrences"` // uint64
	Unit            string         `json:"unit"`
	Summary         string         `json:"summary,omitempty"`
	Evidence        []yangEvidence `json:"evidence,omitempty"`
	EvidenceOmitted string         `json:"evidence-omitted"` // uint64
}

type yangReportBody struct {
	SchemaVersion   int           `json:"schema-version"`
	Clean           bool          `json:"clean"`
	Complete        bool          `json:"complete"`
	DialogsExamined uint32        `json:"dialogs-examined"`
	StreamsExamined uint32        `json:"streams-examined"`
	FramesRead      string        `json:"frames-read"` // uint64
	Finding         []yangFinding `json:"finding,omitempty"`
}

type yangIdentity struct {
	Node             string `json:"node"`
	Instance         string `json:"instance"`
	DialogGeneration string `json:"dialog-generation"` // uint64
	StreamGeneration string `json:"stream-generation"` // uint64
}

type yangSource struct {
	SourceExhausted    bool         `json:"source-exhausted"`
	SourceStoppedEarly bool         `json:"source-stopped-early"`
	CaptureIdentity    yangIdentity `json:"capture-identity"`
}

// yangReport renders the report as RFC 7951 JSON: the report container
// first, the source container (flags and capture identity) as a second
// document.
func yangReport(r analysis.Report, src sdk.SourceState) (doc, flags string, err error) {
	body := yangReportBody{
		SchemaVersion:   r.SchemaVersion,
		Clean:           r.Clean,
		Complete:        r.Complete,
		DialogsExamined: uint32(min(r.DialogsExamined, 1<<32-1)),
		StreamsExamined: uint32(min(r.StreamsExamined, 1<<32-1)),
		FramesRead:      strconv.FormatUint(r.FramesRead, 10),
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		yf := yangFinding{
			Kind: f.Kind, Severity: f.Severity, Unit: f.Unit, Summary: f.Summary,
			Occurrences:     strconv.FormatInt(f.Occurrences, 10),
			EvidenceOmitted: strconv.FormatInt(f.EvidenceOmitted, 10),
		}
		for j := range f.Evidence {
			e := &f.Evidence[j]
			ye := yangEvidence{CallID: e.CallID, Endpoint: e.Endpoints, Note: e.Note}
			if e.At != nil {
				ye.At = e.At.UTC().Format(time.RFC3339Nano)
			}
			names := make([]string, 0, len(e.Counts))
			for k := range e.Counts {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				ye.Count = append(ye.Count, yangCount{Name: k, Value: strconv.FormatInt(e.Counts[k], 10)})
			}
			yf.Evidence = append(yf.Evidence, ye)
		}
		body.Finding = append(body.Finding, yf)
	}
	b, err := json.Marshal(map[string]any{yangModule + ":report": body})
	if err != nil {
		return "", "", err
	}
	fb, err := json.Marshal(map[string]any{yangModule + ":source": yangSource{
		SourceExhausted:    src.Exhausted,
		SourceStoppedEarly: src.StoppedEarly,
		CaptureIdentity: yangIdentity{
			Node: src.Identity.Node, Instance: src.Identity.Instance,
			DialogGeneration: strconv.FormatUint(src.Identity.DialogGeneration, 10),
			StreamGeneration: strconv.FormatUint(src.Identity.StreamGeneration, 10),
		},
	}})
	if err != nil {
		return "", "", err
	}
	return string(b), string(fb), nil
}
