package host

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// versionLine is what --version prints: the version the MCP handshake
// reports (serverInfo.version), the module version and VCS revision the
// build recorded, and the Go toolchain. Build facts that were not recorded
// (a test binary, -buildvcs=false) are left out, not guessed.
func versionLine() string {
	parts := []string{"sipnab " + Version}
	goVersion := runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			parts = append(parts, "module "+v)
		}
		rev, modified := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			if modified {
				rev += " (modified)"
			}
			parts = append(parts, "revision "+rev)
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
	}
	return strings.Join(append(parts, goVersion), ", ")
}
