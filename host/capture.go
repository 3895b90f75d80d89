package host

import (
	"slices"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/engine"
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
