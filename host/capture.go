package host

import (
	"fmt"
	"os"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/live"
	"github.com/sipnab/sipnab/core/portrange"
)

// checkCapture validates the capture plumbing settings at startup
// (docs/capture-sources.md): --portrange and --ws-portrange must be port
// lists; -I - (standard input) is read alone, and not while stdin carries
// stdio MCP. A mistake is a usage error (exit 2) naming the flag.
func checkCapture(cfg *Config) error {
	if in := inputsOf(cfg); slices.Contains(in, capture.StdinPath) {
		if len(in) > 1 {
			return usagef("-I %s (standard input) is read alone: it cannot be ordered by first packet among other -I inputs without reading it twice", capture.StdinPath)
		}
		if cfg.MCP.Enabled && cfg.MCP.Transport == "stdio" {
			return usagef("-I %s reads the capture from standard input, which carries JSON-RPC with stdio MCP; use --mcp-transport http", capture.StdinPath)
		}
	}
	if f := cfg.Capture.BPFFile; f != "" {
		if len(nonEmpty(cfg.Interface)) == 0 {
			return usagef("--bpf-file filters a live capture (-i IFACE); files and HEP are not filtered")
		}
		if _, err := readFilterFile(f); err != nil {
			return usageError{err}
		}
	}
	for _, c := range []struct{ flag, v string }{
		{"portrange", cfg.Capture.PortRange}, {"ws-portrange", cfg.Capture.WSPortRange},
	} {
		if _, err := portrange.Parse(c.v); err != nil {
			return usagef("--%s %q: %v", c.flag, c.v, err)
		}
	}
	return nil
}

// portGateOf is the engine's port gate from --portrange and --ws-portrange
// (checked by checkCapture; a list that does not parse leaves that side
// empty).
func portGateOf(cfg *Config) *engine.PortGate {
	sip, _ := portrange.Parse(cfg.Capture.PortRange)
	ws, _ := portrange.Parse(cfg.Capture.WSPortRange)
	return &engine.PortGate{SIP: sip, WS: ws}
}

// readFilterFile reads --bpf-file (core/live.ParseFilterFile).
func readFilterFile(path string) (live.Options, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return live.Options{}, fmt.Errorf("--bpf-file: %w", err)
	}
	if len(raw) > 1<<20 {
		return live.Options{}, fmt.Errorf("--bpf-file %s: %d bytes, not a filter program (tcpdump -ddd prints at most 4096 lines)", path, len(raw))
	}
	prog, err := live.ParseFilterFile(string(raw))
	if err != nil {
		return live.Options{}, fmt.Errorf("--bpf-file %s: %w", path, err)
	}
	return live.Options{UserFilter: prog}, nil
}

// liveFilterOf is the filter every -i capture runs (docs/capture-sources.md):
// the user's --bpf-file as given, or else the automatic kernel filter on
// the SIP and WebSocket ports, which drops RTP (said in the log).
func liveFilterOf(cfg *Config, log hclog.Logger) (live.Options, error) {
	if len(nonEmpty(cfg.Interface)) == 0 {
		return live.Options{}, nil
	}
	if f := cfg.Capture.BPFFile; f != "" {
		o, err := readFilterFile(f)
		if err == nil {
			log.Info("live capture filter: --bpf-file, run on every frame as given", "file", f)
		}
		return o, err
	}
	g := portGateOf(cfg)
	log.Info("live capture filter: automatic, kernel keeps the SIP and WebSocket ports only: RTP is not captured (give --bpf-file with a filter covering media to see it)",
		"portrange", g.SIP.String(), "ws_portrange", g.WS.String())
	return live.Options{Ports: []*portrange.Set{g.SIP, g.WS}}, nil
}
