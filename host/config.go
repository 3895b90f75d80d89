package host

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/media"
)

// usageError is a command-line or configuration mistake: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

type kind int

const (
	kBool kind = iota
	kInt
	kString
	kStrings
	kFloat
)

// option is one setting: its flag, its config key, its default.
type option struct {
	flag  string // long flag name without dashes
	short string // optional one-letter alias
	key   string // koanf key
	kind  kind
	def   any
	usage string
	// noConfig: command-line only (never read from a file or environment).
	noConfig bool
}

// options lists every setting sipnab reads. Environment variables are
// SIPNAB_ + the flag name upper-cased with - as _ (SIPNAB_MCP_TOKEN).
var options = []option{
	{flag: "config", key: "config", kind: kString, def: "", usage: "TOML or YAML config file", noConfig: true},
	{flag: "no-tui", short: "N", key: "no_tui", kind: kBool, def: false, usage: "run without the terminal UI (batch or MCP)"},
	{flag: "input", short: "I", key: "input", kind: kStrings, def: []string{}, usage: "capture file or directory (repeatable)"},
	{flag: "interface", short: "i", key: "interface", kind: kStrings, def: []string{}, usage: "live capture on a network interface (repeatable; needs CAP_NET_RAW)"},
	{flag: "hep-listen", short: "L", key: "hep.listen", kind: kStrings, def: []string{}, usage: "receive HEP on this address, UDP and TCP (repeatable)"},
	{flag: "hep-allow", key: "hep.allow", kind: kStrings, def: []string{}, usage: "HEP sources admitted: CIDR, address or host (repeatable; required off loopback)"},
	{flag: "hep-rate-limit-per-peer", key: "hep.rate_limit_per_peer", kind: kInt, def: 0, usage: "HEP datagrams per second per sender (0 = unlimited)"},
	{flag: "json", key: "json", kind: kBool, def: false, usage: "write the analysis as one JSON document to stdout", noConfig: true},
	{flag: "report", key: "report", kind: kBool, def: false, usage: "write a readable report to stdout", noConfig: true},
	{flag: "limit", key: "limit", kind: kInt, def: 100000, usage: "dialog cap (evicts oldest past it)"},
	{flag: "max-streams", key: "media.max_streams", kind: kInt, def: media.DefaultMaxStreams, usage: "RTP stream cap (evicts oldest past it, counted as streams_evicted)"},
	{flag: "one-way-delay", key: "media.one_way_delay", kind: kFloat, def: -1.0, usage: "one-way path delay in ms for MOS, delay source declared (-1: half an RTCP round trip, else 100 ms assumed)"},
	{flag: "cores", key: "cores", kind: kInt, def: 1, usage: "cores a file load uses: 1 routes every packet on one goroutine; N >= 2 hands RTP/RTCP/UDPTL to N-1 workers (same answers)"},
	{flag: "node-name", key: "node_name", kind: kString, def: "", usage: "node name in capture_identity (default: host name)"},
	{flag: "quiet", key: "quiet", kind: kBool, def: false, usage: "log warnings and errors only"},

	{flag: "mcp", key: "mcp.enabled", kind: kBool, def: false, usage: "run the MCP server (needs -N)"},
	{flag: "mcp-transport", key: "mcp.transport", kind: kString, def: "stdio", usage: "stdio or http"},
	{flag: "mcp-bind", key: "mcp.bind", kind: kString, def: "127.0.0.1:8731", usage: "HTTP listen address"},
	{flag: "mcp-tools", key: "mcp.tools", kind: kStrings, def: []string{"full"}, usage: "bundles, tools or custom bundles to load (comma-separated)"},
	{flag: "mcp-output-schemas", key: "mcp.output_schemas", kind: kBool, def: false, usage: "send outputSchema in tools/list"},
	{flag: "mcp-token", key: "mcp.token", kind: kString, def: "", usage: "static bearer token"},
	{flag: "mcp-token-file", key: "mcp.token_file", kind: kString, def: "", usage: "file holding the static bearer token"},
	{flag: "mcp-signing-key", key: "mcp.signing_key", kind: kStrings, def: []string{}, usage: "signed-token key (repeatable for rotation)"},
	{flag: "mcp-signing-key-file", key: "mcp.signing_key_file", kind: kStrings, def: []string{}, usage: "file holding a signing key (repeatable)"},
	{flag: "mcp-revoked-file", key: "mcp.revoked_file", kind: kString, def: "", usage: "file of revoked token ids, one per line"},
	{flag: "mcp-token-ttl", key: "mcp.token_ttl", kind: kInt, def: 3600, usage: "lifetime of a minted token, seconds"},
	{flag: "version", key: "version", kind: kBool, def: false, usage: "print the version (module, VCS revision, Go) on stdout and exit", noConfig: true},
	{flag: "mint-token", key: "mint_token", kind: kBool, def: false, usage: "print a signed token and exit", noConfig: true},
	{flag: "token-id", key: "token_id", kind: kString, def: "", usage: "id of the minted token", noConfig: true},
	{flag: "token-scope", key: "token_scope", kind: kString, def: "full", usage: "scope of the minted token: full, read, metrics, actions", noConfig: true},
	{flag: "mcp-allowed-host", key: "mcp.allowed_host", kind: kStrings, def: []string{}, usage: "allowed Host header (repeatable; * disables the check)"},
	{flag: "mcp-allowed-origin", key: "mcp.allowed_origin", kind: kStrings, def: []string{}, usage: "allowed browser Origin besides the allowed hosts' (repeatable; * allows any)"},
	{flag: "mcp-resource-url", key: "mcp.resource_url", kind: kString, def: "", usage: "public URL of the MCP endpoint (enables RFC 9728 metadata)"},
	{flag: "mcp-audit-file", key: "mcp.audit_file", kind: kString, def: "", usage: "append one JSON line per tools/call to this file"},
	{flag: "mcp-max-concurrent", key: "mcp.max_concurrent", kind: kInt, def: 100, usage: "tool calls in flight (0 = unlimited)"},
	{flag: "mcp-rate-limit-per-peer", key: "mcp.rate_limit_per_peer", kind: kInt, def: 100, usage: "tool calls per second per peer address (0 = unlimited)"},
	{flag: "mcp-max-rows", key: "limits.mcp_max_rows", kind: kInt, def: 1000, usage: "ceiling of every limit"},
	{flag: "mcp-max-body-bytes", key: "mcp.max_body_bytes", kind: kInt, def: 4096, usage: "bodies and snippets cut to this size"},
	{flag: "mcp-max-response-bytes", key: "mcp.max_response_bytes", kind: kInt, def: 1048576, usage: "server-wide response cap"},
	{flag: "mcp-max-wait-seconds", key: "mcp.max_wait_seconds", kind: kInt, def: 60, usage: "ceiling of waits and sweeps"},
	{flag: "mcp-call-timeout", key: "mcp.call_timeout", kind: kInt, def: defaultCallTimeoutSeconds, usage: "seconds a tool call may run before it is answered as timed out (more than --mcp-max-wait-seconds)"},
	{flag: "mcp-tls-cert", key: "mcp.tls_cert", kind: kString, def: "", usage: "TLS certificate for the HTTP listener"},
	{flag: "mcp-tls-key", key: "mcp.tls_key", kind: kString, def: "", usage: "TLS key for the HTTP listener"},
	{flag: "user", key: "user", kind: kString, def: "", usage: "user to drop to when started as root (default nobody)"},
	{flag: "mcp-file-root", key: "mcp.file_root", kind: kString, def: "", usage: "sandbox directory for file tools"},
	{flag: "mcp-allow-shutdown", key: "mcp.allow_shutdown", kind: kBool, def: false, usage: "enable shutdown_server"},
	{flag: "mcp-allow-open-capture", key: "mcp.allow_open_capture", kind: kBool, def: false, usage: "enable open_capture"},
	{flag: "mcp-allow-tls-capture", key: "mcp.allow_tls_capture", kind: kBool, def: false, usage: "enable start_tls_capture"},
	{flag: "mcp-allow-save-findings", key: "mcp.allow_save_findings", kind: kBool, def: false, usage: "enable save_findings"},
	{flag: "mcp-allow-relay-query", key: "mcp.allow_relay_query", kind: kBool, def: false, usage: "enable relay queries"},

	// The run's analysis thresholds (filter.Thresholds): the filter aliases
	// (problems, slow-setup, short-calls), sipnab://filter/<alias>, the
	// reference pages and the diagnosis all read them.
	{flag: "pdd-threshold", key: "analysis.pdd_threshold", kind: kFloat, def: 11.0, usage: "post-dial delay over this many seconds is slow setup (slow-setup, problems, the diagnosis)"},
	{flag: "short-call-threshold", key: "analysis.short_call_threshold", kind: kFloat, def: 3.0, usage: "completed calls shorter than this many seconds are short calls (short-calls)"},
	{flag: "loss-threshold", key: "analysis.loss_threshold", kind: kFloat, def: 5.0, usage: "RTP loss over this percentage is a problem (problems)"},
	{flag: "jitter-threshold", key: "analysis.jitter_threshold", kind: kFloat, def: 50.0, usage: "RTP jitter over this many milliseconds is a problem (problems)"},
	{flag: "retransmit-threshold", key: "analysis.retransmit_threshold", kind: kInt, def: 3, usage: "more SIP retransmissions than this in a dialog is a problem (problems)"},

	// Leg correlation (core/correlate): find_correlated, get_call_tree, the
	// per-call reports, render_ladder and --call-report read them.
	{flag: "leg-correlation-window", key: "correlation.window", kind: kFloat, def: 2.0, usage: "seconds between two legs' starts for the timing heuristic"},
	{flag: "x-call-id-header", key: "correlation.x_call_id_headers", kind: kStrings, def: []string{"X-Call-ID"}, usage: "header naming another leg's Call-ID (repeatable; default X-Call-ID)"},

	// Batch: one call's report and ladder.
	{flag: "call-report", key: "call_report", kind: kString, def: "", usage: "print one call's report and ladder (text) and exit", noConfig: true},
	// Batch: when a live or HEP run stops (a signal stops it too). Each is
	// a stop on request: the run exits 0 unless a source failed.
	{flag: "duration", key: "duration", kind: kFloat, def: 0.0, usage: "batch: stop reading after this many seconds, then write the document (0 = until SIGINT/SIGTERM, or the end of the files)", noConfig: true},
	{flag: "count", key: "count", kind: kInt, def: 0, usage: "batch: stop reading after this many frames, then write the document (0 = no limit; a live or HEP run may read a few more while it stops)", noConfig: true},
	{flag: "markdown", key: "markdown", kind: kBool, def: false, usage: "with --call-report: Markdown instead of text", noConfig: true},
	{flag: "no-cli-print", key: "no_cli_print", kind: kBool, def: false, usage: "with --call-report: print only the document (no stderr summary)", noConfig: true},
}

// freeSections are config subtrees whose keys are not fixed: custom bundles
// and each bundle's own section.
var freeSections = []string{"mcp.bundles", "bundles"}

// Config is the resolved configuration.
type Config struct {
	k   *koanf.Koanf
	set map[string]bool // flags given on the command line
}

func (c *Config) Bool(key string) bool        { return c.k.Bool(key) }
func (c *Config) Float(key string) float64    { return c.k.Float64(key) }
func (c *Config) Int(key string) int          { return c.k.Int(key) }
func (c *Config) String(key string) string    { return c.k.String(key) }
func (c *Config) Strings(key string) []string { return splitList(c.k.Strings(key)) }

// FlagSet reports whether a flag was given on the command line.
func (c *Config) FlagSet(name string) bool { return c.set[name] }

// CustomBundles returns [mcp.bundles]: name → members.
func (c *Config) CustomBundles() (map[string][]string, error) {
	out := map[string][]string{}
	raw := c.k.Get("mcp.bundles")
	if raw == nil {
		return out, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, usagef("config: [mcp.bundles] must be a table of name = [members]")
	}
	for name, v := range m {
		list, ok := v.([]any)
		if !ok {
			return nil, usagef("config: [mcp.bundles] %s must be a list of tool or bundle names", name)
		}
		var members []string
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, usagef("config: [mcp.bundles] %s: member %v is not a string", name, e)
			}
			members = append(members, s)
		}
		out[name] = members
	}
	return out, nil
}

// BundleDecoder returns a strict decoder of [bundles.<id>] into a struct.
func (c *Config) BundleDecoder(id string) func(v any) error {
	return func(v any) error {
		raw := c.k.Get("bundles." + id)
		if raw == nil {
			return nil
		}
		b, err := json.Marshal(raw)
		if err != nil {
			return fmt.Errorf("config [bundles.%s]: %w", id, err)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("config [bundles.%s]: %w", id, err)
		}
		return nil
	}
}

type stringsValue struct{ v *[]string }

func (s stringsValue) String() string {
	if s.v == nil {
		return ""
	}
	return strings.Join(*s.v, ",")
}
func (s stringsValue) Set(x string) error { *s.v = append(*s.v, x); return nil }

// splitList splits comma-separated entries and trims them, keeping empty
// entries so the caller can refuse them.
func splitList(in []string) []string {
	var out []string
	for _, e := range in {
		for _, p := range strings.Split(e, ",") {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}

// loadConfig resolves defaults < file < SIPNAB_ environment < flags set.
func loadConfig(args []string, environ []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("sipnab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vals := map[string]any{}
	for _, o := range options {
		switch o.kind {
		case kBool:
			p := new(bool)
			fs.BoolVar(p, o.flag, o.def.(bool), o.usage)
			if o.short != "" {
				fs.BoolVar(p, o.short, o.def.(bool), o.usage)
			}
			vals[o.flag] = p
		case kInt:
			p := new(int)
			fs.IntVar(p, o.flag, o.def.(int), o.usage)
			vals[o.flag] = p
		case kString:
			p := new(string)
			fs.StringVar(p, o.flag, o.def.(string), o.usage)
			vals[o.flag] = p
		case kFloat:
			p := new(float64)
			fs.Float64Var(p, o.flag, o.def.(float64), o.usage)
			vals[o.flag] = p
		case kStrings:
			p := new([]string)
			fs.Var(stringsValue{p}, o.flag, o.usage)
			if o.short != "" {
				fs.Var(stringsValue{p}, o.short, o.usage)
			}
			vals[o.flag] = p
		}
	}
	// The flag package prints a parse error and then the whole flag list;
	// Run prints the error once itself, so only a help request shows the
	// list.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
			return nil, errHelp
		}
		return nil, usagef("%v (sipnab -h lists the flags)", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	byFlag := map[string]option{}
	for _, o := range options {
		byFlag[o.flag] = o
		if o.short != "" {
			byFlag[o.short] = o
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[byFlag[f.Name].flag] = true })

	k := koanf.New(".")
	defs := map[string]any{}
	for _, o := range options {
		defs[o.key] = o.def
	}
	if err := k.Load(confmap.Provider(defs, "."), nil); err != nil {
		return nil, err
	}

	// File.
	if path := *(vals["config"].(*string)); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, usagef("reading config: %v", err)
		}
		var m map[string]any
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml":
			m, err = yaml.Parser().Unmarshal(data)
		case ".toml":
			m, err = toml.Parser().Unmarshal(data)
		default:
			return nil, usagef("config %s: want a .toml, .yaml or .yml file", path)
		}
		if err != nil {
			return nil, usagef("parsing config %s: %v", path, err)
		}
		fk := koanf.New(".")
		if err := fk.Load(confmap.Provider(m, "."), nil); err != nil {
			return nil, usagef("loading config %s: %v", path, err)
		}
		if err := checkKnownKeys(fk, path); err != nil {
			return nil, err
		}
		if err := k.Merge(fk); err != nil {
			return nil, err
		}
	}

	// Environment.
	envMap := map[string]any{}
	byEnv := map[string]option{}
	for _, o := range options {
		if !o.noConfig {
			byEnv["SIPNAB_"+strings.ToUpper(strings.ReplaceAll(o.flag, "-", "_"))] = o
		}
	}
	var unknownEnv []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, "SIPNAB_") || name == "SIPNAB_LOG" {
			continue
		}
		o, known := byEnv[name]
		if !known {
			unknownEnv = append(unknownEnv, name)
			continue
		}
		v, err := parseValue(o, val)
		if err != nil {
			return nil, usagef("environment %s: %v", name, err)
		}
		envMap[o.key] = v
	}
	// An unknown SIPNAB_ variable is ignored with one warning each, not
	// refused: a client that starts sipnab over stdio (Claude Code, Claude
	// Desktop) passes its whole environment, and an exit there is a server
	// that never connects, its reason in a log the user does not see.
	sort.Strings(unknownEnv)
	for _, name := range unknownEnv {
		hint := ""
		if near := nearestEnv(name, byEnv); near != "" {
			hint = "; did you mean " + near + "?"
		}
		fmt.Fprintf(stderr, "sipnab: ignoring unknown environment variable %s (sipnab reads SIPNAB_<FLAG> for each flag, and SIPNAB_LOG%s)\n", name, hint)
	}
	if err := k.Load(confmap.Provider(envMap, "."), nil); err != nil {
		return nil, err
	}

	// Flags actually set.
	flagMap := map[string]any{}
	for name := range set {
		o := byFlag[name]
		switch p := vals[o.flag].(type) {
		case *bool:
			flagMap[o.key] = *p
		case *int:
			flagMap[o.key] = *p
		case *string:
			flagMap[o.key] = *p
		case *float64:
			flagMap[o.key] = *p
		case *[]string:
			flagMap[o.key] = *p
		}
	}
	if err := k.Load(confmap.Provider(flagMap, "."), nil); err != nil {
		return nil, err
	}
	return &Config{k: k, set: set}, nil
}

func parseValue(o option, s string) (any, error) {
	switch o.kind {
	case kBool:
		switch strings.ToLower(s) {
		case "1", "true", "yes", "on":
			return true, nil
		case "0", "false", "no", "off", "":
			return false, nil
		}
		return nil, fmt.Errorf("want true or false, got %q", s)
	case kInt:
		var n int
		if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
			return nil, fmt.Errorf("want an integer, got %q", s)
		}
		return n, nil
	case kFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, got %q", s)
		}
		return f, nil
	case kStrings:
		return []string{s}, nil
	}
	return s, nil
}

// checkType refuses a config-file value of the wrong type: koanf would read
// it as the zero value, silently.
func checkType(o option, v any) error {
	switch o.kind {
	case kBool:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("want true or false, got %v", v)
		}
	case kInt:
		switch x := v.(type) {
		case int, int64, uint64:
		case float64:
			if x != math.Trunc(x) {
				return fmt.Errorf("want an integer, got %v", v)
			}
		default:
			return fmt.Errorf("want an integer, got %v", v)
		}
	case kFloat:
		switch v.(type) {
		case int, int64, uint64, float64:
		default:
			return fmt.Errorf("want a number, got %v", v)
		}
	case kString:
		if _, ok := v.(string); !ok {
			return fmt.Errorf("want a string, got %v", v)
		}
	case kStrings:
		switch x := v.(type) {
		case string:
		case []any:
			for _, e := range x {
				if _, ok := e.(string); !ok {
					return fmt.Errorf("want a list of strings, got %v", v)
				}
			}
		default:
			return fmt.Errorf("want a list of strings, got %v", v)
		}
	}
	return nil
}

// checkKnownKeys refuses any key of a config file that sipnab does not read.
func checkKnownKeys(fk *koanf.Koanf, path string) error {
	known := map[string]option{}
	for _, o := range options {
		if !o.noConfig {
			known[o.key] = o
		}
	}
	var unknown []string
	for _, key := range fk.Keys() {
		if slices.ContainsFunc(freeSections, func(s string) bool { return key == s || strings.HasPrefix(key, s+".") }) {
			continue
		}
		o, ok := known[key]
		if !ok {
			unknown = append(unknown, key)
			continue
		}
		if err := checkType(o, fk.Get(key)); err != nil {
			return usagef("config %s: %s: %v", path, key, err)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return usagef("config %s: unknown key %s", path, strings.Join(unknown, ", "))
	}
	return nil
}

var errHelp = errors.New("help requested")

// nearestEnv names the known variable an unknown SIPNAB_ name most likely
// meant: one within two edits (a typo), or one ending in the same words
// (SIPNAB_TOKEN for SIPNAB_MCP_TOKEN). "" when none is close.
func nearestEnv(name string, known map[string]option) string {
	rest := strings.TrimPrefix(name, "SIPNAB_")
	best, bestD := "", math.MaxInt
	for k := range known {
		d := filter.EditDistance(name, k)
		if d > 2 && !strings.HasSuffix(k, "_"+rest) {
			continue
		}
		if d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	return best
}
