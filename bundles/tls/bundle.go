// Package tls is the tls bundle: SIP carried over TLS, read in plaintext
// at the TLS library of processes on this host by eBPF uprobes on
// SSL_write/SSL_read (OpenSSL) and wolfSSL_write/wolfSSL_read (wolfSSL).
// list_tls_libraries finds the mapped libraries, start_tls_capture and
// stop_tls_capture attach and detach the probes. The reading of /proc and
// the kernel side live in core/tlsprobe; the messages enter the engine
// with input origin uprobe (core/packet.OriginUprobe).
// docs/bundles/tls.md is its page; mcp-surface §3.9, engine.md §3 and the
// design notes ("start_tls_capture: refusal order and attach timing") are
// the contract.
package tls

import (
	"context"
	"fmt"
	"sync"

	"github.com/sipnab/sipnab/bundles/internal/provision"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

// Bundle is the tls bundle.
type Bundle struct{}

var _ sdk.Bundle = Bundle{}

// Info describes the bundle. ByteBudget is the recorded ceiling of the
// bundle's compact tools/list bytes (go test ./bundles/all prints them).
func (Bundle) Info() sdk.Info {
	return sdk.Info{
		ID:         "tls",
		Summary:    "SIP over TLS read in plaintext by uprobes on the TLS libraries of this host (Linux, root)",
		ByteBudget: sdk.Budget{Default: 1850, WithOutputSchemas: 8700},
	}
}

// Config is the [bundles.tls] section.
type Config struct{}

// optTLSCapture is the opt-in flag of start_tls_capture.
const optTLSCapture = "mcp-allow-tls-capture"

// deps is what every tls tool reads.
type deps struct {
	env     sdk.Env
	capture *engine.Capture
	// procRoot is /proc (a test may point it elsewhere).
	procRoot string

	// mu is the recording lock: the one-writer check and the recording
	// of a new capture happen under it (design notes, "start_tls_capture:
	// refusal order and attach timing").
	mu sync.Mutex
	// cur is the running capture, or the last one once stopped (nil
	// before the first start).
	cur *session
	// starts counts captures started, naming each engine source.
	starts int
}

// Provision reads [bundles.tls], fetches the engine and builds the tools.
func (Bundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	var cfg Config
	if err := env.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("reading [bundles.tls]: %w", err)
	}
	capture, err := provision.Capture(env, "tls")
	if err != nil {
		return nil, err
	}
	d := &deps{env: env, capture: capture, procRoot: procRoot}
	tools := make([]sdk.Tool, 0, len(constructors))
	for _, mk := range constructors {
		tools = append(tools, mk(d))
	}
	return tools, nil
}

// procRoot is where the tools read processes (a test points it at a
// folder of its own).
var procRoot = "/proc"

// constructors build the bundle's tools; each tool file adds its own.
var constructors []func(*deps) sdk.Tool

func addTool(mk func(*deps) sdk.Tool) bool {
	constructors = append(constructors, mk)
	return true
}
