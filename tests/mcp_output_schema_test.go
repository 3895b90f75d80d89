package tests

// With --mcp-output-schemas every tool that advertises an outputSchema must
// answer with structuredContent that validates against it (MCP: "if an
// output schema is provided, servers MUST provide structured results that
// conform to this schema"). This test starts the built binary on public
// captures, calls every registered tool with valid arguments discovered
// from the capture (list_dialogs, rtp_stats, lint_dialog ...) and checks
// each answer with an independent JSON Schema validator
// (github.com/google/jsonschema-go, already in the module graph through the
// go-sdk client). It checks twice: against the schema as advertised, and
// against a strict copy in which every object with named properties admits
// no other member, so an answer carrying a field the schema does not
// describe fails too. A tool that may answer with a rendered document
// (markdown, text, yang-json) carries no structuredContent for it
// (mcp-server-design-notes: no invented wrapper key), so it advertises no
// outputSchema at all; its json answers are still validated, against the
// answer type's schema the registry generates (the one docs/bundles
// documents).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sipnab/sipnab/internal/testcap"
)

// sampleCaptureName is the sample capture the tools' example calls name.
const sampleCaptureName = "sip-rtp-g711.pcap"

// outputSchemaCaptures are the public captures the conformance test reads:
// calls that succeed, fail, are cancelled, re-INVITE, carry DTMF, run over
// TCP, through a B2BUA and a proxy; orphaned RTP; a hostile INVITE; a
// capture with no SIP at all.
var outputSchemaCaptures = []string{
	sampleCaptureName,
	"b2bua-asterisk.pcapng",
	"sip-auth-failure.pcapng",
	"sip-488-codec-reject.pcapng",
	"sip-routing-error.pcapng",
	"register-invite-reinvite-bye.pcap",
	"DTMFsipinfo.pcap",
	"codec-negotiation.pcap",
	"sip-proxy.pcap",
	"sip-over-tcp.pcap",
	"Asterisk_ZFONE_XLITE.pcap",
	"rtp-protocol.pcap",
	"metasploit-sip-invite-spoof.pcap",
	"sip-rtp-opus-hybrid.pcap",
	"http-example.cap",
	"sipp-branch-scenario.pcapng",
}

// callsPerCapture bounds the Call-IDs each per-call tool is called with.
const callsPerCapture = 4

// schemaCheck is one tool's advertised output schema, resolved twice.
type schemaCheck struct {
	loose, strict *jsonschema.Resolved
}

// conformance counts what was checked, across captures.
type conformance struct {
	mu        sync.Mutex
	validated map[string]int // tool → structured answers validated
	called    map[string]int // tool → successful calls
}

func (c *conformance) add(tool string, validated bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.called[tool]++
	if validated {
		c.validated[tool]++
	}
}

func TestOutputSchemasHoldOnTheLiveWire(t *testing.T) {
	seen := &conformance{validated: map[string]int{}, called: map[string]int{}}
	// The schema of every answer type, advertised or not.
	documented := map[string]*schemaCheck{}
	for _, b := range registry(t).Bundles() {
		for _, tool := range b.Tools {
			raw, err := json.Marshal(tool.OutputSchema())
			if err != nil {
				t.Fatal(err)
			}
			documented[tool.Name] = resolveBoth(t, tool.Name, raw)
		}
	}
	advertised := map[string]bool{}
	registered := map[string]bool{}
	for _, name := range outputSchemaCaptures {
		t.Run(name, func(t *testing.T) {
			// --portrange 1-65535: every capture's SIP is analysed, whatever
			// its ports (several run on 5080-5082 or 10270).
			// The detectors armed: security_findings and
			// generate_fail2ban_rule answer from what they recorded
			// (digest and scanner findings on several captures).
			args := append([]string{"-N", "--mcp", "--mcp-output-schemas", "--mcp-max-response-bytes", "4194304", "--portrange", "1-65535",
				"--detect-scanner", "--reg-flood", "--digest-leak", "-I", testcap.Public(name)},
				fileToolArgs(t, testcap.Public(name))...)
			s := startRaw(t, args...)
			s.waitLoaded()
			checks := outputSchemas(t, s)
			for tool, c := range checks {
				registered[tool] = true
				if c != nil {
					advertised[tool] = true
				}
			}
			for _, tc := range discoverCalls(t, s, name == sampleCaptureName) {
				t.Run(tc.label(), func(t *testing.T) {
					c, ok := checks[tc.tool]
					if !ok {
						t.Fatalf("%s is not registered", tc.tool)
					}
					r := s.on(t).call(tc.tool, tc.args)
					if r.Err != nil {
						t.Fatalf("JSON-RPC error %d: %s (args %v)", r.Err.Code, r.Err.Message, tc.args)
					}
					if r.IsError {
						t.Fatalf("tool error result: %s", r.Response)
					}
					if c == nil {
						// No outputSchema (a tool that renders documents):
						// a document carries no structuredContent, a json
						// answer meets the answer type's schema.
						structured := len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null"
						if structured && documented[tc.tool] != nil {
							checkStructured(t, documented[tc.tool], r)
						}
						seen.add(tc.tool, structured)
						return
					}
					seen.add(tc.tool, true)
					checkStructured(t, c, r)
				})
			}
		})
	}
	if t.Failed() {
		return
	}
	// Every registered tool was called, and every advertised schema met at
	// least one structured answer: the test cannot pass by calling nothing.
	var tools []string
	for tool := range registered {
		tools = append(tools, tool)
	}
	sort.Strings(tools)
	var lines []string
	for _, tool := range tools {
		if tool == "start_tls_capture" && seen.called[tool] == 0 {
			// skipped above (it attaches uprobes); TestTLSCaptureE2E
			// validates a real answer against its schema
			lines = append(lines, tool+" in TestTLSCaptureE2E")
			continue
		}
		if seen.called[tool] == 0 {
			t.Errorf("%s was never called with valid arguments", tool)
		}
		if advertised[tool] && seen.validated[tool] == 0 {
			t.Errorf("%s advertises an outputSchema that no answer was validated against", tool)
		}
		if !advertised[tool] && seen.called[tool] > 0 && seen.validated[tool] == seen.called[tool] {
			t.Errorf("%s advertises no outputSchema, yet every answer carried structuredContent", tool)
		}
		lines = append(lines, fmt.Sprintf("%s %d/%d", tool, seen.validated[tool], seen.called[tool]))
	}
	t.Logf("validated/successful calls per tool: %s", strings.Join(lines, ", "))
}

// TestOutputSchemasHoldOverHTTPE2E repeats the check over streamable HTTP
// with the independent go-sdk client in the newer protocol era: the
// outputSchema it lists and the structuredContent it decodes, for every
// call the stdio test makes on the sample capture.
func TestOutputSchemasHoldOverHTTPE2E(t *testing.T) {
	// The calls, discovered over stdio on the same capture.
	disc := startRaw(t, append([]string{"-N", "--mcp", "--mcp-output-schemas", "-I", sampleCapture()}, fileToolArgs(t, sampleCapture())...)...)
	disc.waitLoaded()
	calls := discoverCalls(t, disc, true)

	token := "e2e-output-schemas-token-0123456789"
	srv := startHTTP(t, []string{"SIPNAB_MCP_TOKEN=" + token}, append([]string{"-N", "--mcp", "--mcp-transport", "http",
		"--mcp-output-schemas", "--mcp-rate-limit-per-peer", "0", "-I", sampleCapture()}, fileToolArgs(t, sampleCapture())...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := gosdk.NewClient(&gosdk.Implementation{Name: "e2e-output-schemas", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: httpClient(token), MaxRetries: -1},
		&gosdk.ClientSessionOptions{ProtocolVersion: eraModern})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]*schemaCheck{}
	for _, tl := range list.Tools {
		checks[tl.Name] = nil
		if tl.OutputSchema != nil {
			raw, err := json.Marshal(tl.OutputSchema)
			if err != nil {
				t.Fatal(err)
			}
			checks[tl.Name] = resolveBoth(t, tl.Name, raw)
		}
	}
	waitLoaded(t, ctx, gosdkSession{cs})
	validated := 0
	for _, tc := range calls {
		t.Run(tc.label(), func(t *testing.T) {
			check, ok := checks[tc.tool]
			if !ok {
				t.Fatalf("%s is not listed over HTTP", tc.tool)
			}
			args := tc.args
			if _, paged := args["cursor"]; paged {
				// A cursor is bound to the capture instance that sealed
				// it (docs/mcp-protocol.md): one discovered over stdio is
				// refused here, so take this server's own next_cursor.
				args = map[string]any{}
				for k, v := range tc.args {
					if k != "cursor" {
						args[k] = v
					}
				}
				first, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: tc.tool, Arguments: args})
				if err != nil || first.IsError {
					t.Fatalf("first page: %v %+v", err, first)
				}
				page, _ := first.StructuredContent.(map[string]any)
				next, _ := page["next_cursor"].(string)
				if next == "" {
					t.Fatalf("first page over HTTP has no next_cursor: %v", page)
				}
				args["cursor"] = next
			}
			r, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: tc.tool, Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			if r.IsError {
				t.Fatalf("tool error result: %+v", r.Content)
			}
			if check == nil {
				return
			}
			if r.StructuredContent == nil {
				t.Fatal("the tool has an outputSchema but answered without structuredContent")
			}
			raw, err := json.Marshal(r.StructuredContent)
			if err != nil {
				t.Fatal(err)
			}
			text, ok := r.Content[0].(*gosdk.TextContent)
			var fromText, fromStructured any
			if !ok || json.Unmarshal([]byte(text.Text), &fromText) != nil || json.Unmarshal(raw, &fromStructured) != nil ||
				!reflect.DeepEqual(fromText, fromStructured) {
				t.Errorf("structuredContent is not the first text block")
			}
			checkStructured(t, check, toolResult{StructuredContent: raw, Content: []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}{{Type: "text", Text: string(raw)}}})
			validated++
		})
	}
	if validated == 0 {
		t.Error("no structured answer was validated over HTTP")
	}
	t.Logf("%d calls over HTTP, %d structured answers validated", len(calls), validated)
}

// checkStructured validates one successful answer against its tool's
// output schema.
func checkStructured(t *testing.T, c *schemaCheck, r toolResult) {
	t.Helper()
	if len(r.StructuredContent) == 0 || string(r.StructuredContent) == "null" {
		t.Fatalf("the tool has an outputSchema but answered without structuredContent:\n%.600s", r.Response)
	}
	if len(r.Content) == 0 || string(r.StructuredContent) != r.Content[0].Text {
		t.Errorf("structuredContent is not the first text block")
	}
	var inst any
	if err := json.Unmarshal(r.StructuredContent, &inst); err != nil {
		t.Fatal(err)
	}
	if err := c.loose.Validate(inst); err != nil {
		t.Fatalf("structuredContent breaks the outputSchema: %v\n%.800s", err, r.StructuredContent)
	}
	if err := c.strict.Validate(inst); err != nil {
		t.Errorf("structuredContent carries a member the outputSchema does not describe: %v", err)
	}
}

// outputSchemas reads tools/list and resolves every advertised output
// schema (nil for a tool that advertises none).
func outputSchemas(t *testing.T, s *rawSession) map[string]*schemaCheck {
	t.Helper()
	_, line := s.request("tools/list", map[string]any{})
	var list struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]*schemaCheck{}
	for _, tl := range list.Result.Tools {
		if len(tl.OutputSchema) == 0 {
			out[tl.Name] = nil
			continue
		}
		out[tl.Name] = resolveBoth(t, tl.Name, tl.OutputSchema)
	}
	if len(out) == 0 {
		t.Fatal("tools/list listed no tools")
	}
	return out
}

// resolveBoth resolves a tool's output schema as given and strict.
func resolveBoth(t *testing.T, tool string, raw json.RawMessage) *schemaCheck {
	t.Helper()
	loose, err := resolveSchema(raw, false)
	if err != nil {
		t.Fatalf("%s: the outputSchema does not resolve: %v", tool, err)
	}
	strict, err := resolveSchema(raw, true)
	if err != nil {
		t.Fatalf("%s: strict copy: %v", tool, err)
	}
	return &schemaCheck{loose: loose, strict: strict}
}

// resolveSchema parses an output schema for the validator; strict closes
// every object that names its properties (additionalProperties false).
func resolveSchema(raw json.RawMessage, strict bool) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("top-level type %q, want object (structuredContent is an object)", s.Type)
	}
	if strict {
		closeObjects(&s)
	}
	return s.Resolve(nil)
}

func closeObjects(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	isObject := s.Type == "object"
	for _, ty := range s.Types {
		isObject = isObject || ty == "object"
	}
	if isObject && s.AdditionalProperties == nil {
		s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	}
	for _, p := range s.Properties {
		closeObjects(p)
	}
	for _, d := range s.Defs {
		closeObjects(d)
	}
	for _, l := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf} {
		for _, c := range l {
			closeObjects(c)
		}
	}
	closeObjects(s.Items)
	closeObjects(s.AdditionalProperties)
}

// toolCall is one call the conformance test makes.
type toolCall struct {
	tool string
	args map[string]any
}

func (c toolCall) label() string {
	if len(c.args) == 0 {
		return c.tool
	}
	b, _ := json.Marshal(c.args)
	l := c.tool + " " + string(b)
	if len(l) > 90 {
		l = l[:90]
	}
	return l
}

// fileToolArgs enables the file tools (captures bundle) on a root of their
// own holding a copy of the capture and of the public sip_call.pcap
// (compare_captures' example compares it with the sample), and
// save_findings, export_audio (--retain-audio) and shutdown_server (a dry
// run, its default): their examples then answer. The root is open to every
// user (sharedDir, then writable):
// the HTTP server drops root privileges to nobody, and export_capture
// writes there.
func fileToolArgs(t *testing.T, capture string) []string {
	t.Helper()
	root := sharedDir(t)
	for _, c := range []string{capture, testcap.Public("sip_call.pcap")} {
		data, err := os.ReadFile(c)
		if err == nil {
			err = os.WriteFile(filepath.Join(root, filepath.Base(c)), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	return []string{"--mcp-file-root", root, "--mcp-allow-save-findings", "--retain-audio", "--mcp-allow-shutdown"}
}

// discoverCalls builds valid calls to every tool from what the capture
// holds, and, on the sample capture testdata/sip-rtp-g711.pcap (whose
// Call-IDs they name), every registered tool's example calls
// (sdk.Descriptor.Examples), so a new tool's answers meet its schema without
// an edit here.
func discoverCalls(t *testing.T, s *rawSession, sample bool) []toolCall {
	t.Helper()
	var examples []toolCall
	if sample {
		ex, _ := exampleCalls(registry(t))
		for _, c := range ex {
			if hc, ok := handChecked[c.golden]; ok && hc.shape == refused {
				// An example that refuses where the goldens run it
				// (cancel_find_in_captures before any sweep, a fail2ban
				// rule from no finding): its refusal is checked by
				// TestToolGoldenTranscriptsE2E.
				continue
			}
			if c.tool == "start_tls_capture" {
				// attaches uprobes: it answers only as root, with
				// --mcp-allow-tls-capture and a TLS library mapped, and
				// never over HTTP (root dropped). Its answer's type is
				// stop_tls_capture's, whose example answers here;
				// tests/tls_e2e_test.go checks a real start.
				continue
			}
			examples = append(examples, toolCall{c.tool, c.args})
		}
	}
	calls := []toolCall{
		{"capture_status", nil},
		{"get_capture_report", nil},
		{"get_capture_report", map[string]any{"format": "json"}},
		{"get_capture_report", map[string]any{"format": "yang-json"}},
		{"get_capture_report", map[string]any{"format": "markdown"}},
		{"get_capture_report", map[string]any{"format": "text"}},
		{"list_dialogs", nil},
		{"list_dialogs", map[string]any{"limit": 1}},
		// Above --mcp-max-rows: clamped, and limit_applied in the answer.
		{"list_dialogs", map[string]any{"limit": 5000}},
		{"list_dialogs", map[string]any{"fields": []string{"call_id", "state", "timing"}}},
		{"find_problems", nil},
		{"find_problems", map[string]any{"kinds": []string{"problems", "one-way", "slow-setup"}}},
		{"search_messages", map[string]any{"query": "INVITE"}},
		{"search_messages", map[string]any{"query": "a=rtpmap", "limit": 2}},
		{"rtp_stats", nil},
		{"rtp_stats", map[string]any{"orphaned": true}},
		{"rtp_stats", map[string]any{"min_mos": 1.0, "max_mos": 4.5}},
		{"timeline", nil},
		{"timeline", map[string]any{"bucket_seconds": 1}},
		{"validate_filter", map[string]any{"expr": "state == failed"}},
		{"validate_filter", map[string]any{"expr": "state =="}},
		{"tail_dialogs", nil},
		{"tail_dialogs", map[string]any{"limit": 1}},
		{"await_condition", map[string]any{"filter": "problems", "timeout_seconds": 0}},
		{"await_condition", map[string]any{"filter": "state == Redirected", "timeout_seconds": 0}},
		{"explain_response_code", map[string]any{"code": 486}},
		{"explain_response_code", map[string]any{"code": 299}},
	}
	// Second pages: an answer with a cursor in, and one mid-walk.
	for _, p := range []struct{ tool, rows string }{
		{"list_dialogs", "dialogs"}, {"find_problems", "dialogs"}, {"search_messages", "hits"},
		{"tail_dialogs", "dialogs"}, {"rtp_stats", "streams"},
	} {
		args := map[string]any{"limit": 1}
		if p.tool == "search_messages" {
			args["query"] = "sip"
		}
		first, _ := s.ok(p.tool, args)
		if c := str(first["next_cursor"]); c != "" {
			next := map[string]any{"limit": 1, "cursor": c}
			if p.tool == "search_messages" {
				next["query"] = "sip"
			}
			calls = append(calls, toolCall{p.tool, next})
		}
	}
	for _, g := range []string{"state", "response_code", "method", "from.user", "to.user", "ua", "src.ip", "dst.ip", "rtp.codec"} {
		calls = append(calls, toolCall{"aggregate_dialogs", map[string]any{"group_by": g}})
		calls = append(calls, toolCall{"group_dialogs", map[string]any{"by": g}})
	}
	for _, g := range []string{"to_domain", "hour", "next_hop"} {
		calls = append(calls, toolCall{"group_dialogs", map[string]any{"by": g}})
	}
	calls = append(calls, toolCall{"group_dialogs", map[string]any{"by": "method", "metrics": []string{"count", "mos_p10"}}})
	calls = append(calls, toolCall{"security_findings", nil}, toolCall{"security_findings", map[string]any{"kinds": []string{"digest"}, "limit": 1}})
	if sf, _ := s.ok("security_findings", map[string]any{"limit": 1}); sf != nil {
		for _, row := range rowsOf(sf, "findings") {
			calls = append(calls, toolCall{"generate_fail2ban_rule", map[string]any{"finding_id": str(row["finding_id"])}})
		}
	}

	// Call-IDs: problem dialogs first, then the rest, and the ones carrying
	// RTP.
	var ids []string
	add := func(id string) {
		for _, x := range ids {
			if x == id {
				return
			}
		}
		if id != "" && len(ids) < callsPerCapture {
			ids = append(ids, id)
		}
	}
	var created string
	prob, _ := s.ok("find_problems", map[string]any{"fields": []string{"call_id"}, "limit": 2})
	for _, row := range rowsOf(prob, "dialogs") {
		add(str(row["call_id"]))
	}
	sweep, _ := s.ok("rtp_stats", map[string]any{"limit": 50})
	for _, row := range rowsOf(sweep, "streams") {
		if id := str(row["associated_dialog"]); id != "" && len(ids) < callsPerCapture-1 {
			add(id)
		}
	}
	all, _ := s.ok("list_dialogs", map[string]any{"fields": []string{"call_id", "created_at"}, "limit": 50})
	for _, row := range rowsOf(all, "dialogs") {
		add(str(row["call_id"]))
		if c := str(row["created_at"]); c != "" && (created == "" || c < created) {
			created = c
		}
	}
	if created != "" {
		calls = append(calls, toolCall{"search_by_time", map[string]any{"start": created}})
	} else {
		calls = append(calls, toolCall{"search_by_time", map[string]any{"start": "2000-01-01T00:00:00Z"}})
	}
	ruleIDs := map[string]bool{}
	for i, id := range ids {
		one := map[string]any{"call_id": id}
		calls = append(calls,
			toolCall{"triage_call", one},
			toolCall{"get_dialog", one},
			toolCall{"get_dialog", map[string]any{"call_id": id, "max_messages": 1}},
			toolCall{"get_dialog", map[string]any{"call_id": id, "max_messages": 5000}},
			toolCall{"rtp_stats", one},
			toolCall{"find_correlated", one},
			toolCall{"get_call_tree", one},
			toolCall{"get_dialog_report", one},
			toolCall{"get_dialog_report", map[string]any{"call_id": id, "format": "json"}},
			toolCall{"get_dialog_report", map[string]any{"call_id": id, "format": "markdown"}},
			toolCall{"get_dialog_report", map[string]any{"call_id": id, "format": "text"}},
			toolCall{"render_ladder", one},
			toolCall{"render_ladder", map[string]any{"call_id": id, "format": "text"}},
			toolCall{"get_message", map[string]any{"call_id": id, "index": 0}},
			toolCall{"validate_message", map[string]any{"call_id": id, "index": 0}},
			toolCall{"get_sdp_timeline", one},
			toolCall{"check_codec_negotiation", one},
			toolCall{"lint_dialog", one},
			toolCall{"lint_dialog", map[string]any{"call_id": id, "severity_min": "error"}},
			toolCall{"generate_wireshark_filter", one},
			toolCall{"generate_wireshark_filter", map[string]any{"call_id": id, "include_media": false}},
			toolCall{"generate_repro", one},
			toolCall{"compare_dialogs", map[string]any{"call_id_a": id, "call_id_b": ids[(i+1)%len(ids)]}},
		)
		lint, _ := s.ok("lint_dialog", one)
		for _, f := range rowsOf(lint, "findings") {
			if r := str(f["rule_id"]); r != "" {
				ruleIDs[r] = true
			}
		}
		// The last message too, which is often a response; get_dialog's
		// second page.
		d, _ := s.ok("get_dialog", map[string]any{"call_id": id, "max_messages": 1})
		if c := str(d["next_cursor"]); c != "" {
			calls = append(calls, toolCall{"get_dialog", map[string]any{"call_id": id, "max_messages": 1, "cursor": c}})
		}
		if n, ok := d["total_messages"].(float64); ok && n > 1 {
			calls = append(calls,
				toolCall{"get_message", map[string]any{"call_id": id, "index": int(n) - 1}},
				toolCall{"validate_message", map[string]any{"call_id": id, "index": int(n) - 1}})
		}
	}
	ruleIDs["SIP-3261-8.1.1.7-BRANCH-COOKIE"] = true
	var rules []string
	for r := range ruleIDs {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	for _, r := range rules {
		calls = append(calls, toolCall{"explain_rule", map[string]any{"rule_id": r}})
	}
	if sample {
		// A sweep held for cancel_find_in_captures (whose own example runs
		// before any sweep): ids count up from the examples' sweeps.
		n := 0
		for _, c := range examples {
			if c.tool == "find_in_captures" {
				n++
			}
		}
		calls = append(calls, toolCall{"find_in_captures", map[string]any{"filter": "method == INVITE"}},
			toolCall{"cancel_find_in_captures", map[string]any{"job_id": fmt.Sprintf("sweep-%d", n+1)}})
	}
	return append(examples, calls...)
}

// rendersDocuments reports whether a registered tool may answer with a
// rendered document (sdk Descriptor.Renders), so it advertises no
// outputSchema even with --mcp-output-schemas.
func rendersDocuments(t *testing.T, name string) bool {
	t.Helper()
	renderingOnce.Do(func() {
		rendering = map[string]bool{}
		for _, b := range registry(t).Bundles() {
			for _, tool := range b.Tools {
				rendering[tool.Name] = tool.Renders
			}
		}
	})
	return rendering[name]
}

var (
	renderingOnce sync.Once
	rendering     map[string]bool
)

func rowsOf(m map[string]any, key string) []map[string]any {
	var out []map[string]any
	list, _ := m[key].([]any)
	for _, v := range list {
		if row, ok := v.(map[string]any); ok {
			out = append(out, row)
		}
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
