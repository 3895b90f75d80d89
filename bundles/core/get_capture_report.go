package core

import (
	"context"
	"encoding/json"
	"fmt"
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
	// Truncated: evidence or findings were left out to fit the byte
	// ceiling (counted in evidence_omitted and findings_omitted); complete
	// is false then.
	Truncated bool `json:"truncated,omitempty" desc:"evidence or findings left out to fit the byte cap; complete is then false"`
	// FindingsOmitted counts the lowest-ranked findings left out to fit.
	FindingsOmitted int `json:"findings_omitted,omitempty" desc:"lowest-ranked findings left out to fit the byte cap; find_problems pages the dialogs"`
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
		Examples: []sdk.Example{
			{Title: "The whole capture in one JSON answer", Args: nil},
			{Title: "The same as a Markdown document", Args: map[string]any{"format": "markdown"}},
		},
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
		budget, _ := c.ResponseBudget(0)
		if format == formatJSON || format == formatYANG {
			fenceSenderNotes(c, rep)
		}
		switch format {
		case formatJSON:
			build := func(r analysis.Report, omitted int) CaptureReport {
				out := CaptureReport{
					SchemaVersion:   r.SchemaVersion,
					Clean:           r.Clean,
					Findings:        r.Findings,
					DialogsExamined: r.DialogsExamined,
					StreamsExamined: r.StreamsExamined,
					FramesRead:      r.FramesRead,
					Complete:        r.Complete,
					SourceFlags:     src.Flags(),
					CaptureIdentity: src.Identity,
				}
				if out.Findings == nil {
					out.Findings = []analysis.Finding{}
				}
				if trimmed(rep, r, omitted) {
					out.Truncated, out.Complete, out.FindingsOmitted = true, false, omitted
				}
				return out
			}
			r, omitted, err := fitReport(rep, func(r analysis.Report, omitted int) (bool, error) {
				n, err := c.WireBytes(build(r, omitted))
				return n <= budget, err
			})
			if err != nil {
				return CaptureReport{}, err
			}
			return build(r, omitted), nil
		case formatYANG:
			_, flags, err := yangReport(rep, src)
			if err != nil {
				return CaptureReport{}, sdk.Internal("rendering yang-json: %v", err)
			}
			c.AddBlock(flags)
			r, omitted, err := fitReport(rep, func(r analysis.Report, omitted int) (bool, error) {
				if omitted > 0 {
					// The module has no member saying findings were
					// left out: never send a partial list as whole.
					return false, nil
				}
				d, _, err := yangReport(r, src)
				return c.DocumentWireBytes(d) <= budget, err
			})
			if err != nil || omitted > 0 {
				return CaptureReport{}, sdk.Refuse(sdk.KindTooLarge, "", "the yang-json report does not fit --mcp-max-response-bytes (%d bytes) even without evidence, and its module cannot say findings were left out: ask format json (it says findings_omitted)", budget)
			}
			doc, _, err := yangReport(r, src)
			if err != nil {
				return CaptureReport{}, sdk.Internal("rendering yang-json: %v", err)
			}
			c.ReplyText(doc)
		case formatMarkdown, formatText:
			style := report.FindingsText
			if format == formatMarkdown {
				style = report.FindingsMarkdown
			}
			render := func(r analysis.Report, omitted int) string {
				doc := report.RenderFindingsQuoted(r, st.Name, style, c.Fence)
				if omitted > 0 {
					doc += fmt.Sprintf("\n(%d lower-ranked findings left out to fit --mcp-max-response-bytes, %d bytes; format json says findings_omitted, find_problems pages the dialogs.)\n", omitted, budget)
				}
				return doc
			}
			r, omitted, err := fitReport(rep, func(r analysis.Report, omitted int) (bool, error) {
				return c.DocumentWireBytes(render(r, omitted)) <= budget, nil
			})
			if err != nil {
				return CaptureReport{}, err
			}
			c.ReplyText(render(r, omitted))
		default:
			return CaptureReport{}, sdk.InvalidParams("unknown format %q: want json, yang-json, markdown or text", in.Format)
		}
		return CaptureReport{}, nil
	})
}

// fitReport fits a report to the byte ceiling (fits measures a candidate
// on the wire): every finding with as much evidence each as fits (the
// rest counted in evidence_omitted, which every format shows); when even
// no evidence is too much, the leading findings (worst first) that fit,
// the number left out returned as omitted. A report that fits comes back
// unchanged.
func fitReport(rep analysis.Report, fits func(r analysis.Report, omitted int) (bool, error)) (analysis.Report, int, error) {
	most := 0
	for _, f := range rep.Findings {
		most = max(most, len(f.Evidence))
	}
	n := len(rep.Findings)
	e, err := sdk.FitCount(most, func(e int) (bool, error) { return fits(trimReport(rep, e, n), 0) })
	if err != nil {
		return rep, 0, sdk.Internal("sizing the report: %v", err)
	}
	if ok, err := fits(trimReport(rep, e, n), 0); err != nil || ok {
		return trimReport(rep, e, n), 0, err
	}
	k, err := sdk.FitCount(n, func(k int) (bool, error) { return fits(trimReport(rep, 0, k), n-k) })
	if err != nil {
		return rep, 0, sdk.Internal("sizing the report: %v", err)
	}
	if k == 0 {
		if ok, err := fits(trimReport(rep, 0, 0), n); err != nil || !ok {
			return rep, 0, sdk.Refuse(sdk.KindTooLarge, "", "the capture report does not fit --mcp-max-response-bytes even without findings: raise it (a few thousand bytes hold the findings without their evidence)")
		}
	}
	return trimReport(rep, 0, k), n - k, nil
}

// trimReport keeps the first keep findings with at most perFinding
// evidence items each, the rest counted in evidence_omitted. It copies
// what it changes.
func trimReport(r analysis.Report, perFinding, keep int) analysis.Report {
	fs := make([]analysis.Finding, 0, keep)
	for _, f := range r.Findings[:keep] {
		if len(f.Evidence) > perFinding {
			f.EvidenceOmitted += int64(len(f.Evidence) - perFinding)
			f.Evidence = f.Evidence[:perFinding:perFinding]
		}
		fs = append(fs, f)
	}
	if r.Findings != nil {
		r.Findings = fs
	}
	return r
}

// trimmed reports whether fitting cut anything from the report.
func trimmed(whole, fitted analysis.Report, omitted int) bool {
	if omitted > 0 {
		return true
	}
	for i := range fitted.Findings {
		if fitted.Findings[i].EvidenceOmitted != whole.Findings[i].EvidenceOmitted {
			return true
		}
	}
	return false
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
