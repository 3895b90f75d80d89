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
	"reflect"
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
	"github.com/sipnab/sipnab/core/vcon"
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

// group is what a setting is for: --help lists the settings by group.
type group int

const (
	gSources group = iota
	gBatch
	gAnalysis
	gMCP
	gSecurity
	gLimits
	gMint
	gGeneral
	gEgress
	gDetect
)

var groupTitles = [...]string{
	gSources:  "Sources (at least one; -I, -i and -L combine)",
	gBatch:    "Batch output (without --mcp: read the sources, write one output to stdout)",
	gAnalysis: "Analysis thresholds and leg correlation (batch and MCP alike)",
	gMCP:      "MCP server",
	gSecurity: "MCP security (HTTP transport)",
	gLimits:   "MCP limits",
	gMint:     "Signed tokens (--mint-token prints one and exits)",
	gGeneral:  "General and capacity",
	gEgress:   "Egress: re-emit what was read (-O capture file, -H HEP agent)",
	gDetect:   "Security detectors (off until armed; single-core path only; never send a packet)",
}

// option is one setting: its flag, its config key, its default, and what
// --help says of it. Its type is its Settings field's (kindOf).
type option struct {
	flag  string // long flag name without dashes
	short string // optional one-letter alias
	key   string // koanf key: the Settings field's tag path
	kind  kind   // from the Settings field (init)
	group group
	arg   string // the value's name in --help ("FILE"); by kind when empty
	def   any
	usage string
	// noConfig: command-line only (never read from a file or environment).
	noConfig bool
}

// options lists every setting sipnab reads. Environment variables are
// SIPNAB_ + the flag name upper-cased with - as _ (SIPNAB_MCP_TOKEN).
var options = []option{
	{flag: "config", group: gGeneral, arg: "FILE", key: "config", def: "", usage: "TOML or YAML config file", noConfig: true},
	{flag: "no-tui", group: gGeneral, short: "N", key: "no_tui", def: false, usage: "run without the terminal UI (batch or MCP)"},
	{flag: "input", group: gSources, arg: "FILE", short: "I", key: "input", def: []string{}, usage: "capture file or directory (repeatable; - reads one pcap or pcapng stream from stdin)"},
	{flag: "interface", group: gSources, arg: "IFACE", short: "i", key: "interface", def: []string{}, usage: "live capture on a network interface (repeatable; needs CAP_NET_RAW)"},
	{flag: "hep-listen", group: gSources, arg: "ADDR", short: "L", key: "hep.listen", def: []string{}, usage: "receive HEP on this address, UDP and TCP (repeatable)"},
	{flag: "hep-allow", group: gSources, arg: "CIDR", key: "hep.allow", def: []string{}, usage: "HEP sources admitted: CIDR, address or host (repeatable; required off loopback)"},
	{flag: "hep-rate-limit-per-peer", group: gSources, key: "hep.rate_limit_per_peer", def: 0, usage: "HEP datagrams per second per sender (0 = unlimited)"},
	{flag: "hep-silence-warn", group: gSources, arg: "SECONDS", key: "hep.silence_warn", def: 30, usage: "a HEP sender not heard from for this many seconds counts as silent (hep_senders; at least 1)"},
	{flag: "json-run", group: gBatch, key: "json_run", def: false, usage: "write the analysis as one JSON document to stdout", noConfig: true},
	{flag: "report", group: gBatch, key: "report", def: false, usage: "write a readable report to stdout", noConfig: true},
	{flag: "limit", group: gGeneral, key: "limit", def: 100000, usage: "dialog cap (evicts oldest past it)"},
	{flag: "max-store-mb", group: gGeneral, arg: "MIB", key: "max_store_mb", def: 0, usage: "dialog store budget in MiB (retained messages and their structures); past it the oldest dialogs are evicted, counted as evicted_for_bytes (0: a sixteenth of memory, 64 MiB to 1 GiB)"},
	{flag: "max-streams", group: gGeneral, key: "media.max_streams", def: media.DefaultMaxStreams, usage: "RTP stream cap (evicts oldest past it, counted as streams_evicted)"},
	{flag: "retain-audio", group: gGeneral, key: "media.retain_audio", def: false, usage: "keep the payloads of G.711 RTP packets in memory for export_audio and export_vcon: the last 1500 frames per stream, 64 MiB across streams (oldest stream's audio let go first, counted); call audio is content: off by default"},
	{flag: "vcon-max-inline-media", group: gGeneral, arg: "BYTES", key: "vcon.max_inline_media", def: vcon.DefaultMaxInlineMedia, usage: "largest WAV export_vcon inlines in a container (bytes before base64url; needs --retain-audio); a larger one is refused, never truncated (0: inline none)"},
	{flag: "one-way-delay", group: gAnalysis, arg: "MS", key: "media.one_way_delay", def: -1.0, usage: "one-way path delay in ms for MOS, delay source declared (-1: half an RTCP round trip, else 100 ms assumed)"},
	// Media quality (docs/media-quality.md): AMR-WB's wideband score.
	{flag: "amr-wb-listening", group: gAnalysis, arg: "monotic|diotic", key: "media.amr_wb_listening", def: "monotic", usage: "listening context of AMR-WB's G.107.1 score: monotic (handset, G.113 Table IV.1) or diotic (two ears, Table IV.3)"},
	{flag: "cores", group: gGeneral, key: "cores", def: 1, usage: "cores a file load uses: 1 routes every packet on one goroutine; N >= 2 hands RTP/RTCP/UDPTL to N-1 workers and SIP parsing to N-1 more (same answers)"},
	{flag: "node-name", group: gGeneral, arg: "NAME", key: "node_name", def: "", usage: "node name in capture_identity (default: host name)"},
	{flag: "quiet", group: gGeneral, key: "quiet", def: false, usage: "log warnings and errors only"},

	{flag: "mcp", group: gMCP, key: "mcp.enabled", def: false, usage: "run the MCP server (needs -N)"},
	{flag: "mcp-transport", group: gMCP, arg: "stdio|http", key: "mcp.transport", def: "stdio", usage: "stdio or http"},
	{flag: "mcp-bind", group: gMCP, arg: "ADDR", key: "mcp.bind", def: "127.0.0.1:8731", usage: "HTTP listen address"},
	{flag: "mcp-tools", group: gMCP, arg: "LIST", key: "mcp.tools", def: []string{"full"}, usage: "bundles, tools or custom bundles to load (comma-separated)"},
	{flag: "mcp-output-schemas", group: gMCP, key: "mcp.output_schemas", def: false, usage: "send outputSchema in tools/list"},
	{flag: "mcp-token", group: gSecurity, arg: "TOKEN", key: "mcp.token", def: "", usage: "static bearer token"},
	{flag: "mcp-token-file", group: gSecurity, arg: "FILE", key: "mcp.token_file", def: "", usage: "file holding the static bearer token"},
	{flag: "mcp-signing-key", group: gSecurity, arg: "KEY", key: "mcp.signing_key", def: []string{}, usage: "signed-token key (repeatable for rotation)"},
	{flag: "mcp-signing-key-file", group: gSecurity, arg: "FILE", key: "mcp.signing_key_file", def: []string{}, usage: "file holding a signing key (repeatable)"},
	{flag: "mcp-revoked-file", group: gSecurity, arg: "FILE", key: "mcp.revoked_file", def: "", usage: "file of revoked token ids, one per line"},
	{flag: "mcp-token-ttl", group: gSecurity, key: "mcp.token_ttl", def: 3600, usage: "lifetime of a minted token, seconds"},
	{flag: "version", group: gGeneral, key: "version", def: false, usage: "print the version (module, VCS revision, Go) on stdout and exit", noConfig: true},
	{flag: "mint-token", group: gMint, key: "mint_token", def: false, usage: "print a signed token and exit", noConfig: true},
	{flag: "token-id", group: gMint, arg: "ID", key: "token_id", def: "", usage: "id of the minted token", noConfig: true},
	{flag: "token-scope", group: gMint, arg: "SCOPE", key: "token_scope", def: "full", usage: "scope of the minted token: full, read, metrics, actions", noConfig: true},
	{flag: "mcp-allowed-host", group: gSecurity, arg: "HOST", key: "mcp.allowed_host", def: []string{}, usage: "allowed Host header (repeatable; * disables the check)"},
	{flag: "mcp-allowed-origin", group: gSecurity, arg: "ORIGIN", key: "mcp.allowed_origin", def: []string{}, usage: "allowed browser Origin besides the allowed hosts' (repeatable; * allows any)"},
	{flag: "mcp-resource-url", group: gSecurity, arg: "URL", key: "mcp.resource_url", def: "", usage: "public URL of the MCP endpoint (enables RFC 9728 metadata)"},
	{flag: "mcp-audit-file", group: gSecurity, arg: "FILE", key: "mcp.audit_file", def: "", usage: "append one JSON line per tools/call to this file"},
	{flag: "mcp-max-concurrent", group: gLimits, key: "mcp.max_concurrent", def: 100, usage: "tool calls in flight (0 = unlimited)"},
	{flag: "mcp-rate-limit-per-peer", group: gLimits, key: "mcp.rate_limit_per_peer", def: 100, usage: "tool calls per second per peer address (0 = unlimited)"},
	{flag: "mcp-max-rows", group: gLimits, key: "limits.mcp_max_rows", def: 1000, usage: "ceiling of every limit"},
	{flag: "mcp-max-body-bytes", group: gLimits, key: "mcp.max_body_bytes", def: 4096, usage: "bodies and snippets cut to this size"},
	{flag: "mcp-max-response-bytes", group: gLimits, key: "mcp.max_response_bytes", def: 1048576, usage: "server-wide response cap"},
	{flag: "mcp-max-wait-seconds", group: gLimits, key: "mcp.max_wait_seconds", def: 60, usage: "ceiling of waits and sweeps"},
	{flag: "mcp-call-timeout", group: gLimits, key: "mcp.call_timeout", def: defaultCallTimeoutSeconds, usage: "seconds a tool call may run before it is answered as timed out (more than --mcp-max-wait-seconds)"},
	{flag: "mcp-tls-cert", group: gSecurity, arg: "FILE", key: "mcp.tls_cert", def: "", usage: "TLS certificate for the HTTP listener"},
	{flag: "mcp-tls-key", group: gSecurity, arg: "FILE", key: "mcp.tls_key", def: "", usage: "TLS key for the HTTP listener"},
	{flag: "user", group: gSecurity, arg: "USER", key: "user", def: "", usage: "user to drop to when started as root (default nobody)"},
	{flag: "mcp-file-root", group: gMCP, arg: "DIR", key: "mcp.file_root", def: "", usage: "sandbox directory for file tools"},
	{flag: "mcp-allow-save-findings", group: gMCP, key: "mcp.allow_save_findings", def: false, usage: "enable save_findings: an agent's finding appended to this server's log (stderr), never readable over MCP"},
	{flag: "mcp-max-findings", group: gLimits, key: "mcp.max_findings", def: 1000, usage: "save_findings budget: past it the tool refuses, never discards"},
	{flag: "mcp-sweep-max-files", group: gLimits, key: "mcp.sweep_max_files", def: 20, usage: "find_in_captures: ceiling and default of a sweep's max_files (at most 4294967295)"},
	{flag: "mcp-sweep-deadline-ms", group: gLimits, key: "mcp.sweep_deadline_ms", def: 30000, usage: "find_in_captures: ceiling and default of a sweep's deadline_ms (at most 43200000, 12 h)"},
	{flag: "mcp-sweep-max-running", group: gLimits, key: "mcp.sweep_max_running", def: 4, usage: "find_in_captures: sweeps running at once; one more is refused, not queued (at most 64)"},
	{flag: "mcp-sweep-max-held-results", group: gLimits, key: "mcp.sweep_max_held_results", def: 16, usage: "find_in_captures: sweeps held (running or finished, not yet collected); one more is refused (at most 256)"},
	{flag: "mcp-sweep-result-retention-secs", group: gLimits, key: "mcp.sweep_result_retention_secs", def: 600, usage: "find_in_captures: seconds a finished sweep's result waits to be collected (at most 43200)"},
	{flag: "mcp-allow-shutdown", group: gMCP, key: "mcp.allow_shutdown", def: false, usage: "enable shutdown_server (stops the server; a dry run first; a live source also needs save_to or discard_unsaved)"},
	{flag: "mcp-allow-tls-capture", group: gMCP, key: "mcp.allow_tls_capture", def: false, usage: "enable start_tls_capture: eBPF uprobes on the TLS libraries of this host's processes read their SIP in plaintext (needs root)"},

	// The run's analysis thresholds (filter.Thresholds): the filter aliases
	// (problems, slow-setup, short-calls), sipnab://filter/<alias>, the
	// reference pages and the diagnosis all read them.
	{flag: "pdd-threshold", group: gAnalysis, arg: "SECONDS", key: "analysis.pdd_threshold", def: 11.0, usage: "post-dial delay over this many seconds is slow setup (slow-setup, problems, the diagnosis)"},
	{flag: "short-call-threshold", group: gAnalysis, arg: "SECONDS", key: "analysis.short_call_threshold", def: 3.0, usage: "completed calls shorter than this many seconds are short calls (short-calls)"},
	{flag: "loss-threshold", group: gAnalysis, arg: "PERCENT", key: "analysis.loss_threshold", def: 5.0, usage: "RTP loss over this percentage is a problem (problems)"},
	{flag: "jitter-threshold", group: gAnalysis, arg: "MS", key: "analysis.jitter_threshold", def: 50.0, usage: "RTP jitter over this many milliseconds is a problem (problems)"},
	{flag: "retransmit-threshold", group: gAnalysis, key: "analysis.retransmit_threshold", def: 3, usage: "more SIP retransmissions than this in a dialog is a problem (problems)"},

	// Leg correlation (core/correlate): find_correlated, get_call_tree, the
	// per-call reports, render_ladder and --call-report read them.
	{flag: "leg-correlation-window", group: gAnalysis, arg: "SECONDS", key: "correlation.window", def: 2.0, usage: "seconds between two legs' starts for the timing heuristic"},
	{flag: "x-call-id-header", group: gAnalysis, arg: "HEADER", key: "correlation.x_call_id_headers", def: []string{"X-Call-ID"}, usage: "header naming another leg's Call-ID (repeatable; default X-Call-ID)"},

	// Capture plumbing (docs/capture-sources.md): the port gate. SIP whose
	// two ports are outside these ranges is counted and named, not
	// analysed; a live capture's automatic kernel filter is built from them.
	{flag: "portrange", group: gSources, arg: "PORTS", key: "capture.portrange", def: "5060-5061", usage: "SIP ports: SIP with neither port in this list is counted as not analysed (ports and ranges, comma-separated; 1-65535 analyses every port)"},
	{flag: "ws-portrange", group: gSources, arg: "PORTS", key: "capture.ws_portrange", def: "80,443,8080,8443", usage: "WebSocket ports: SIP over WebSocket on them is analysed too"},
	{flag: "bpf-file", group: gSources, arg: "FILE", key: "capture.bpf_file", def: "", usage: "live capture (-i): your classic BPF program (tcpdump -ddd output) instead of the automatic kernel filter, which keeps only the SIP and WebSocket ports (no RTP)"},

	// Batch: one call's report and ladder.
	{flag: "call-report", group: gBatch, arg: "CALL-ID", key: "call_report", def: "", usage: "print one call's report and ladder (text) and exit", noConfig: true},
	// Batch: when a live or HEP run stops (a signal stops it too). Each is
	// a stop on request: the run exits 0 unless a source failed.
	{flag: "duration", group: gBatch, arg: "SECONDS", key: "duration", def: 0.0, usage: "batch: stop reading after this many seconds, then write the document (0 = until SIGINT/SIGTERM, or the end of the files)", noConfig: true},
	{flag: "count", group: gBatch, arg: "FRAMES", key: "count", def: 0, usage: "batch: stop reading after this many frames, then write the document (0 = no limit; a live or HEP run may read a few more while it stops)", noConfig: true},
	{flag: "markdown", group: gBatch, key: "markdown", def: false, usage: "with --call-report: Markdown instead of text", noConfig: true},
	{flag: "no-cli-print", group: gBatch, key: "no_cli_print", def: false, usage: "with --call-report: print only the document (no stderr summary)", noConfig: true},

	// Batch outputs beside --json-run and --report (docs/cli-output.md):
	// per-message NDJSON, per-dialog NDJSON, the capture analysis, the
	// per-message text -N writes when no output is chosen and its options,
	// the dialog filter they share and the lint gate.
	{flag: "json", group: gBatch, key: "json", def: false, usage: "write one JSON object per SIP message to stdout (NDJSON, capture time order; docs/schemas/message.schema.json)", noConfig: true},
	{flag: "json-dialogs", group: gBatch, key: "json_dialogs", def: false, usage: "write one JSON object per dialog to stdout (NDJSON; docs/schemas/dialog.schema.json)", noConfig: true},
	{flag: "analyze", group: gBatch, key: "analyze", def: false, usage: "write the capture analysis (findings worst first, what was not read) as text to stdout", noConfig: true},
	{flag: "json-analyze", group: gBatch, key: "json_analyze", def: false, usage: "write the capture analysis as one JSON document to stdout (docs/schemas/analysis.schema.json)", noConfig: true},
	{flag: "filter", group: gBatch, arg: "EXPR", key: "filter", def: "", usage: "with --json, --json-dialogs or the per-message text: only dialogs matching this filter (DSL or alias), every message of each", noConfig: true},
	{flag: "calls-only", group: gBatch, key: "calls_only", def: false, usage: "with --json, --json-dialogs or the per-message text: only INVITE dialogs (calls)", noConfig: true},
	{flag: "raw", group: gBatch, short: "T", key: "raw", def: false, usage: "per-message text: print each message after its line", noConfig: true},
	{flag: "hexdump", group: gBatch, key: "hexdump", def: false, usage: "per-message text: print each message's bytes as a hex dump", noConfig: true},
	{flag: "delta-time", group: gBatch, key: "delta_time", def: false, usage: "per-message text: seconds since the previous message instead of the capture time", noConfig: true},
	{flag: "proto-numbers", group: gBatch, key: "proto_numbers", def: false, usage: "per-message text: the transport as its IP protocol number (UDP 17, TCP 6, SCTP 132)", noConfig: true},
	{flag: "payload-limit", group: gBatch, arg: "BYTES", key: "payload_limit", def: 0, usage: "per-message text: bytes of each message the raw text and the hex dump show (0 = all)", noConfig: true},
	{flag: "color", group: gBatch, arg: "WHEN", key: "color", def: "auto", usage: "per-message text colors: auto (only on a terminal), always, never", noConfig: true},
	{flag: "lint-fail-on", group: gBatch, arg: "SEVERITY", key: "lint_fail_on", def: "", usage: "after the output, lint every dialog and exit 3 when a finding is at or above SEVERITY: error, warning, notice or info", noConfig: true},

	// Egress (docs/egress.md): -O re-emits the frames read to a capture
	// file; -H forwards SIP and RTCP to a HEP receiver as a capture agent.
	{flag: "output", short: "O", group: gEgress, arg: "FILE", key: "output.file", def: "", usage: "write every frame read (-I, -i) to FILE: pcapng if it ends in .pcapng, else pcap; nanosecond timestamps; never an input"},
	{flag: "output-split-size", group: gEgress, arg: "BYTES", key: "output.split_size", def: "", usage: "with -O: start a new numbered file (FILE-00001.pcap, ...) before one would pass this size (e.g. 100M; suffixes k, M, G)"},
	{flag: "output-split-seconds", group: gEgress, arg: "SECONDS", key: "output.split_seconds", def: 0, usage: "with -O: start a new numbered file when capture time passes this many seconds since the file's first frame"},
	{flag: "output-ring", group: gEgress, arg: "N", key: "output.ring", def: 0, usage: "with a split: keep the newest N files, deleting only files this run wrote (0 = keep all)"},
	{flag: "hep-send", short: "H", group: gEgress, arg: "HOST:PORT", key: "hep.send", def: "", usage: "forward SIP (HEP type 1) and RTCP (type 5), never RTP, to a HEP receiver as HEPv3"},
	{flag: "hep-send-transport", group: gEgress, arg: "udp|tcp", key: "hep.send_transport", def: "udp", usage: "with -H: udp (one envelope per datagram) or tcp"},
	{flag: "hep-capture-id", group: gEgress, arg: "ID", key: "hep.capture_id", def: 0, usage: "with -H: capture agent id sent in every envelope (chunk 0x000c)"},
	// Security detectors (core/detect, docs/detectors.md): each off until
	// armed. They observe only: the reference's kill-scanner flag (an active
	// response spoofed to the scanner) is not built, so the scanner
	// detector has a flag named for what it does.
	{flag: "detect-scanner", group: gDetect, key: "detect.scanner", def: false, usage: "arm the SIP scanner detector: User-Agent signatures, and per source per 5 s more than 10 probes (rate) or more than 5 targets (enumeration) with at least 5 rejected or unanswered probes outnumbering the rest; records findings, sends nothing"},
	{flag: "reg-flood", group: gDetect, key: "detect.reg_flood", def: false, usage: "arm the registration flood detector: more than 50 credentialed REGISTERs from one source answered 401/407 within one second of capture time (a 2xx to REGISTER clears)"},
	{flag: "digest-leak", group: gDetect, key: "detect.digest_leak", def: false, usage: "arm the digest detector: MD5 challenges with no SHA-256 offered, challenges without qop, nonces reused across challenges, credentials without cnonce under qop"},
	{flag: "fraud-detect", group: gDetect, key: "detect.fraud_detect", def: false, usage: "arm the fraud detector: 3 numbers in a row (each one more than the last) refused by one source, and 3 answered calls under 3 s to one destination prefix (4 digits) within 60 s (wangiri)"},
	{flag: "findings-history", group: gDetect, key: "detect.findings_history", def: 1000, usage: "findings the detectors keep, 1 to 10000 (a ring: the oldest are overwritten, counted)"},
	{flag: "fail2ban-log", group: gDetect, arg: "FILE", key: "detect.fail2ban_log", def: "", usage: "append one line per finding to FILE for fail2ban: <time> sipnab[<pid>]: [ALERT] <rule_name> src=<ip> <detail> (generate_fail2ban_rule writes the matching filter)"},
	{flag: "hep-auth-key", group: gEgress, arg: "KEY", key: "hep.auth_key", def: "", usage: "with -H: shared secret sent in every envelope (chunk 0x000e); prefer SIPNAB_HEP_AUTH_KEY or the config file to the command line"},
}

func init() {
	for i, o := range options {
		k, err := kindOf(o.key)
		if err != nil {
			panic("host: option --" + o.flag + ": " + err.Error())
		}
		var ok bool
		switch k {
		case kBool:
			_, ok = o.def.(bool)
		case kInt:
			_, ok = o.def.(int)
		case kFloat:
			_, ok = o.def.(float64)
		case kString:
			_, ok = o.def.(string)
		case kStrings:
			_, ok = o.def.([]string)
		}
		if !ok {
			panic(fmt.Sprintf("host: option --%s: default %#v does not fit its Settings field", o.flag, o.def))
		}
		options[i].kind = k
	}
}

// Config is the resolved configuration: the typed Settings, which flags
// the command line set, and the config file (for the line of a key a
// bundle refuses).
type Config struct {
	Settings
	set  map[string]bool // flags given on the command line
	file *configFile     // nil without --config
	// stdin is what -I - reads (host/capture.go); Run sets it.
	stdin io.Reader
}

// FlagSet reports whether a flag was given on the command line.
func (c *Config) FlagSet(name string) bool { return c.set[name] }

// CustomBundles returns [mcp.bundles]: name → members (checked at load).
func (c *Config) CustomBundles() map[string][]string {
	if c.MCP.Bundles == nil {
		return map[string][]string{}
	}
	return c.MCP.Bundles
}

// BundleDecoder returns a strict decoder of [bundles.<id>] into a struct:
// an unknown key or a value of the wrong type is a usage error naming the
// key and its line in the config file.
func (c *Config) BundleDecoder(id string) func(v any) error {
	return func(v any) error {
		raw, ok := c.Bundles[id]
		if !ok || raw == nil {
			return nil
		}
		section := "bundles." + id
		b, err := json.Marshal(raw)
		if err != nil {
			return usageError{c.file.errorf(section, "[%s]: %v", section, err)}
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		err = dec.Decode(v)
		if err == nil {
			return nil
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			key := section
			if te.Field != "" {
				key += "." + te.Field
			}
			return usageError{c.file.errorf(key, "key %q: want %s, got %s", key, jsonKindName(te.Type), te.Value)}
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name, _ = strconv.Unquote(name)
			key := section + "." + name
			valid := jsonFieldNames(v)
			hint := ""
			if near := nearestName(name, valid); near != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", near)
			}
			return usageError{c.file.errorf(key, "unknown key %q%s; [%s] reads %s", key, hint, section, orNone(valid))}
		}
		return usageError{c.file.errorf(section, "[%s]: %v", section, err)}
	}
}

// checkBundleSections refuses a [bundles.<id>] section that no compiled-in
// bundle reads (ids): its settings would be ignored, silently.
func (c *Config) checkBundleSections(ids []string) error {
	var unknown []string
	for id := range c.Bundles {
		if !slices.Contains(ids, id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Slice(unknown, func(i, j int) bool { return c.file.line("bundles."+unknown[i]) < c.file.line("bundles."+unknown[j]) })
	msgs := make([]string, len(unknown))
	for i, id := range unknown {
		hint := ""
		if near := nearestName(id, ids); near != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", near)
		}
		msgs[i] = c.file.errorf("bundles."+id, "[bundles.%s]: no bundle %q is compiled in%s; the bundles are %s", id, id, hint, strings.Join(ids, ", ")).Error()
	}
	return usagef("%s", strings.Join(msgs, "\n"))
}

// jsonKindName says what a Go type wants in a config file.
func jsonKindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a table"
	}
	return t.String()
}

// jsonFieldNames lists the JSON names of the fields of the struct v points
// to: the keys a bundle section may hold.
func jsonFieldNames(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "no keys"
	}
	return strings.Join(list, ", ")
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

// loadConfig resolves defaults < file < SIPNAB_ environment < flags set,
// and unmarshals the result into Settings. A help request is errHelp (Run
// prints the help on stdout).
func loadConfig(args []string, environ []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("sipnab", flag.ContinueOnError)
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
			if o.short != "" {
				fs.StringVar(p, o.short, o.def.(string), o.usage)
			}
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
	// Run prints the error once itself, and the help (grouped, on stdout)
	// only when asked for.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, usagef("%v (sipnab --help lists the flags)", err)
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
	var file *configFile
	if path := *(vals["config"].(*string)); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, usagef("reading config: %v", err)
		}
		file = &configFile{path: path, data: data}
		var m map[string]any
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml":
			file.format = "yaml"
			m, err = yaml.Parser().Unmarshal(data)
		case ".toml":
			file.format = "toml"
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
		if err := checkFileKeys(fk, file); err != nil {
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
	cfg := &Config{set: set, file: file}
	// Every value was type-checked above (file: checkFileKeys; environment:
	// parseValue; flags: the flag package), so this cannot meet a value it
	// would have to coerce.
	if err := k.UnmarshalWithConf("", &cfg.Settings, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return nil, usagef("configuration: %v", err)
	}
	cfg.splitLists()
	return cfg, nil
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
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
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

// describe names a config-file value for an error: its text and its type.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q (a string)", x)
	case bool:
		return fmt.Sprintf("%v (a boolean)", x)
	case int, int64, uint64:
		return fmt.Sprintf("%v (an integer)", x)
	case float64:
		return fmt.Sprintf("%v (a number)", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%v", v)
}

// checkType refuses a config-file value of the wrong type: koanf would read
// it as the zero value, silently.
func checkType(k kind, v any) error {
	switch k {
	case kBool:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("want true or false, got %s", describe(v))
		}
	case kInt:
		switch x := v.(type) {
		case int, int64, uint64:
		case float64:
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return fmt.Errorf("want an integer, got %s", describe(v))
			}
		default:
			return fmt.Errorf("want an integer, got %s", describe(v))
		}
	case kFloat:
		switch v.(type) {
		case int, int64, uint64, float64:
		default:
			return fmt.Errorf("want a number, got %s", describe(v))
		}
	case kString:
		if _, ok := v.(string); !ok {
			return fmt.Errorf("want a string, got %s", describe(v))
		}
	case kStrings:
		switch x := v.(type) {
		case string:
		case []any:
			for _, e := range x {
				if _, ok := e.(string); !ok {
					return fmt.Errorf("want a list of strings, got %s in the list", describe(e))
				}
			}
		default:
			return fmt.Errorf("want a list of strings, got %s", describe(v))
		}
	}
	return nil
}

// checkFileKeys refuses every key of a config file that sipnab does not
// read and every value of the wrong type, each as "file:line: ...", in file
// order.
func checkFileKeys(fk *koanf.Koanf, file *configFile) error {
	known := map[string]option{}
	var fileKeys []string
	for _, o := range options {
		known[o.key] = o
		if !o.noConfig {
			fileKeys = append(fileKeys, o.key)
		}
	}
	var errs []lineError
	add := func(key, format string, a ...any) {
		errs = append(errs, lineError{line: file.line(key), msg: fmt.Sprintf(format, a...), key: key})
	}
	var codecKeys []string
	for _, key := range fk.Keys() {
		v := fk.Get(key)
		switch {
		case key == codecIeSection || strings.HasPrefix(key, codecIeSection+"."):
			codecKeys = append(codecKeys, key) // host/codecie.go
			continue
		case key == "bundles" || key == "mcp.bundles":
			add(key, "key %q: want a table, got %s", key, describe(v))
			continue
		case strings.HasPrefix(key, "bundles."):
			continue // each bundle decodes its own section (BundleDecoder)
		case strings.HasPrefix(key, "mcp.bundles."):
			name := strings.TrimPrefix(key, "mcp.bundles.")
			if strings.Contains(name, ".") {
				add(key, "key %q: [mcp.bundles] holds name = [tools or bundles], not tables", key)
			} else if _, ok := v.([]any); !ok {
				add(key, "key %q: want a list of tool or bundle names, got %s", key, describe(v))
			} else if err := checkType(kStrings, v); err != nil {
				add(key, "key %q: %v", key, err)
			}
			continue
		}
		o, ok := known[key]
		switch {
		case !ok:
			hint := ""
			if near := nearestKey(key, fileKeys); near != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", near)
			}
			add(key, "unknown key %q%s", key, hint)
		case o.noConfig:
			add(key, "key %q is command-line only (--%s), not a config key", key, o.flag)
		default:
			if err := checkType(o.kind, v); err != nil {
				add(key, "key %q: %v", key, err)
			}
		}
	}
	checkCodecIeKeys(codecKeys, fk.Get, add)
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].line != errs[j].line {
			return errs[i].line < errs[j].line
		}
		return errs[i].key < errs[j].key
	})
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = file.at(e.line) + ": " + e.msg
	}
	return usagef("%s", strings.Join(msgs, "\n"))
}

type lineError struct {
	line int
	key  string
	msg  string
}

// nearestKey names the known key an unknown one most likely meant: the
// same section with a leaf within two edits (named by its leaf, as the
// file spells it), or any key within two edits of the whole, or the same
// leaf in another section (named whole). "" when none is close.
func nearestKey(key string, known []string) string {
	parent, leaf := splitKey(key)
	best, bestD := "", math.MaxInt
	for _, k := range known {
		kp, kl := splitKey(k)
		if kp == parent {
			d := filter.EditDistance(leaf, kl)
			if d > 2 && len(leaf) >= 3 && strings.HasPrefix(kl, leaf) {
				d = 2 // a key cut short: pdd for pdd_threshold
			}
			if d <= 2 && (d < bestD || (d == bestD && kl < best)) {
				best, bestD = kl, d
			}
		}
	}
	if best != "" {
		return best
	}
	for _, k := range known {
		_, kl := splitKey(k)
		d := filter.EditDistance(key, k)
		if kl == leaf {
			d = 1 // the right key in the wrong section
		}
		if d <= 2 && (d < bestD || (d == bestD && k < best)) {
			best, bestD = k, d
		}
	}
	return best
}

func splitKey(key string) (parent, leaf string) {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// nearestName is nearestKey for one flat list of names.
func nearestName(name string, known []string) string {
	best, bestD := "", math.MaxInt
	for _, k := range known {
		if d := filter.EditDistance(name, k); d <= 2 && (d < bestD || (d == bestD && k < best)) {
			best, bestD = k, d
		}
	}
	return best
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
