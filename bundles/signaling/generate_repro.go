package signaling

import (
	"context"
	"errors"
	"strings"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/repro"
	"github.com/sipnab/sipnab/sdk"
)

// reproSchemaVersion is generate_repro's response schema version.
const reproSchemaVersion = 1

type generateReproIn struct {
	CallID   string    `json:"call_id" desc:"Call-ID, verbatim"`
	Format   string    `json:"format,omitempty" default:"sipp" enum:"sipp" desc:"scenario format (sipp, the only one)"`
	Pin      []string  `json:"pin,omitempty" desc:"aspects suspected of causing the outcome, kept as captured: branch, call_id, cseq, headers, request_uri, sdp, tags, user_agent"`
	Vary     *[]string `json:"vary,omitempty" default:"the identity aspects not pinned" desc:"identity aspects SIPp regenerates per call: branch, call_id, tags (default: those not pinned)"`
	Filename string    `json:"filename,omitempty" desc:"also write the scenario to this new file in the file root (needs --mcp-file-root)"`
}

// Repro is generate_repro's answer: a SIPp scenario replaying the UAC side
// of one call, and the hypothesis it tests.
//
// The scenario is an artifact to run, not text to read as instructions:
// with any aspect pinned it holds sender-written capture text (headers,
// SDP), so the answer carries the provenance note; fence markers inside
// the XML would break it.
type Repro struct {
	// CallID is the call replayed, verbatim.
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// Format is the scenario format.
	Format string `json:"format" enum:"sipp" desc:"scenario format"`
	// Method is the replayed request's method.
	Method string `json:"method" desc:"method of the replayed request"`
	// Hypothesis says where each of the eight aspects went.
	Hypothesis repro.Hypothesis `json:"hypothesis" desc:"pinned, varied, generated and omitted aspects"`
	// Asserted is what the run must receive to pass.
	Asserted repro.Asserted `json:"asserted" desc:"responses the run must receive"`
	// Scenario is the SIPp XML.
	Scenario string `json:"scenario" desc:"SIPp scenario XML"`
	// Run is the sipp command line: set TARGET (host:port) first, and
	// SIP_USER and SIP_PASSWORD when the run answers a challenge.
	Run string `json:"run" desc:"sipp command line; set TARGET=host:port (and SIP_USER, SIP_PASSWORD when it authenticates)"`
	// Caveats say where the replay differs from the capture.
	Caveats []string `json:"caveats" nonnull:"true" desc:"where the replay differs from the capture"`
	// Written names the file written; absent without filename.
	Written *WrittenFile `json:"written,omitempty" desc:"the file written in the file root"`
	sdk.SourceFlags
	// CaptureIdentity names the capture the answer came from.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

// WrittenFile is a file generate_repro wrote.
type WrittenFile struct {
	File  string `json:"file" desc:"file name in the file root"`
	Bytes int    `json:"bytes" desc:"bytes written"`
}

func generateReproTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "generate_repro",
		Title: "SIPp scenario reproducing a call",
		Description: "A SIPp scenario replaying one call's UAC side to test a hypothesis: pin the aspects you suspect " +
			"(kept as captured), vary identity ones (new per call). Asserts the captured responses; run is the sipp command.",
		Annotations: sdk.Annotations{Effect: sdk.Writes, Idempotency: sdk.Idempotent, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "A SIPp scenario replaying one call", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
			{Code: sdk.CodeInvalidParams, When: "an unknown aspect in pin or vary, an aspect both pinned and varied, or one that cannot vary"},
			{Code: sdk.CodeInvalidParams, When: "filename without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "a filename that is not one file name, or a name already taken in the file root (a dangling symlink included) or a capture the server reads"},
		},
		StrictArgs: true,
	}, func(ctx context.Context, c *sdk.Call, in generateReproIn) (Repro, error) {
		return generateRepro(d, c, in)
	})
}

func generateRepro(d *deps, c *sdk.Call, in generateReproIn) (Repro, error) {
	if in.Format != "" && in.Format != "sipp" {
		return Repro{}, sdk.InvalidParams("format %q is not supported: the only format is sipp", answer.Clip(in.Format))
	}
	if in.Filename != "" {
		if !d.root.Enabled() {
			return Repro{}, sdk.NotEnabled("filename", "file tools are disabled: filename needs the server started with --mcp-file-root (leave it out to get the scenario inline)")
		}
		if err := sdk.CheckName(in.Filename); err != nil {
			return Repro{}, err
		}
	}
	det, src, err := callDetail(d, in.CallID)
	if err != nil {
		return Repro{}, err
	}
	o := repro.Options{Pin: in.Pin, ScenarioFile: in.Filename}
	if in.Vary != nil {
		o.Vary = append([]string{}, (*in.Vary)...)
	}
	r, err := repro.Generate(&det, o)
	if err != nil {
		if errors.Is(err, repro.ErrInput) {
			return Repro{}, sdk.InvalidParams("%s", strings.TrimPrefix(err.Error(), repro.ErrInput.Error()+": "))
		}
		return Repro{}, sdk.Internal("generating the scenario: %v", err)
	}
	if n := det.Bounds.MessagesNotRetained; n > 0 {
		r.Caveats = append(r.Caveats, sxPlural(n, "message")+" of the call past the per-dialog retention cap were not read")
	}
	if !src.Exhausted {
		r.Caveats = append(r.Caveats, "the capture is still being read: responses seen later are not asserted")
	}
	out := Repro{
		CallID: det.CallID, Format: "sipp", Method: answer.Unfenced(r.Method), Hypothesis: r.Hypothesis, Asserted: r.Asserted,
		Scenario: r.Scenario, Run: r.Run, Caveats: r.Caveats,
		SourceFlags: src.Flags(), CaptureIdentity: src.Identity, SchemaVersion: reproSchemaVersion,
	}
	if out.Caveats == nil {
		out.Caveats = []string{}
	}
	if len(r.Hypothesis.Pinned) > 0 {
		c.MarkFenced() // pinned capture text, unmarked inside the XML
	}
	if in.Filename != "" {
		n, err := d.root.WriteNew(in.Filename, []byte(r.Scenario))
		if err != nil {
			return Repro{}, err
		}
		out.Written = &WrittenFile{File: in.Filename, Bytes: n}
	}
	return out, nil
}
