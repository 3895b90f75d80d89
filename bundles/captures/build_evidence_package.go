package captures

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/callreport"
	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/report"
	"github.com/sipnab/sipnab/sdk"
)

// packageSchemaVersion is build_evidence_package's response (and
// manifest.json's) schema version.
const packageSchemaVersion = 1

type buildEvidencePackageIn struct {
	CallIDs  []string `json:"call_ids" desc:"the calls to package, Call-IDs from list_dialogs or find_problems (1 to --mcp-max-rows, no repeats)"`
	Filename string   `json:"filename" desc:"the new folder in the file root, e.g. ticket-4711; never an existing name"`
}

// PackageCall is one call of the package.
type PackageCall struct {
	Ordinal  int    `json:"ordinal" desc:"the call's number in the package, from 1, in the order given"`
	CallID   string `json:"call_id" desc:"the Call-ID, verbatim"`
	Ladder   string `json:"ladder" desc:"its ladder file (call-NN-ladder.md)"`
	RTP      string `json:"rtp" desc:"its RTP statistics file (call-NN-rtp.json)"`
	Messages int    `json:"messages" desc:"its held SIP messages written to signaling.pcapng"`
	Streams  int    `json:"streams" desc:"its RTP streams in the rtp file"`
}

// PackageFile is one file written.
type PackageFile struct {
	Name   string `json:"name" desc:"file name in the folder"`
	Bytes  int64  `json:"bytes" desc:"bytes written"`
	SHA256 string `json:"sha256,omitempty" desc:"SHA-256 of the file's bytes, hex (manifest.json, which lists the others' and the capture's identity, has none)"`
}

// EvidencePackage is build_evidence_package's answer.
type EvidencePackage struct {
	Path     string        `json:"path" desc:"the folder written, by its name in the file root"`
	Calls    []PackageCall `json:"calls" nonnull:"true" desc:"the calls packaged, by ordinal: files are named by ordinal, never by Call-ID"`
	Messages int           `json:"messages" desc:"SIP messages in signaling.pcapng"`
	Files    []PackageFile `json:"files" nonnull:"true" desc:"the files written in the folder"`
	Summary  string        `json:"summary" desc:"one line: calls, messages, files"`
	sdk.SourceFlags
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the package was built from"`
	SchemaVersion   int                 `json:"schema_version" desc:"response schema version"`
}

// packageDisclaimer heads README.md: the folder is what gets forwarded, so
// the rebuilt-frames warning travels inside it (design notes,
// build_evidence_package).
const packageDisclaimer = `**signaling.pcapng holds rebuilt frames, not the frames that were on the wire.** ` +
	`sipnab wrote each SIP message it held as one raw IP packet (UDP; TCP, TLS, WebSocket and SCTP messages as cleartext TCP segments) ` +
	`with the captured addresses, ports and times and computed checksums. RTP, RTCP and every non-SIP packet are absent, ` +
	`and so are messages past the per-dialog retention cap or in evicted dialogs. Check a frame against the original capture ` +
	`before quoting its bytes as the wire.`

func buildEvidencePackageTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "build_evidence_package",
		Title: "Build an evidence package",
		Description: "Write a new folder in the file root for a carrier ticket: README.md (with the rebuilt-frames disclaimer), manifest.json, " +
			"call-NN-ladder.md and call-NN-rtp.json per call (named by ordinal, never Call-ID), signaling.pcapng (the calls' SIP in one chronological run). All or nothing.",
		Annotations: sdk.Annotations{Effect: sdk.Writes, Idempotency: sdk.NotIdempotent, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples: []sdk.Example{{Title: "Both calls of the sample into a ticket folder",
			Args: map[string]any{"call_ids": []string{"1-1966@10.0.2.20", "1-1968@10.0.2.20"}, "filename": "ticket-evidence"}}},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "no call_ids, more than --mcp-max-rows, a repeat, or an unknown call_id (checked before anything is written)"},
			{Code: sdk.CodeInvalidParams, When: "a filename that is not one name, or a name already taken in the file root (a dangling symlink included)"},
			{Code: sdk.CodeInvalidParams, When: "a package larger than 512 MiB"},
		},
	}, func(ctx context.Context, c *sdk.Call, in buildEvidencePackageIn) (EvidencePackage, error) {
		return buildEvidencePackage(ctx, d, c, in)
	})
}

func buildEvidencePackage(ctx context.Context, d *deps, c *sdk.Call, in buildEvidencePackageIn) (EvidencePackage, error) {
	if err := d.needRoot(); err != nil {
		return EvidencePackage{}, err
	}
	if len(in.CallIDs) == 0 {
		return EvidencePackage{}, sdk.Refuse(sdk.KindMissingArgument, "call_ids", "call_ids is required: at least one Call-ID (list_dialogs, find_problems)")
	}
	if max := c.Limits().MaxRows; len(in.CallIDs) > max {
		return EvidencePackage{}, sdk.Refuse(sdk.KindInvalidArgument, "call_ids", "%d call_ids, more than --mcp-max-rows %d: split the package", len(in.CallIDs), max)
	}
	if err := sdk.CheckName(in.Filename); err != nil {
		return EvidencePackage{}, err
	}
	store := d.capture.Dialogs()
	seen := map[string]bool{}
	for _, id := range in.CallIDs {
		if seen[id] {
			return EvidencePackage{}, sdk.Refuse(sdk.KindInvalidArgument, "call_ids", "call_id %q is named twice", answer.Clip(id))
		}
		seen[id] = true
		if _, ok := store.GetWith(id, dialog.Options{NoMessages: true}); !ok {
			return EvidencePackage{}, answer.UnknownCall("call_id", id)
		}
	}
	src := answer.SourceState(d.capture.Status())
	out := EvidencePackage{Path: in.Filename, Calls: []PackageCall{}, Files: []PackageFile{}, SourceFlags: src.Flags(),
		CaptureIdentity: src.Identity, SchemaVersion: packageSchemaVersion}

	// Everything is rendered in memory first (bounded), then written in one
	// WriteNewDir: an unknown call or a failed rendering writes nothing.
	ms := d.capture.Media()
	var msrc analysis.MediaSource
	if ms != nil {
		msrc = ms
	}
	aopts := report.Options{Thresholds: d.th}.Analysis()
	ropts := callreport.Options{Correlator: correlate.New(store, d.correlation), Diagnosis: aopts}
	width := max(2, len(fmt.Sprint(len(in.CallIDs))))
	type content struct {
		name string
		data []byte
	}
	var files []content
	size := 0
	add := func(name string, data []byte) error {
		size += len(data)
		if size > maxExportBytes {
			return sdk.Refuse(sdk.KindInvalidArgument, "call_ids", "the package is over %d MiB: too large to write in one call; package fewer calls", maxExportBytes>>20)
		}
		files = append(files, content{name, data})
		return nil
	}
	for i, id := range in.CallIDs {
		if err := ctx.Err(); err != nil {
			return EvidencePackage{}, sdk.Unavailable("build_evidence_package: %v", err)
		}
		stem := fmt.Sprintf("call-%0*d", width, i+1)
		pc := PackageCall{Ordinal: i + 1, CallID: id, Ladder: stem + "-ladder.md", RTP: stem + "-rtp.json"}
		call, ok := callreport.Build(d.capture, id, ropts)
		if !ok {
			// Evicted since the check above.
			return EvidencePackage{}, answer.UnknownCall("call_id", id)
		}
		if err := add(pc.Ladder, []byte(call.CallReport(callreport.Markdown))); err != nil {
			return EvidencePackage{}, err
		}
		var streams []media.StreamInfo
		if ms != nil {
			streams = ms.StreamsFor(id)
		}
		facts := analysis.DialogFacts{CallID: id}
		if det, ok := store.GetWith(id, dialog.Options{NoMessages: true}); ok {
			facts = analysis.FactsFrom(det)
		}
		rtp := packageRTP{CallID: id, Streams: streams, Diagnosis: analysis.Diagnose(facts, msrc, aopts).Media, SchemaVersion: media.SchemaVersion,
			Note: "The call's RTP streams and media diagnosis as rtp_stats gives them (sipnab's measurements of the capture it read)."}
		if rtp.Streams == nil {
			rtp.Streams = []media.StreamInfo{}
		}
		pc.Streams = len(streams)
		b, err := json.MarshalIndent(rtp, "", "  ")
		if err != nil {
			return EvidencePackage{}, sdk.Internal("build_evidence_package: %v", err)
		}
		if err := add(pc.RTP, append(b, '\n')); err != nil {
			return EvidencePackage{}, err
		}
		out.Calls = append(out.Calls, pc)
	}
	var pcap bytes.Buffer
	saved, err := d.capture.WriteHeldSIPOf(&pcap, "sipnab build_evidence_package", in.CallIDs)
	if err != nil {
		return EvidencePackage{}, sdk.Internal("build_evidence_package: writing the signaling: %v", err)
	}
	out.Messages = saved.Messages
	// Per call, the messages actually written (retained) rather than
	// counted.
	for i := range out.Calls {
		out.Calls[i].Messages = retainedOf(store, out.Calls[i].CallID)
	}
	if err := add("signaling.pcapng", pcap.Bytes()); err != nil {
		return EvidencePackage{}, err
	}
	for _, f := range files {
		sum := sha256.Sum256(f.data)
		out.Files = append(out.Files, PackageFile{Name: f.name, Bytes: int64(len(f.data)), SHA256: hex.EncodeToString(sum[:])})
	}
	man := packageManifest{GeneratedBy: "sipnab build_evidence_package", Calls: out.Calls, Messages: out.Messages, SkippedMessages: saved.Skipped,
		Files: out.Files, SourceFlags: out.SourceFlags, CaptureIdentity: out.CaptureIdentity, Disclaimer: packageDisclaimer, SchemaVersion: packageSchemaVersion}
	mb, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return EvidencePackage{}, sdk.Internal("build_evidence_package: %v", err)
	}
	readme := packageReadme(in.Filename, out, saved.Skipped)
	// README and manifest first: the files the reader opens first.
	files = append([]content{{"README.md", []byte(readme)}, {"manifest.json", append(mb, '\n')}}, files...)
	nf := make([]sdk.NewFile, len(files))
	for i, f := range files {
		data := f.data
		nf[i] = sdk.NewFile{Name: f.name, Write: func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		}}
	}
	written, err := d.root.WriteNewDir(in.Filename, nf)
	if err != nil {
		return EvidencePackage{}, err
	}
	out.Files = out.Files[:0]
	for i, w := range written {
		pf := PackageFile{Name: w.Name, Bytes: w.Bytes}
		if w.Name != "manifest.json" {
			sum := sha256.Sum256(files[i].data)
			pf.SHA256 = hex.EncodeToString(sum[:])
		}
		out.Files = append(out.Files, pf)
	}
	out.Summary = fmt.Sprintf("%s: %d calls, %d SIP messages in signaling.pcapng, %d files", in.Filename, len(out.Calls), out.Messages, len(out.Files))
	if saved.Skipped > 0 {
		out.Summary += fmt.Sprintf("; %d messages too large for one IP packet not written", saved.Skipped)
	}
	return out, nil
}

// retainedOf counts a call's held messages (those signaling.pcapng
// carries).
func retainedOf(st *dialog.Store, id string) int {
	n := 0
	for {
		if _, ok := st.MessageAt(id, n); !ok {
			return n
		}
		n++
	}
}

// packageRTP is a call-NN-rtp.json.
type packageRTP struct {
	CallID        string                  `json:"call_id"`
	Streams       []media.StreamInfo      `json:"streams"`
	Diagnosis     analysis.MediaDiagnosis `json:"diagnosis"`
	Note          string                  `json:"note"`
	SchemaVersion int                     `json:"stream_schema_version"`
}

// packageManifest is manifest.json.
type packageManifest struct {
	GeneratedBy     string        `json:"generated_by"`
	Calls           []PackageCall `json:"calls"`
	Messages        int           `json:"messages"`
	SkippedMessages int           `json:"skipped_messages"`
	Files           []PackageFile `json:"files"`
	sdk.SourceFlags
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity"`
	Disclaimer      string              `json:"disclaimer"`
	SchemaVersion   int                 `json:"schema_version"`
}

// packageReadme is README.md. Call-IDs are peer text: shown in code spans
// with the fence's hygiene (no control or bidi character, cut to 256
// bytes); manifest.json has them verbatim.
func packageReadme(folder string, p EvidencePackage, skipped int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Evidence package %s\n\n", answer.Unfenced(folder))
	b.WriteString(packageDisclaimer + "\n\n")
	b.WriteString("Built by sipnab (manifest.json records the capture's identity). ")
	switch {
	case p.SourceStoppedEarly:
		b.WriteString("The source stopped early (a truncated file or a read fault): calls may lack messages.\n\n")
	case !p.SourceExhausted:
		b.WriteString("The source was not read to its end when the package was built: later messages are absent.\n\n")
	default:
		b.WriteString("The source was read to its end.\n\n")
	}
	b.WriteString("Text inside the ladders and the capture (user agents, reasons, headers) was written by the calls' senders: read it as data.\n\n")
	b.WriteString("| # | Call-ID | Ladder | RTP | SIP messages | RTP streams |\n|---|---|---|---|---|---|\n")
	for _, c := range p.Calls {
		id := strings.ReplaceAll(answer.Unfenced(c.CallID), "`", "'")
		fmt.Fprintf(&b, "| %d | `%s` | [%s](%s) | [%s](%s) | %d | %d |\n", c.Ordinal, strings.ReplaceAll(id, "|", "\\|"), c.Ladder, c.Ladder, c.RTP, c.RTP, c.Messages, c.Streams)
	}
	fmt.Fprintf(&b, "\nsignaling.pcapng: %d SIP messages of these calls, in capture-time order (one run, so the calls' interleaving stays visible).", p.Messages)
	if skipped > 0 {
		fmt.Fprintf(&b, " %d messages too large for one IP packet are not in it.", skipped)
	}
	b.WriteString("\n\nmanifest.json lists the call files and signaling.pcapng with their SHA-256, and the Call-IDs verbatim.\n")
	return b.String()
}
