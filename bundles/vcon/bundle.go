// Package vcon is the vcon bundle: a dialog the capture holds as a
// draft-ietf-vcon-vcon-core observer container (export_vcon), a check of
// any container against the working group's vendored schema
// (validate_vcon), and a call's SIPREC metadata (siprec_metadata).
// docs/bundles/vcon.md is its page; mcp-surface §3.8, engine.md §16 ("vCon
// export", "vCon validate / analyze / store") and the design notes' "Notes
// for vCon bundle" are the contract. The reference's build feature `vcon`
// is, in this build, this bundle being compiled in (bundles/all). The
// containers and the validator live in core/vcon; this package serves them.
package vcon

import (
	"context"
	"fmt"

	"github.com/sipnab/sipnab/bundles/internal/provision"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/vcon"
	"github.com/sipnab/sipnab/sdk"
)

// Bundle is the vcon bundle.
type Bundle struct{}

var _ sdk.Bundle = Bundle{}

// Info describes the bundle. ByteBudget is the recorded ceiling of the
// bundle's tools/list bytes (go test ./bundles/all prints them).
func (Bundle) Info() sdk.Info {
	return sdk.Info{
		ID:         "vcon",
		Summary:    "dialogs as vCon observer containers (with retained audio), validation against the vendored vCon schema, a container's SIP analysed apart, SIPREC metadata",
		ByteBudget: sdk.Budget{Default: 4200, WithOutputSchemas: 18300},
	}
}

// Config is the [bundles.vcon] section.
type Config struct{}

// deps is what every vcon tool reads.
type deps struct {
	capture *engine.Capture
	th      filter.Thresholds
	// opts are the host's vCon settings (--vcon-max-inline-media); a unit
	// test that provides none gets the defaults.
	opts vcon.Options
}

// Provision reads [bundles.vcon], fetches the engine and builds the tools.
func (Bundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	var cfg Config
	if err := env.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("reading [bundles.vcon]: %w", err)
	}
	capture, err := provision.Capture(env, "vcon")
	if err != nil {
		return nil, err
	}
	d := &deps{capture: capture, th: provision.Thresholds(env)}
	d.opts = vcon.Options{MaxInlineMedia: vcon.DefaultMaxInlineMedia}
	if o, err := sdk.Service[vcon.Options](env); err == nil {
		d.opts = o
	}
	tools := make([]sdk.Tool, 0, len(constructors))
	for _, mk := range constructors {
		tools = append(tools, mk(d))
	}
	return tools, nil
}

// constructors are the bundle's tools in mcp-surface §3.8's order.
var constructors = []func(*deps) sdk.Tool{exportVConTool, validateVConTool, analyzeVConTool, siprecMetadataTool}

// querier reads the capture's dialogs with the run's thresholds (the
// filter aliases expand with them).
func (d *deps) querier() *query.Querier {
	var src analysis.MediaSource
	if m := d.capture.Media(); m != nil {
		src = m
	}
	return query.For(d.capture.Dialogs(), src, d.th)
}

// sampleCallID is the answered call of testdata/captures/public/sip-rtp-g711.pcap
// the examples name.
const sampleCallID = "1-1966@10.0.2.20"
