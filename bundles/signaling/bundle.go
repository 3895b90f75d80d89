// Package signaling is the signaling bundle: the questions that follow
// "which calls failed" (when, how many per carrier, the ladder, the legs,
// what the RFCs say, how to reproduce it). This file holds the bundle; each
// tool lives in its own file (lint_dialog.go, validate_message.go,
// explain_rule.go, ...).
package signaling

import (
	"context"
	"fmt"

	"github.com/sipnab/sipnab/bundles/internal/provision"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/report"
	"github.com/sipnab/sipnab/sdk"
)

// Bundle is the signaling bundle.
type Bundle struct{}

var _ sdk.Bundle = Bundle{}

// Info describes the bundle. ByteBudget is the recorded ceiling of the
// bundle's compact tools/list bytes; docs/mcp-tools.md shows the measured
// figures and bundles/all's TestEachBundleStaysWithinItsByteBudget enforces
// it. A tool added here raises the budget in the same change.
func (Bundle) Info() sdk.Info {
	return sdk.Info{
		ID:         "signaling",
		Summary:    "follow-up questions on calls: RFC conformance lint, rule explanations, call volume over time, carrier metrics per group, time windows, tails and waits",
		ByteBudget: sdk.Budget{Default: 14850, WithOutputSchemas: 68450},
	}
}

// Config is the [bundles.signaling] section. It has no keys yet; unknown
// keys are errors.
type Config struct{}

// deps is what the bundle's tools read.
type deps struct {
	capture *engine.Capture
	// root is the server's file sandbox (--mcp-file-root, sdk.FileRoot):
	// every file-naming argument goes through it; the zero value refuses
	// them ("file tools are disabled").
	root sdk.FileRoot
	// th are the run's analysis thresholds (the host's filter.Thresholds
	// service); nil means filter's defaults.
	th *filter.Thresholds
	// correlation are the run's leg-correlation settings (the host's
	// correlate.Config service); the zero value is correlate's defaults
	// (2 s window, X-Call-ID).
	correlation correlate.Config
}

// thresholds returns the run's analysis thresholds.
func (d *deps) thresholds() filter.Thresholds {
	if d.th != nil {
		return *d.th
	}
	return filter.DefaultThresholds()
}

// analysisOptions are the diagnosis options of the run: its PDD, loss and
// jitter thresholds (slow setup, high_loss, high_jitter), as --report and
// --call-report judge.
func (d *deps) analysisOptions() analysis.Options {
	return report.Options{Thresholds: d.thresholds()}.Analysis()
}

// Provision reads [bundles.signaling], fetches the capture engine and builds
// the tools.
func (Bundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	var cfg Config
	if err := env.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("reading [bundles.signaling]: %w", err)
	}
	capture, err := provision.Capture(env, "signaling")
	if err != nil {
		return nil, err
	}
	d := &deps{capture: capture, root: env.FileRoot()}
	if th, err := sdk.Service[filter.Thresholds](env); err == nil {
		d.th = &th
	}
	if cc, err := sdk.Service[correlate.Config](env); err == nil {
		d.correlation = cc
	}
	addResources(env, d) // templates and completions (resources.go)
	return tools(d), nil
}

// tools lists the bundle's tools, one line each: a new tool file adds its
// constructor here (the registry orders tools by name).
func tools(d *deps) []sdk.Tool {
	return []sdk.Tool{
		lintDialogTool(d),
		validateMessageTool(d),
		explainRuleTool(d),
		timelineTool(d),
		groupDialogsTool(d),
		searchByTimeTool(d),
		validateFilterTool(d),
		tailDialogsTool(d),
		awaitConditionTool(d),
		findCorrelatedTool(d),
		getCallTreeTool(d),
		compareDialogsTool(d),
		getDialogReportTool(d),
		getMessageTool(d),
		renderLadderTool(d),
		getSDPTimelineTool(d),
		checkCodecNegotiationTool(d),
		explainResponseCodeTool(d),
		generateWiresharkFilterTool(d),
		generateReproTool(d),
	}
}

// The example calls (sdk.Descriptor.Examples) name calls of the sample
// capture testdata/sip-rtp-g711.pcap, which the end-to-end tests load: two
// INVITE dialogs from 10.0.2.20.
const (
	sampleCallID  = "1-1966@10.0.2.20"
	sampleCallID2 = "1-1968@10.0.2.20"
)
