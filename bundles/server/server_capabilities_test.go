package server

import (
	"slices"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

// TestServerCapabilitiesReportsBuildAndRuntimeApart: features and bundles
// are the host's build facts as given (never more), the runtime block the
// operator's switches; an opt-in flag the build lacks is absent and named
// in not_in_this_build, never false; mcp_file_root says only whether a
// root is set.
func TestServerCapabilitiesReportsBuildAndRuntimeApart(t *testing.T) {
	build := sdk.BuildInfo{Version: "9.9.9", VersionLine: "sipnab 9.9.9, go1.26", Features: []string{"mcp", "hep"}, Bundles: []string{"core", "server"}}
	for _, tc := range []struct {
		name       string
		opts       map[string]bool
		root       sdk.FileRoot
		services   []any
		wantShut   *bool
		wantAbsent []string
		wantRoot   bool
		wantHEP    bool
		wantFeat   []string
	}{
		{"flag defined and off, no root", map[string]bool{optShutdown: false}, sdk.FileRoot{}, []any{build},
			new(false), []string{"mcp-allow-open-capture", "mcp-allow-tls-capture", "mcp-allow-save-findings"}, false, true, []string{"mcp", "hep"}},
		{"flag on, a root", map[string]bool{optShutdown: true, "mcp-allow-save-findings": false}, sdk.NewFileRoot(t.TempDir(), nil), []any{build},
			new(true), []string{"mcp-allow-open-capture", "mcp-allow-tls-capture"}, true, true, []string{"mcp", "hep"}},
		{"no build facts: no feature claimed", nil, sdk.FileRoot{}, nil,
			nil, []string{optShutdown, "mcp-allow-open-capture", "mcp-allow-tls-capture", "mcp-allow-save-findings"}, false, false, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := tools(t, engine.New(engine.Config{}, nil), tc.opts, tc.root, tc.services...)["server_capabilities"]
			var got Capabilities
			call(t, tl, `{}`, &got)
			if (got.Runtime.MCPAllowShutdown == nil) != (tc.wantShut == nil) ||
				(got.Runtime.MCPAllowShutdown != nil && *got.Runtime.MCPAllowShutdown != *tc.wantShut) {
				t.Errorf("mcp_allow_shutdown %v, want %v", got.Runtime.MCPAllowShutdown, tc.wantShut)
			}
			if !slices.Equal(got.Runtime.NotInThisBuild, tc.wantAbsent) {
				t.Errorf("not_in_this_build %v, want %v", got.Runtime.NotInThisBuild, tc.wantAbsent)
			}
			if got.Runtime.MCPFileRoot != tc.wantRoot || got.CanHEP != tc.wantHEP || !slices.Equal(got.Features, tc.wantFeat) {
				t.Errorf("file root %v can_hep %v features %v; want %v %v %v", got.Runtime.MCPFileRoot, got.CanHEP, got.Features, tc.wantRoot, tc.wantHEP, tc.wantFeat)
			}
			if got.CanDecrypt || got.CanPlugins || got.Capture.Libpcap || got.Capture.Backend != "af_packet" {
				t.Errorf("claims %+v / %+v: this build decrypts nothing, loads no plugin, links no libpcap", got, got.Capture)
			}
		})
	}
}

// TestServerCapabilitiesShowsTheVersionItWasGiven: version and version_line
// are the host's (the same function as sipnab --version), bundles as
// compiled in.
func TestServerCapabilitiesShowsTheVersionItWasGiven(t *testing.T) {
	build := sdk.BuildInfo{Version: "9.9.9", VersionLine: "sipnab 9.9.9, go1.26", Features: []string{"mcp"}, Bundles: []string{"core", "server"}}
	var got Capabilities
	call(t, tools(t, engine.New(engine.Config{}, nil), nil, sdk.FileRoot{}, build)["server_capabilities"], `{}`, &got)
	if got.Version != "9.9.9" || got.VersionLine != "sipnab 9.9.9, go1.26" || !slices.Equal(got.Bundles, []string{"core", "server"}) {
		t.Errorf("got %+v", got)
	}
}
