package server

import (
	"context"
	"slices"

	"github.com/sipnab/sipnab/sdk"
)

const capabilitiesSchemaVersion = 1

// Capabilities is the answer of server_capabilities: what this binary was
// built with (features, from the host's sdk.BuildInfo, never claiming a
// feature the binary lacks) apart from what the operator enabled
// (runtime). Design notes, "Why server_capabilities reports runtime
// separately from features".
type Capabilities struct {
	SchemaVersion int `json:"schema_version" desc:"version of this answer's shape"`
	// Version is the version `sipnab --version` prints (the same function).
	Version     string `json:"version,omitempty" desc:"sipnab's version, as the MCP handshake and sipnab --version give it"`
	VersionLine string `json:"version_line,omitempty" desc:"the line sipnab --version prints (module, revision, Go)"`
	// Features are the build features compiled in.
	Features []string `json:"features" nonnull:"true" desc:"build features compiled in: mcp, mcp-http, hep, hep-send"`
	// Bundles are the tool bundles compiled in (loaded or not).
	Bundles    []string `json:"bundles" nonnull:"true" desc:"tool bundles compiled in, selected or not"`
	CanDecrypt bool     `json:"can_decrypt" desc:"TLS/SRTP decryption built in (false: none)"`
	CanHEP     bool     `json:"can_hep" desc:"HEP listener (-L) built in"`
	CanPlugins bool     `json:"can_plugins" desc:"run-time plugins (false: bundles are compiled in)"`
	// Runtime is what the operator switched on.
	Runtime RuntimeFlags `json:"runtime" desc:"what the operator enabled at startup"`
	// Capture is the live capture backend; libpcap is not linked.
	Capture CaptureBackend `json:"capture" desc:"the live capture backend"`
}

// RuntimeFlags are the operator's switches. An opt-in flag that does not
// exist in this build (its tool is not built) is absent and named in
// not_in_this_build, never reported false.
type RuntimeFlags struct {
	MCPFileRoot          bool     `json:"mcp_file_root" desc:"--mcp-file-root is set (the path is never shown)"`
	MCPAllowShutdown     *bool    `json:"mcp_allow_shutdown,omitempty" desc:"--mcp-allow-shutdown: shutdown_server enabled"`
	MCPAllowOpenCapture  *bool    `json:"mcp_allow_open_capture,omitempty" desc:"open_capture enabled (absent: not in this build)"`
	MCPAllowTLSCapture   *bool    `json:"mcp_allow_tls_capture,omitempty" desc:"start_tls_capture enabled (absent: not in this build)"`
	MCPAllowSaveFindings *bool    `json:"mcp_allow_save_findings,omitempty" desc:"save_findings enabled (absent: not in this build)"`
	NotInThisBuild       []string `json:"not_in_this_build,omitempty" desc:"opt-in flags this build does not have (absent above)"`
	HEPListeners         int      `json:"hep_listeners" desc:"running HEP listeners (-L)"`
	LiveInterfaces       int      `json:"live_interfaces" desc:"running live captures (-i)"`
}

// CaptureBackend names how sipnab captures live: Linux AF_PACKET sockets
// in pure Go (core/live); no libpcap is linked, so there is no libpcap
// banner or version to report.
type CaptureBackend struct {
	Backend string `json:"backend" desc:"af_packet: Linux packet sockets, pure Go"`
	Libpcap bool   `json:"libpcap" desc:"libpcap linked (false: never)"`
}

// runtimeOptions maps the reference's runtime keys to the flag names.
var runtimeOptions = []struct {
	flag string
	set  func(*RuntimeFlags, *bool)
}{
	{optShutdown, func(r *RuntimeFlags, v *bool) { r.MCPAllowShutdown = v }},
	{"mcp-allow-open-capture", func(r *RuntimeFlags, v *bool) { r.MCPAllowOpenCapture = v }},
	{"mcp-allow-tls-capture", func(r *RuntimeFlags, v *bool) { r.MCPAllowTLSCapture = v }},
	{"mcp-allow-save-findings", func(r *RuntimeFlags, v *bool) { r.MCPAllowSaveFindings = v }},
}

var _ = addTool(func(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "server_capabilities",
		Title: "Server capabilities",
		Description: "What this binary can do (build features, compiled-in bundles, version) and what the operator enabled " +
			"(runtime opt-in flags; a flag this build lacks is absent, listed in not_in_this_build). No libpcap: live capture is AF_PACKET.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples:    []sdk.Example{{Title: "Features and switches of this server"}},
	}, func(ctx context.Context, c *sdk.Call, _ struct{}) (Capabilities, error) {
		return capabilities(d), nil
	})
})

func capabilities(d *deps) Capabilities {
	out := Capabilities{SchemaVersion: capabilitiesSchemaVersion, Features: []string{}, Bundles: []string{},
		Capture: CaptureBackend{Backend: "af_packet"}}
	if d.hasBuild {
		out.Version, out.VersionLine = d.build.Version, d.build.VersionLine
		out.Features = append(out.Features, d.build.Features...)
		out.Bundles = append(out.Bundles, d.build.Bundles...)
	}
	out.CanHEP = slices.Contains(out.Features, "hep")
	out.Runtime.MCPFileRoot = d.env.FileRoot().Enabled()
	for _, o := range runtimeOptions {
		if !d.env.OptionDefined(o.flag) {
			out.Runtime.NotInThisBuild = append(out.Runtime.NotInThisBuild, o.flag)
			continue
		}
		v := d.env.Option(o.flag)
		o.set(&out.Runtime, &v)
	}
	out.Runtime.HEPListeners = len(d.capture.HEPListeners())
	out.Runtime.LiveInterfaces = len(d.capture.LiveSources())
	return out
}
