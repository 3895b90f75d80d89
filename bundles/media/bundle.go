// Package media is the media bundle: what the stream store knows about a
// call's media beyond its quality score (media_diagnostics), the RTP
// streams no dialog claims and why (reconcile_orphans), who named each
// media endpoint and what that claim is worth (explain_attribution), and
// the call's retained audio as a WAV file (export_audio, with
// --retain-audio and --mcp-file-root).
// rtp_stats, the quality tool, is in the core bundle
// (docs/bundles/media.md).
package media

import (
	"context"
	"fmt"

	"github.com/sipnab/sipnab/bundles/internal/provision"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

// Bundle is the media bundle.
type Bundle struct{}

var _ sdk.Bundle = Bundle{}

// Info describes the bundle. ByteBudget is the recorded ceiling of the
// bundle's compact tools/list bytes; docs/mcp-tools.md shows the measured
// figures and bundles/all's TestEachBundleStaysWithinItsByteBudget enforces
// it. A tool added here raises the budget in the same change.
func (Bundle) Info() sdk.Info {
	return sdk.Info{
		ID:         "media",
		Summary:    "media facts beyond quality: DSCP marking, jitter clock, path delay, comfort noise and RTCP claims per stream; orphaned streams and why; who named each media endpoint; call audio to WAV",
		ByteBudget: sdk.Budget{Default: 2600, WithOutputSchemas: 16500},
	}
}

// Config is the [bundles.media] section. It has no keys; unknown keys are
// errors.
type Config struct{}

// deps is what the bundle's tools read.
type deps struct {
	capture *engine.Capture
	// root is the server's file sandbox (--mcp-file-root): export_audio
	// writes through it; the zero value refuses ("file tools are
	// disabled").
	root sdk.FileRoot
}

// Provision reads [bundles.media], fetches the capture engine and builds
// the tools.
func (Bundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	var cfg Config
	if err := env.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("reading [bundles.media]: %w", err)
	}
	capture, err := provision.Capture(env, "media")
	if err != nil {
		return nil, err
	}
	return tools(&deps{capture: capture, root: env.FileRoot()}), nil
}

// tools lists the bundle's tools, one line each (the registry orders tools
// by name).
func tools(d *deps) []sdk.Tool {
	return []sdk.Tool{
		mediaDiagnosticsTool(d),
		reconcileOrphansTool(d),
		explainAttributionTool(d),
		exportAudioTool(d),
	}
}

// The example calls (sdk.Descriptor.Examples) name calls of the sample
// capture testdata/sip-rtp-g711.pcap, which the end-to-end tests load.
const sampleCallID = "1-1966@10.0.2.20"
