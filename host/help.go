package host

import (
	"fmt"
	"io"
	"strings"
)

// writeHelp prints --help: the settings grouped by purpose, each once with
// its alias (-I, --input FILE), its default when it has one, and its
// config-file key. Run prints it on stdout and exits 0.
func writeHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString(`Usage: sipnab -N [flags]

sipnab reads SIP and RTP from capture files, live interfaces or a HEP feed,
reconstructs every call, grades its audio and finds what went wrong.
  batch:  sipnab -N -I capture.pcap --report     (or one of the outputs below; none: a line per message)
  MCP:    sipnab -N --mcp -I capture.pcap        (stdio; --mcp-transport http to listen)
`)
	for g := range groupTitles {
		first := true
		for _, o := range options {
			if o.group != group(g) {
				continue
			}
			if first {
				fmt.Fprintf(&b, "\n%s:\n", groupTitles[g])
				first = false
			}
			name := "    --" + o.flag
			if o.short != "" {
				name = "-" + o.short + ", --" + o.flag
			}
			if a := argName(o); a != "" {
				name += " " + a
			}
			usage := o.usage
			if d := defaultText(o); d != "" && !strings.Contains(usage, "default") {
				usage += " (default " + d + ")"
			}
			if o.noConfig {
				usage += " [command line only]"
			} else {
				usage += " [config: " + o.key + "]"
			}
			fmt.Fprintf(&b, "  %s\n", name)
			for _, l := range wrap(usage, 72) {
				fmt.Fprintf(&b, "        %s\n", l)
			}
		}
	}
	b.WriteString(`  -h, --help
        print this help on stdout and exit
`)
	b.WriteString(`
A setting marked [config: KEY] may also come from the --config file (KEY
limits.mcp_max_rows is mcp_max_rows in its [limits] table; examples in
configs/) or from the environment as SIPNAB_<FLAG> (SIPNAB_MCP_TOKEN is
--mcp-token). Flags win over the environment, which wins over the file.
SIPNAB_LOG sets the log level (trace, debug, info, warn, error) and
mcp_audit=LEVEL the audit log's.
Exit status: 0 done, 1 a source failed or stopped early, 2 usage error,
3 --lint-fail-on found a finding at or above its severity.
`)
	_, _ = io.WriteString(w, b.String())
}

// argName is the value's name in --help: the option's own, else by kind.
func argName(o option) string {
	if o.arg != "" {
		return o.arg
	}
	switch o.kind {
	case kInt:
		return "N"
	case kFloat:
		return "X"
	case kString, kStrings:
		return "VALUE"
	}
	return ""
}

// defaultText is the default worth printing: none for false, 0, "" or an
// empty list.
func defaultText(o option) string {
	switch d := o.def.(type) {
	case bool:
		if d {
			return "true"
		}
	case int:
		if d != 0 {
			return fmt.Sprint(d)
		}
	case float64:
		if d != 0 {
			return fmt.Sprint(d)
		}
	case string:
		if d != "" {
			return d
		}
	case []string:
		if len(d) > 0 {
			return strings.Join(d, ",")
		}
	}
	return ""
}

// wrap breaks s into lines of at most width bytes at spaces.
func wrap(s string, width int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			out = append(out, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}
