// Package security is the security bundle: questions about participants
// rather than calls (who talks most, everything one endpoint did, whether
// a phone registered and why not) and the capture judged against a rule
// suite (evaluate_expectations), and what the armed security detectors
// recorded (security_findings, generate_fail2ban_rule; core/detect,
// engine.md §13). This file holds the bundle; each tool lives in its own
// file.
package security

import (
	"context"
	"fmt"

	"github.com/sipnab/sipnab/bundles/internal/provision"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/report"
	"github.com/sipnab/sipnab/sdk"
)

// Bundle is the security bundle.
type Bundle struct{}

var _ sdk.Bundle = Bundle{}

// Info describes the bundle. ByteBudget is the recorded ceiling of the
// bundle's compact tools/list bytes (docs/mcp-tools.md;
// TestEachBundleStaysWithinItsByteBudget enforces it).
func (Bundle) Info() sdk.Info {
	return sdk.Info{
		ID:         "security",
		Summary:    "participants rather than calls: top talkers, one endpoint's whole story, registration diagnosis, the capture judged against an expectation suite, what the armed detectors found and fail2ban rules from it",
		ByteBudget: sdk.Budget{Default: 6200, WithOutputSchemas: 32800},
	}
}

// Config is the [bundles.security] section. It has no keys yet; unknown
// keys are errors.
type Config struct{}

// deps is what the bundle's tools read.
type deps struct {
	capture *engine.Capture
	// root is the server's file sandbox (--mcp-file-root): the
	// suppression_file of evaluate_expectations goes through it.
	root sdk.FileRoot
	// th are the run's analysis thresholds (the host's filter.Thresholds
	// service, filter's defaults without one).
	th filter.Thresholds
}

// Provision reads [bundles.security], fetches the capture engine and
// builds the tools.
func (Bundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	var cfg Config
	if err := env.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("reading [bundles.security]: %w", err)
	}
	capture, err := provision.Capture(env, "security")
	if err != nil {
		return nil, err
	}
	d := &deps{capture: capture, root: env.FileRoot(), th: provision.Thresholds(env)}
	return []sdk.Tool{
		topTalkersTool(d),
		describeEndpointTool(d),
		diagnoseRegistrationTool(d),
		evaluateExpectationsTool(d),
		securityFindingsTool(d),
		generateFail2banRuleTool(d),
	}, nil
}

// querier is the capture's dialog query layer, shared with every bundle
// reading the same store (query.For).
func (d *deps) querier() *query.Querier {
	var src analysis.MediaSource
	if m := d.capture.Media(); m != nil {
		src = m
	}
	return query.For(d.capture.Dialogs(), src, d.th)
}

// analysisOptions are the run's diagnosis options with the capture's end
// resolved, as get_capture_report and triage_call judge timers.
func (d *deps) analysisOptions() analysis.Options {
	o := report.Options{Thresholds: d.th}.Analysis()
	var src analysis.MediaSource
	if m := d.capture.Media(); m != nil {
		src = m
	}
	if src == nil {
		src = media.NewStore(media.Config{})
	}
	o.CaptureEnd = analysis.CaptureEnd(d.capture.Dialogs(), src)
	return o
}

// The example calls (sdk.Descriptor.Examples) name what the sample
// capture testdata/sip-rtp-g711.pcap holds, which the end-to-end tests
// load: two INVITE dialogs from 10.0.2.20.
const (
	sampleCallID = "1-1966@10.0.2.20"
	sampleIP     = "10.0.2.20"
)
