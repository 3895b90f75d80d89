// Package captures is the captures bundle: the capture files in the file
// root (--mcp-file-root) and the bytes behind the evidence pointers every
// other answer carries. It lists the captures (list_captures), sweeps them
// for a filter in the background (find_in_captures, sweep.go), verifies and
// decodes the frames behind pointers (show_evidence, decode_evidence),
// writes the SIP the capture holds to a new pcap (export_capture) or a
// folder for a carrier ticket (build_evidence_package) and takes
// an agent's conclusion to the operator's log (save_findings). Every tool
// naming a file goes through the one sandbox (sdk.FileRoot); each tool
// lives in its own file.
package captures

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/sipnab/sipnab/bundles/internal/provision"
	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/sdk"
)

// Bundle is the captures bundle.
type Bundle struct{}

var _ sdk.Bundle = Bundle{}

// Info describes the bundle. ByteBudget is the recorded ceiling of the
// bundle's compact tools/list bytes (bundles/all's
// TestEachBundleStaysWithinItsByteBudget); a tool added here raises it in
// the same change.
func (Bundle) Info() sdk.Info {
	return sdk.Info{
		ID:         "captures",
		Summary:    "capture files in the file root: list them, sweep them for a filter, compare two, verify and decode the frames behind evidence pointers, export the held SIP as a pcap or an evidence package, record an agent's finding in the operator log",
		ByteBudget: sdk.Budget{Default: 8800, WithOutputSchemas: 34400},
	}
}

// Config is the [bundles.captures] section. It has no keys; unknown keys
// are errors.
type Config struct{}

// OptSaveFindings is the opt-in flag of save_findings.
const OptSaveFindings = "mcp-allow-save-findings"

// deps is what the bundle's tools read.
type deps struct {
	capture *engine.Capture
	// root is the server's file sandbox (--mcp-file-root): every file name
	// goes through it; the zero value refuses ("file tools are disabled").
	root sdk.FileRoot
	// log is the bundle's logger (stderr): save_findings writes there.
	log *slog.Logger
	// allowFindings is --mcp-allow-save-findings; maxFindings is
	// --mcp-max-findings (sdk.Limits.MaxFindings).
	allowFindings bool
	maxFindings   int
	// findings counts what save_findings recorded in this process.
	findingsMu sync.Mutex
	findings   int
	// sweeps holds find_in_captures' background sweeps.
	sweeps *sweeper
	// th and correlation are the run's analysis thresholds and leg
	// correlation settings: build_evidence_package's ladders and media
	// diagnoses are render_ladder's and rtp_stats'.
	th          filter.Thresholds
	correlation correlate.Config
}

// Provision reads [bundles.captures], fetches the capture engine and
// builds the tools.
func (Bundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	var cfg Config
	if err := env.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("reading [bundles.captures]: %w", err)
	}
	capture, err := provision.Capture(env, "captures")
	if err != nil {
		return nil, err
	}
	d := &deps{capture: capture, root: env.FileRoot(), log: env.Logger(),
		allowFindings: env.Option(OptSaveFindings), maxFindings: env.Limits().MaxFindings}
	// The sweeps filter with the run's thresholds (the filter aliases
	// expand with them); they run for the life of the server (ctx) and stop
	// with it.
	d.th = provision.Thresholds(env)
	if cc, err := sdk.Service[correlate.Config](env); err == nil {
		d.correlation = cc
	}
	d.sweeps = newSweeper(ctx, d.root, env.Limits().Sweep, d.th)
	return tools(d), nil
}

// tools lists the bundle's tools, one line each: a new tool file adds its
// constructor here.
func tools(d *deps) []sdk.Tool {
	return []sdk.Tool{
		listCapturesTool(d),
		showEvidenceTool(d),
		decodeEvidenceTool(d),
		exportCaptureTool(d),
		saveFindingsTool(d),
		compareCapturesTool(d),
		findInCapturesTool(d),
		findInCapturesStatusTool(d),
		cancelFindInCapturesTool(d),
		buildEvidencePackageTool(d),
	}
}

// The example calls (sdk.Descriptor.Examples) name the sample capture
// testdata/sip-rtp-g711.pcap, which the end-to-end tests load and copy into
// their file root. samplePointer is its frame 1 (the first INVITE of
// 1-1966@10.0.2.20): the first 8 bytes of the SHA-256 of the frame's 500
// captured bytes (hashed by hand from the pcap record; the engine's own
// pointer for that message is checked equal in
// TestShowEvidenceVerifiesTheEnginesPointers).
//
// compare_captures' example needs a second file: the end-to-end tests put
// the public capture testdata/captures/public/sip_call.pcap beside the
// sample in their root.
const (
	sampleCapture = "sip-rtp-g711.pcap"
	samplePointer = sampleCapture + "#1@436e86580983e304"
	secondCapture = "sip_call.pcap"
)
