package host

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sipnab/sipnab/sdk"
)

// selectTools resolves --mcp-tools / [mcp] tools against the compiled-in
// bundles and the custom bundles of [mcp.bundles] (mcp-surface §1.1). It
// returns the selected tool names. Matching is exact and case-sensitive,
// repeats are harmless, the result is the union; `full` anywhere selects
// everything. Empty lists, empty entries and unknown names are refused.
func selectTools(entries []string, custom map[string][]string, reg *sdk.Registry) (map[string]bool, error) {
	builtin := map[string][]string{}
	var bundleIDs []string
	for _, b := range reg.Bundles() {
		bundleIDs = append(bundleIDs, b.Info.ID)
		for _, t := range b.Tools {
			builtin[b.Info.ID] = append(builtin[b.Info.ID], t.Name)
		}
		if _, ok := builtin[b.Info.ID]; !ok {
			builtin[b.Info.ID] = nil
		}
	}
	isTool := func(n string) bool { _, _, ok := reg.Tool(n); return ok }

	// Custom bundles first: their own rules.
	customNames := make([]string, 0, len(custom))
	for name := range custom {
		customNames = append(customNames, name)
	}
	sort.Strings(customNames)
	for _, name := range customNames {
		members := custom[name]
		switch {
		case name == "full":
			return nil, usagef("[mcp.bundles]: a custom bundle may not be named \"full\"")
		case slices.Contains(bundleIDs, name):
			return nil, usagef("[mcp.bundles]: custom bundle %q reuses the name of a built-in bundle", name)
		case isTool(name):
			return nil, usagef("[mcp.bundles]: custom bundle %q reuses the name of a tool", name)
		case len(members) == 0:
			return nil, usagef("[mcp.bundles]: custom bundle %q is empty", name)
		}
		for _, m := range members {
			m = strings.TrimSpace(m)
			switch {
			case m == "full":
				return nil, usagef("[mcp.bundles] %s: \"full\" is not allowed in a custom bundle", name)
			case custom[m] != nil:
				return nil, usagef("[mcp.bundles] %s: custom bundles do not nest (%q is a custom bundle)", name, m)
			case slices.Contains(bundleIDs, m), isTool(m):
			default:
				return nil, usagef("[mcp.bundles] %s: %s", name, unknownName(m, bundleIDs, customNames))
			}
		}
	}

	if len(entries) == 0 {
		return nil, usagef("--mcp-tools: empty list; name bundles, tools or full")
	}
	sel := map[string]bool{}
	add := func(name string) {
		if ids, ok := builtin[name]; ok {
			for _, t := range ids {
				sel[t] = true
			}
			return
		}
		sel[name] = true
	}
	for _, e := range entries {
		switch {
		case e == "":
			return nil, usagef("--mcp-tools: empty entry (check for ,, or a trailing comma)")
		case e == "full":
			for _, n := range reg.Names() {
				sel[n] = true
			}
		case custom[e] != nil:
			for _, m := range custom[e] {
				add(strings.TrimSpace(m))
			}
		case slices.Contains(bundleIDs, e), isTool(e):
			add(e)
		default:
			return nil, usagef("--mcp-tools: %s", unknownName(e, bundleIDs, customNames))
		}
	}
	return sel, nil
}

func unknownName(name string, bundles, custom []string) string {
	valid := append([]string{"full"}, bundles...)
	valid = append(valid, custom...)
	return fmt.Sprintf("unknown bundle %q (not compiled in? see bundles/all); valid bundles: %s; or name a single tool",
		name, strings.Join(valid, ", "))
}
