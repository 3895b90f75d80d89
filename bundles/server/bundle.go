// Package server is the server bundle: what sipnab costs its host and how
// the capture path is holding up (runtime_stats, capture_health), who sends
// HEP (hep_senders), what this binary can do (server_capabilities), and a
// guarded stop (shutdown_server). docs/bundles/server.md is its page;
// mcp-surface §3.7 and the design notes' "Notes for server bundle" are the
// contract.
package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/sipnab/sipnab/bundles/internal/provision"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/hepsend"
	"github.com/sipnab/sipnab/core/live"
	"github.com/sipnab/sipnab/sdk"
)

// Bundle is the server bundle.
type Bundle struct{}

var _ sdk.Bundle = Bundle{}

// Info describes the bundle. ByteBudget is the recorded ceiling of the
// bundle's compact tools/list bytes (go test ./bundles/all prints them).
func (Bundle) Info() sdk.Info {
	return sdk.Info{
		ID:         "server",
		Summary:    "what sipnab costs the host, capture-path health, HEP senders, build capabilities, a guarded stop",
		ByteBudget: sdk.Budget{Default: 3400, WithOutputSchemas: 20500},
	}
}

// Config is the [bundles.server] section.
type Config struct{}

// optShutdown is the opt-in flag of shutdown_server.
const optShutdown = "mcp-allow-shutdown"

// deps is what every server tool reads.
type deps struct {
	env     sdk.Env
	capture *engine.Capture
	// live are the running live captures, when the host provides them.
	live []*live.Capture
	// hepSend is the -H HEP sender, when one runs.
	hepSend *hepsend.Sender
	// build is the binary's version and features (host service); hasBuild
	// is false in a unit test that provides none.
	build    sdk.BuildInfo
	hasBuild bool
	// stop and elicit are the host's clean stop and its elicitation; nil
	// when the host provides none (shutdown_server then refuses to stop).
	stop   sdk.Shutdowner
	elicit sdk.Elicitor

	// dryRunSeen: a shutdown_server dry run has answered in this process
	// (the first call is always one).
	mu         sync.Mutex
	dryRunSeen bool
}

// Provision reads [bundles.server], fetches the engine and the host's
// services and builds the tools.
func (Bundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	var cfg Config
	if err := env.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("reading [bundles.server]: %w", err)
	}
	capture, err := provision.Capture(env, "server")
	if err != nil {
		return nil, err
	}
	d := &deps{env: env, capture: capture}
	if l, err := sdk.Service[[]*live.Capture](env); err == nil {
		d.live = l
	}
	if h, err := sdk.Service[*hepsend.Sender](env); err == nil {
		d.hepSend = h
	}
	if b, err := sdk.Service[sdk.BuildInfo](env); err == nil {
		d.build, d.hasBuild = b, true
	}
	if s, err := sdk.Service[sdk.Shutdowner](env); err == nil {
		d.stop = s
	}
	if e, err := sdk.Service[sdk.Elicitor](env); err == nil {
		d.elicit = e
	}
	tools := make([]sdk.Tool, 0, len(constructors))
	for _, mk := range constructors {
		tools = append(tools, mk(d))
	}
	return tools, nil
}

// constructors build the bundle's tools; each tool file adds its own.
var constructors []func(*deps) sdk.Tool

func addTool(mk func(*deps) sdk.Tool) bool {
	constructors = append(constructors, mk)
	return true
}
