// Package core is the core bundle: the tools an agent loads first
// (capture_status, get_capture_report, list_dialogs, aggregate_dialogs,
// find_problems, search_messages, triage_call, get_dialog, rtp_stats).
package core

import (
	"context"
	"fmt"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/provision"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/live"
	"github.com/sipnab/sipnab/sdk"
)

// Bundle is the core bundle.
type Bundle struct{}

var _ sdk.Bundle = Bundle{}

// Info describes the bundle. ByteBudget is the recorded ceiling of the
// bundle's compact tools/list bytes; docs/mcp-tools.md shows the measured
// figures and TestEachBundleStaysWithinItsByteBudget enforces the ceiling.
func (Bundle) Info() sdk.Info {
	return sdk.Info{
		ID:         "core",
		Summary:    "what the server reads, the whole-capture verdict, dialogs, problems, one call's triage, RTP quality",
		ByteBudget: sdk.Budget{Default: 7950, WithOutputSchemas: 61800},
	}
}

// Config is the [bundles.core] section.
type Config struct{}

// deps is what every core tool reads.
type deps struct {
	capture *engine.Capture
	started time.Time
	// live are the running live captures (their kernel drop counters), when
	// the host provides them.
	live []*live.Capture
	// th are the run's analysis thresholds (--pdd-threshold and its
	// siblings): the host's filter.Thresholds service, filter's defaults
	// when it provides none.
	th filter.Thresholds
}

// Provision reads [bundles.core], fetches the capture engine from the host
// and builds the tools.
func (Bundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	var cfg Config
	if err := env.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("reading [bundles.core]: %w", err)
	}
	capture, err := provision.Capture(env, "core")
	if err != nil {
		return nil, err
	}
	d := &deps{capture: capture, started: time.Now()}
	if l, err := sdk.Service[[]*live.Capture](env); err == nil {
		d.live = l
	}
	d.th = provision.Thresholds(env)
	tools := make([]sdk.Tool, 0, len(constructors))
	for _, mk := range constructors {
		tools = append(tools, mk(d))
	}
	addResources(env, d) // live views (resources.go)
	return tools, nil
}

// constructors build the bundle's tools. Each tool file adds its own with
// addTool, so a new tool touches only its own file (the registry orders
// tools by name).
var constructors []func(*deps) sdk.Tool

func addTool(mk func(*deps) sdk.Tool) bool {
	constructors = append(constructors, mk)
	return true
}

// The example calls (sdk.Descriptor.Examples) name calls of the sample
// capture testdata/sip-rtp-g711.pcap, which the end-to-end tests load: the
// first of its two INVITE dialogs from 10.0.2.20.
const sampleCallID = "1-1966@10.0.2.20"
