package sdk

import "context"

// BuildInfo is what the running binary was built with, as the host knows
// it: the version `sipnab --version` prints (from the same function) and
// the build features and bundles compiled in. The host provides it as a
// service (Service[BuildInfo]); a bundle never imports the host to learn
// its version.
type BuildInfo struct {
	// Version is the version the MCP handshake reports (serverInfo.version)
	// and `sipnab --version` prints first.
	Version string
	// VersionLine is the whole line `sipnab --version` prints.
	VersionLine string
	// Features are the build features compiled in (mcp, mcp-http, hep...),
	// never one the binary lacks.
	Features []string
	// Bundles are the IDs of the bundles compiled in, in bundles/all order.
	Bundles []string
}

// Shutdowner is the host's clean stop, provided as a service
// (Service[Shutdowner]) to the tool that ends the server (shutdown_server).
// Shutdown arranges for the server to stop once the calling tool's answer
// has been written: the serve context is cancelled, the sources stop, the
// outputs (-O, -H) and the audit file are flushed and closed, and the
// process exits 0. ctx is the calling tool's: the host knows from it which
// answer to wait for. It reports false when a stop is already under way.
type Shutdowner interface {
	Shutdown(ctx context.Context, reason string) bool
}

// Elicitor asks the person behind the client (MCP elicitation,
// elicitation/create) to confirm an action with one required boolean
// "confirm". Supported reports whether the client of this call declared the
// elicitation capability; a client without it is not asked (neither
// consent nor refusal, mcp-surface §4.6). Confirm returns true only on
// "accept" with confirm: true.
type Elicitor interface {
	Supported(ctx context.Context) bool
	Confirm(ctx context.Context, message string) (bool, error)
}

// OptionDefined reports whether the host defines the opt-in flag
// (mcp-allow-<verb>) at all in this build; Option reads its value.
func (e Env) OptionDefined(name string) bool {
	_, ok := e.opts[name]
	return ok
}
