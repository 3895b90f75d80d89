package tests

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/internal/testcap"
)

// wireCap is the --mcp-max-response-bytes the wire-size tests run under.
const wireCap = 12000

// wireTool is a tools/list entry: its name and input schema.
type wireTool struct {
	Name        string `json:"name"`
	InputSchema struct {
		Properties map[string]struct {
			Type    any      `json:"type"`
			Enum    []string `json:"enum"`
			Maximum *float64 `json:"maximum"`
		} `json:"properties"`
		Required []string `json:"required"`
	} `json:"inputSchema"`
}

// wireSubjects are the calls the largest answers come from: the dialog
// with the most messages and the one with the most RTP streams; and the
// address that took part in the most dialogs (describe_endpoint's ip).
type wireSubjects struct {
	big, other, media string
	ip                string
	// refs are evidence pointers of big's messages (get_dialog), file the
	// capture's name in the file root (fileToolArgs), for the captures
	// bundle.
	refs []string
	file string
	// finding is the id of a security finding the armed detectors
	// recorded ("" when the capture gives none).
	finding string
	// jobID is a sweep find_in_captures started just before a tool taking
	// a job_id is called (held until that call collects it).
	jobID string
}

// largeArgs builds, from a tool's input schema, the argument sets that
// make its answer large: the largest limit, top_n and max_messages its
// schema allows, every format, quality_intervals on, media included, the
// finest timeline, a window over the whole capture, each subject call.
// Arguments it does not know it leaves out (their defaults), unless
// required.
func largeArgs(tl wireTool, sub wireSubjects) []map[string]any {
	sets := []map[string]any{{}}
	with := func(k string, vs ...any) {
		var next []map[string]any
		for _, s := range sets {
			for _, v := range vs {
				m := map[string]any{}
				for a, b := range s {
					m[a] = b
				}
				m[k] = v
				next = append(next, m)
			}
		}
		sets = next
	}
	names := make([]string, 0, len(tl.InputSchema.Properties))
	for k := range tl.InputSchema.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	required := func(k string) bool { return slices.Contains(tl.InputSchema.Required, k) }
	for _, k := range names {
		p := tl.InputSchema.Properties[k]
		most := func(def float64) float64 {
			if p.Maximum != nil {
				return *p.Maximum
			}
			return def
		}
		switch {
		case k == "call_id" && required(k):
			subjects := []any{sub.big}
			if sub.media != sub.big {
				subjects = append(subjects, sub.media)
			}
			with(k, subjects...)
		case k == "call_id":
			// Optional: the sweep (the other arguments) and, below, each
			// subject call alone.
		case k == "rule_id":
			with(k, "SIP-3261-8.1.1-MANDATORY-HEADER-MISSING")
		case k == "call_id_a":
			with(k, sub.big)
		case k == "call_id_b":
			with(k, sub.other)
		case k == "limit" || k == "top_n" || k == "max_messages":
			with(k, most(1000))
		case k == "format" && len(p.Enum) > 0:
			vs := make([]any, len(p.Enum))
			for i, e := range p.Enum {
				vs[i] = e
			}
			with(k, vs...)
		case k == "quality_intervals" || k == "include_media":
			with(k, true)
		case k == "bucket_seconds":
			with(k, 1)
		case k == "start":
			with(k, "2000-01-01T00:00:00Z")
		case k == "end":
			with(k, "2100-01-01T00:00:00Z")
		case k == "query":
			with(k, "SIP")
		case (k == "group_by" || k == "by") && len(p.Enum) > 0:
			vs := make([]any, len(p.Enum))
			for i, e := range p.Enum {
				vs[i] = e
			}
			with(k, vs...)
		case k == "group_by" || k == "by":
			with(k, "from.user")
		case k == "ip" && sub.ip != "":
			with(k, sub.ip)
		case k == "rules":
			// every metric, a scope of each kind
			with(k, []any{
				map[string]any{"metric": "count", "op": ">=", "value": 0, "scope": "filter:method == INVITE"},
				map[string]any{"metric": "asr", "op": ">=", "value": 0, "min_sample": 1},
				map[string]any{"metric": "lint_errors", "op": ">=", "value": 0, "scope": "severity:info"},
				map[string]any{"metric": "mos_p10", "op": ">=", "value": 0, "min_sample": 1},
			})
		case k == "timeout_seconds":
			with(k, 0)
		case k == "sample_seconds" && required(k):
			with(k, 1) // capture_health's shortest window
		case k == "index":
			with(k, 0)
		case k == "code":
			with(k, 486)
		case k == "refs":
			with(k, sub.refs)
		case k == "frame_ref":
			vs := make([]any, len(sub.refs))
			for i, r := range sub.refs {
				vs[i] = r
			}
			with(k, vs...)
		case k == "max_bytes":
			with(k, most(4096))
		case k == "a":
			with(k, sub.file)
		case k == "b":
			with(k, "sip_call.pcap")
		case k == "dimensions":
			with(k, []string{"state", "response_code", "method", "from.user", "to.user", "ua", "src.ip", "dst.ip", "rtp.codec"})
		case k == "filename":
			// a name of the tool's own: export_capture and export_audio
			// share the file root, and a taken name is refused
			with(k, tl.Name+".out")
		case k == "container":
			// analyze_vcon: a container with a sip-message-trace of one
			// INVITE (the trace shape export_vcon writes)
			with(k, wireVConContainer)
		case k == "finding_id":
			id := sub.finding
			if id == "" {
				id = "scanner_detected@192.0.2.1@2026-01-01T00:00:00Z" // held nowhere: the not_found refusal
			}
			with(k, id)
		case k == "call_ids":
			// every subject call in one package
			ids := []string{sub.big}
			for _, id := range []string{sub.other, sub.media} {
				if id != "" && !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
			with(k, ids)
		case k == "job_id":
			with(k, sub.jobID)
		case required(k) && (k == "filter" || k == "expr"):
			with(k, "method == INVITE")
		case required(k) && len(p.Enum) > 0:
			with(k, p.Enum[0])
		case required(k):
			with(k, "x")
		}
	}
	if _, ok := tl.InputSchema.Properties["call_id"]; ok && !required("call_id") {
		for _, id := range []string{sub.big, sub.media} {
			one := map[string]any{"call_id": id}
			for _, flag := range []string{"quality_intervals", "include_media"} {
				if _, ok := tl.InputSchema.Properties[flag]; ok {
					one[flag] = true
				}
			}
			sets = append(sets, one)
		}
	}
	return sets
}

// manyDialogCapture writes a generated capture of many short calls and
// registrations (about 1,300 dialogs), the shape whose listings, reports
// and aggregates grow without bound.
func manyDialogCapture(t *testing.T) string {
	t.Helper()
	p := filepath.Join(sharedDir(t), "many-dialogs.pcap")
	cfg := gen.Config{Seed: 11, Calls: 1000, Duration: time.Second, Spacing: 5 * time.Millisecond, Registers: 300}
	if _, err := gen.WriteFiles(cfg, p, ""); err != nil {
		t.Fatal(err)
	}
	return p
}

// longDialogCapture writes one call of 605 SIP messages: the INVITE, then
// 200 re-INVITEs each moving the caller's media (a new RTP stream each
// time, 20 packets), with their 200s and ACKs, then the BYE: the shape
// whose per-call views (ladder, report, SDP timeline, messages, streams)
// grow without bound.
func longDialogCapture(t *testing.T) string {
	t.Helper()
	const id = "long-dialog@a.example"
	const aSig, bSig = "192.0.2.10:5060", "192.0.2.20:5060"
	var frames []accFrame
	add := func(ms int, src, dst string, p []byte) {
		frames = append(frames, accFrame{accAt(ms), accIPEth(accUDP(t, src, dst, p))})
	}
	add(0, aSig, bSig, accReq("INVITE", id, 1, "", accSDP("192.0.2.10", 16000, "0")))
	add(100, bSig, aSig, accResp(200, "OK", "INVITE", id, 1, accSDP("192.0.2.20", 20000, "0")))
	add(110, aSig, bSig, accReq("ACK", id, 1, "bt1", ""))
	ms := 200
	for i := range 200 {
		port := 16002 + 2*i
		cseq := 2 + i
		add(ms, aSig, bSig, accReq("INVITE", id, cseq, "bt1", accSDP("192.0.2.10", port, "0 8")))
		add(ms+50, bSig, aSig, accResp(200, "OK", "INVITE", id, cseq, accSDP("192.0.2.20", 20000, "0")))
		add(ms+60, aSig, bSig, accReq("ACK", id, cseq, "bt1", ""))
		for j := range 20 {
			add(ms+100+20*j, fmt.Sprintf("192.0.2.10:%d", port), "192.0.2.20:20000",
				accRTP(0, j == 0, uint16(j), uint32(160*j), uint32(0x1000+i), make([]byte, 160)))
		}
		ms += 600
	}
	add(ms, aSig, bSig, accReq("BYE", id, 300, "bt1", ""))
	add(ms+50, bSig, aSig, accResp(200, "OK", "BYE", id, 300, ""))
	return accWrite(t, sharedDir(t), "long-dialog.pcap", layers.LinkTypeEthernet, frames)
}

// wireSubjectsOf finds the subject calls of a loaded capture through the
// tools themselves, paging under the cap.
func wireSubjectsOf(t *testing.T, s *rawSession) wireSubjects {
	t.Helper()
	var sub wireSubjects
	most := -1
	cursor := ""
	for range 200 {
		args := map[string]any{"limit": 1000, "fields": []string{"msg_count"}}
		if cursor != "" {
			args["cursor"] = cursor
		}
		m, _ := s.ok("list_dialogs", args)
		for _, d := range m["dialogs"].([]any) {
			row := d.(map[string]any)
			id, _ := row["call_id"].(string)
			if n, _ := row["msg_count"].(float64); int(n) > most {
				most, sub.other, sub.big = int(n), sub.big, id
			} else if sub.other == "" {
				sub.other = id
			}
		}
		next, _ := m["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if sub.big == "" {
		t.Fatal("no dialog in the capture")
	}
	if sub.other == "" {
		sub.other = sub.big
	}
	streams := map[string]int{}
	m, _ := s.ok("rtp_stats", map[string]any{"limit": 1000, "fields": []string{"associated_dialog"}})
	for _, st := range m["streams"].([]any) {
		if id, _ := st.(map[string]any)["associated_dialog"].(string); id != "" {
			streams[id]++
		}
	}
	if s.tools()["top_talkers"] {
		m, _ := s.ok("top_talkers", map[string]any{"by": "ip", "limit": 1})
		if rows, _ := m["talkers"].([]any); len(rows) > 0 {
			sub.ip, _ = rows[0].(map[string]any)["key"].(string)
		}
	}
	gd, _ := s.ok("get_dialog", map[string]any{"call_id": sub.big, "max_messages": 20})
	for _, msg := range gd["messages"].([]any) {
		if f, ok := msg.(map[string]any)["frame"].(string); ok && !slices.Contains(sub.refs, f) {
			sub.refs = append(sub.refs, f)
		}
	}
	sub.media = sub.big
	for id, n := range streams {
		if n > streams[sub.media] || (n == streams[sub.media] && id < sub.media) {
			sub.media = id
		}
	}
	if sf, _ := s.ok("security_findings", map[string]any{"limit": 1}); sf != nil {
		if rows, _ := sf["findings"].([]any); len(rows) > 0 {
			sub.finding, _ = rows[0].(map[string]any)["finding_id"].(string)
		}
	}
	return sub
}

// TestEveryToolAnswerFitsTheWireCap calls every tool tools/list names with
// the arguments that make its answer largest, on the largest public
// captures and a generated many-dialog capture, under
// --mcp-max-response-bytes 12000, and checks that no JSON-RPC response
// line on stdout (newline included) is longer: the cap bounds the text
// block, structuredContent and the envelope together. Answers the cap cut
// must say so; the test also checks that the cap did cut listings
// (returned below the limit with a cursor), so it cannot pass by every
// answer being small.
func TestEveryToolAnswerFitsTheWireCap(t *testing.T) {
	t.Parallel()
	captures := map[string]string{
		"sipp-branch-scenario.pcapng": testcap.Public("sipp-branch-scenario.pcapng"),
		"SIP_CALL_RTP_G711":           testcap.Public("SIP_CALL_RTP_G711"),
		"SIP_DTMF2.cap":               testcap.Public("SIP_DTMF2.cap"),
		"generated many dialogs":      manyDialogCapture(t),
		"generated long dialog":       longDialogCapture(t),
	}
	names := make([]string, 0, len(captures))
	for n := range captures {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			// The detectors armed, so security_findings has rows and
			// generate_fail2ban_rule a finding where the capture gives one.
			s := startRaw(t, append([]string{"-N", "--mcp", "--mcp-max-response-bytes", fmt.Sprint(wireCap),
				"--detect-scanner", "--reg-flood", "--digest-leak", "--fraud-detect", "-I", captures[name]},
				fileToolArgs(t, captures[name])...)...)
			s.waitLoaded()
			_, line := s.request("tools/list", map[string]any{})
			var list struct {
				Result struct {
					Tools []wireTool `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal(line, &list); err != nil || len(list.Result.Tools) == 0 {
				t.Fatalf("tools/list: %v %s", err, line)
			}
			sub := wireSubjectsOf(t, s)
			sub.file = filepath.Base(captures[name])
			answered, cut, largest := 0, 0, 0
			silent := map[string]string{} // tool -> its last refusal, until one call answers
			for _, tl := range list.Result.Tools {
				silent[tl.Name] = "no call"
				if _, ok := tl.InputSchema.Properties["job_id"]; ok {
					// A sweep of the root to poll or cancel.
					started, _ := s.ok("find_in_captures", map[string]any{"filter": "method == INVITE"})
					sub.jobID = str(started["job_id"])
				}
				for _, args := range largeArgs(tl, sub) {
					r := s.call(tl.Name, args)
					size := len(r.Response) + 1 // the line's newline
					largest = max(largest, size)
					if size > wireCap {
						t.Errorf("%s %v: %d bytes on the wire, over --mcp-max-response-bytes %d", tl.Name, args, size, wireCap)
					}
					if r.Err != nil || r.IsError {
						if _, ok := silent[tl.Name]; ok {
							silent[tl.Name] = string(r.Response)
						}
						continue
					}
					delete(silent, tl.Name)
					answered++
					if len(r.Content) == 0 || !json.Valid(r.StructuredContent) && r.StructuredContent != nil {
						t.Errorf("%s %v: malformed result %s", tl.Name, args, r.Response)
						continue
					}
					var m map[string]any
					if json.Unmarshal([]byte(r.Content[0].Text), &m) != nil {
						continue // a rendered document
					}
					if lim, ok := args["limit"].(float64); ok {
						if ret, ok := m["returned"].(float64); ok && ret < lim && m["truncated"] == true {
							cut++
						}
					}
					if m["truncated"] == true && m["complete"] == true {
						t.Errorf("%s %v: truncated and complete at once", tl.Name, args)
					}
				}
			}
			t.Logf("%s: %d tools, %d answers, %d listings cut by the cap, largest line %d bytes", name, len(list.Result.Tools), answered, cut, largest)
			if sub.finding == "" && strings.Contains(silent["generate_fail2ban_rule"], "This server holds: none") {
				// No finding on this capture: the refusal is the answer
				// (sipp-branch-scenario.pcapng gives one).
				delete(silent, "generate_fail2ban_rule")
			}
			for name, why := range silent {
				if name == "export_audio" && strings.Contains(why, "nothing retained for call") {
					continue // no G.711 audio in the capture: the documented -32603, a few hundred bytes
				}
				if name == "export_vcon" && strings.Contains(why, "cannot hold one container") {
					continue // a container is whole or refused (never cut): these calls' containers pass 12,000 bytes; TestVConE2E checks its answers
				}
				if name == "start_tls_capture" && strings.Contains(why, "--mcp-allow-tls-capture") {
					continue // off here: it attaches uprobes (TestTLSCaptureE2E); its answer holds no capture text, a few hundred bytes per library
				}
				t.Errorf("%s: no answer, only refusals (the test proves nothing for it): %.300s", name, why)
			}
			if name != "SIP_CALL_RTP_G711" && name != "SIP_DTMF2.cap" {
				if cut == 0 {
					t.Error("no listing was cut by the cap: the captures are too small to test it")
				}
			}
		})
	}
}

// TestToolAnswersFitTheWireCapOverHTTP makes the largest calls of the
// stdio test over the streamable HTTP transport and checks every
// JSON-RPC message in the response body against the cap.
func TestToolAnswersFitTheWireCapOverHTTP(t *testing.T) {
	t.Parallel()
	srv := startHTTP(t, nil, "--mcp-max-response-bytes", fmt.Sprint(wireCap), "--mcp-rate-limit-per-peer", "0", "--mcp-allow-shutdown",
		"-I", testcap.Public("sipp-branch-scenario.pcapng"))
	resp, body := rawPost(t, srv.URL, initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	rawPost(t, srv.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	messages := func(body string) []string {
		var out []string
		for _, l := range strings.Split(body, "\n") {
			l = strings.TrimPrefix(l, "data: ")
			if strings.HasPrefix(l, "{") {
				out = append(out, l)
			}
		}
		return out
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, b := rawPost(t, srv.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"capture_status","arguments":{}}}`, hdr)
		if strings.Contains(b, `\"source_exhausted\":true`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the capture did not load")
		}
		time.Sleep(50 * time.Millisecond)
	}
	calls := []string{
		`{"name":"list_dialogs","arguments":{"limit":1000}}`,
		`{"name":"find_problems","arguments":{"limit":1000}}`,
		`{"name":"search_messages","arguments":{"query":"SIP","limit":1000}}`,
		`{"name":"tail_dialogs","arguments":{"limit":1000}}`,
		`{"name":"get_capture_report","arguments":{"format":"json"}}`,
		`{"name":"get_capture_report","arguments":{"format":"markdown"}}`,
		`{"name":"rtp_stats","arguments":{"limit":1000,"quality_intervals":true}}`,
		`{"name":"timeline","arguments":{"bucket_seconds":1}}`,
	}
	for i, c := range calls {
		resp, body := rawPost(t, srv.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, 10+i, c), hdr)
		msgs := messages(body)
		if resp.StatusCode != 200 || len(msgs) == 0 {
			t.Fatalf("%s: %d %s", c, resp.StatusCode, body)
		}
		for _, m := range msgs {
			if len(m)+1 > wireCap {
				t.Errorf("%s: a %d-byte message over HTTP, over the %d cap", c, len(m)+1, wireCap)
			}
		}
	}
}

// wireVConContainer is a small vCon whose sip-message-trace holds one
// INVITE as base64url, for analyze_vcon.
var wireVConContainer = map[string]any{
	"vcon": "0.4.0", "uuid": "0190d3f2-5b1e-8000-8000-000000000001", "created_at": "2025-01-01T00:00:00Z",
	"parties": []any{}, "dialog": []any{},
	"attachments": []any{map[string]any{
		"purpose": "sip-message-trace", "encoding": "json", "mediatype": "application/json",
		"body": map[string]any{"messages": []any{map[string]any{
			"time": "2025-01-01T00:00:00Z", "src": "192.0.2.1:5060", "dst": "192.0.2.2:5060",
			"base64url": base64.RawURLEncoding.EncodeToString([]byte("INVITE sip:bob@192.0.2.2 SIP/2.0\r\n" +
				"Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK-wire1\r\nFrom: <sip:alice@192.0.2.1>;tag=a1\r\n" +
				"To: <sip:bob@192.0.2.2>\r\nCall-ID: wire-vcon-1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n")),
		}}},
	}},
}
