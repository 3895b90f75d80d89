package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// Golden transcripts of every registered tool's example calls
// (sdk.Descriptor.Examples), each made through the built binary over stdio
// on the sample capture (testdata/sip-rtp-g711.pcap: two INVITE calls from
// 10.0.2.20, display name "PCMU/8000", SDP codecs PCMU/8000 and
// telephone-event/8000, one BYE with a Q.850 Reason). A tool's first
// example is recorded in its bundle's folder,
// bundles/<id>/testdata/transcripts/<tool>.json, its n-th in
// <tool>-<n>.json; a new tool's examples are recorded with
//
//	go test ./tests -run TestToolGoldenTranscriptsE2E -update

// goldenVolatile are the values that change from run to run: wall-clock
// durations of the load and of the call; the dialog store's byte account
// (build-dependent structure sizes) and budget (sized for the machine).
var goldenVolatile = regexp.MustCompile(`(\\*"(?:uptime_sec|elapsed_sec|elapsed_ms|held_bytes|max_bytes|uptime_seconds|observed_ms)\\*":\s*)[0-9.eE+-]+`)

// goldenVolatileObjects are the server bundle's readings of this machine
// and this moment (runtime_stats' process, host and impact; capture_health's
// kernel clock), emptied; goldenVolatileText is the build's --version line;
// goldenVolatileList the bundles compiled in (server_capabilities), which
// adding a bundle changes.
var (
	goldenVolatileObjects = regexp.MustCompile(`(\\*"(?:process|host|impact|clock)\\*":\s*)\{[^{}]*\}`)
	goldenVolatileText    = regexp.MustCompile(`(\\*"version_line\\*":\s*\\*")[^"\\]*`)
	goldenVolatileList    = regexp.MustCompile(`(\\*"bundles\\*":\s*)\[[^\]]*\]`)
)

// goldenTLSLibraries and the rest empty list_tls_libraries' reading of this machine's
// processes (which libraries they map, how many were read), which differs
// from one machine and one moment to the next; the answer's shape stays.
var (
	goldenTLSLibraries = regexp.MustCompile(`(?s)(\\*"libraries\\*":\s*)\[.*?\](\s*,\s*\\*"(?:unreachable_count|libraries_dropped))`)
	goldenTLSCounts    = regexp.MustCompile(`(\\*"(?:unreachable_count|processes_scanned|processes_skipped|maps_cut|libraries_dropped)\\*":\s*)[0-9]+`)
	goldenTLSComplete  = regexp.MustCompile(`(\\*"complete\\*":\s*)(?:true|false)`)
	goldenTLSSummary   = regexp.MustCompile(`(\\*"summary\\*":\s*\\*")[^"\\]*`)
)

// goldenWrittenAt is save_findings' written_at, the server's clock.
var goldenWrittenAt = regexp.MustCompile(`(\\*"written_at\\*":\s*\\*")[0-9T:.Z+-]+`)

// goldenShape says what a tool's answer must carry around sender text.
type goldenShape int

const (
	// plain: sipnab's own derivations only: one block, no markers, no
	// provenance note.
	plain goldenShape = iota
	// fenced: sender-written text inside markers and the provenance note as
	// the last block.
	fenced
	// document: a rendered call document: sender text cleaned but never
	// marked (§2.5), the provenance note last.
	document
	// refused: a JSON-RPC error, no result.
	refused
)

// goldenCheck is what a golden's answer was checked to carry by hand.
type goldenCheck struct {
	shape goldenShape
	// want are substrings of the first block (or of the error message)
	// checked by hand against the capture (tshark -r
	// testdata/sip-rtp-g711.pcap -Y sip) and the bundle's rules.
	want []string
}

const sampleA, sampleB = "1-1966@10.0.2.20", "1-1968@10.0.2.20"

// handChecked are the hand-verified values of some goldens, by golden name.
// A golden without an entry is still recorded and must answer without an
// error, its sender text fenced and the provenance note last.
var handChecked = map[string]goldenCheck{
	// server bundle: started with --mcp-allow-shutdown and a file root
	// (fileToolArgs), no -L, no -i. The example is a dry run: the server
	// stays up for the goldens after it.
	"shutdown_server":     {plain, []string{`"dry_run":true`, `"would_stop":true`, `"stopping":false`, `"dialogs":2`}},
	"hep_senders":         {plain, []string{`"listening":false`, `"senders":[]`}},
	"server_capabilities": {plain, []string{`"can_hep":true`, `"libpcap":false`, `"mcp_allow_shutdown":true`, `"mcp_file_root":true`, `"mcp_allow_save_findings":true`}},
	// tls bundle: started without --mcp-allow-tls-capture, so the example
	// start refuses naming the flag and stop has nothing to stop.
	"start_tls_capture":  {refused, []string{"--mcp-allow-tls-capture"}},
	"stop_tls_capture":   {plain, []string{`"running":false`, `"messages":0`, `"summary":"no TLS capture was started"`}},
	"list_tls_libraries": {plain, []string{`"supported":true`, `"libraries":[`, `"unreachable_count":`}},
	// 2 dialogs of the default cap 100000 (--limit); 2 streams of 50000.
	"runtime_stats": {plain, []string{`"dialogs":{"used":2,"capacity":100000,"pct":0.002}`, `"streams":{"used":2,"capacity":50000,"pct":0.004}`}},
	// the file was read whole before the call: nothing in the window.
	"capture_health": {plain, []string{`"attachment":3`, `"in_window":{"packets":0,"invalid_timestamps":0,"undecodable_frames":0}`, `"undecoded_fraction":0,`}},
	"capture_status": {plain,
		[]string{`"dialog_count":2`, `"stream_count":2`, `"source_exhausted":true`, `"packets":852`}},
	"timeline": {plain,
		// INVITEs at 14:52:59.666 and 14:53:00.x: epoch-aligned 10 s buckets.
		[]string{`"start":"2016-11-26T14:52:50Z","bucket_seconds":10,"dialogs":1`, `"start":"2016-11-26T14:53:00Z","bucket_seconds":10,"dialogs":1`, `"total_dialogs":2`}},
	"group_dialogs": {plain,
		// Both INVITEs answered 200 without an 18x: ASR 100, PDD null with a reason.
		[]string{`"value":"INVITE","count":2`, `"asr":100`, `"ner":100`, `"pdd_p50":null`, `"asr":"percent"`}},
	"search_by_time": {plain,
		[]string{`"call_id":"` + sampleA + `"`, `"returned":1,"total_matched":2,"truncated":true,"next_cursor":"`}},
	"validate_filter": {plain,
		[]string{`"valid":false`, `"position":30`, `"total_matched":null`, `"total_dialogs":2`}},
	"tail_dialogs": {fenced,
		[]string{`"call_id":"` + sampleA + `"`, `"from_user":"` + sdk.FenceOpen + `sipp` + sdk.FenceClose + `"`}},
	"await_condition": {fenced,
		[]string{`"matched":true,"stopped_because":"condition_met"`, `"total_matched":2`, `"polls":1,"scans":1`}},
	"find_correlated": {plain,
		// Both INVITEs carry the same SDP origin.
		[]string{`"call_id":"` + sampleB + `","score":90,"strategy":"sdp_origin","identifier_match":true`, `"heuristic_only":false`}},
	"get_call_tree": {fenced,
		[]string{`"root_call_id":"` + sampleA + `"`, `"call_id":"` + sampleB + `"`}},
	"compare_dialogs": {plain,
		// a ended with a BYE (6 messages), b was still up at the end (4).
		[]string{`{"field":"state","a":"Completed","b":"InCall"}`, `{"field":"msg_count","a":"6","b":"4"}`, `"termination","a":"Q.850 16 (Reason)"`}},
	"get_dialog_report": {document,
		[]string{`"call_id":"` + sampleA + `"`, `"final_status_code":200`, `"msg_count":6`}},
	"get_message": {fenced,
		[]string{`"is_request":true`, `"method":"INVITE"`, `"from":"` + sdk.FenceOpen}},
	"render_ladder": {document,
		[]string{"# sipnab call report: `" + sampleA + "`", "6 messages"}},
	"get_sdp_timeline": {fenced,
		[]string{`"direction":"offer"`, `"direction":"answer"`, sdk.FenceOpen + `PCMU/8000` + sdk.FenceClose}},
	"check_codec_negotiation": {fenced,
		[]string{`"result":"ok"`, `"common":["` + sdk.FenceOpen + `PCMU/8000` + sdk.FenceClose + `"]`}},
	"lint_dialog": {fenced,
		// The answer adds telephone-event (101), which the offer lacked.
		[]string{`"finding_count":1`, `"rule_id":"SDP-3264-6.1-ANSWER-EXTRA-FORMAT"`, `"rfc":3264,"section":"6.1"`, `"rules_not_evaluated"`, `"findings_withheld"`, `"suppressions"`}},
	"validate_message": {plain,
		[]string{`"message_count":1`, `"finding_count":0`, `"single-message mode`}},
	"explain_rule": {plain,
		[]string{`"rfc":3264`, `"section":"6.1"`}},
	"explain_rule-unknown": {refused, lint.IDs()},
	"export_audio": {plain,
		[]string{`"path":"call-1966.wav"`, `"bytes":272044`, `"ssrc":"0x343da99b"`, `"frames":425`}},
	// The sample capture is served with no detector armed: nothing was
	// watching, and no finding can be turned into a fail2ban rule.
	"security_findings": {plain,
		[]string{`"findings":[]`, `"armed_kinds":[]`, `"detection_armed":false`, `nothing was watching`}},
	"generate_fail2ban_rule": {refused, []string{"This server holds: none"}},
	"explain_response_code": {plain,
		[]string{`"phrase":"Not Acceptable Here"`, `"reference":"RFC 3261 §21.4.26"`}},
	"generate_repro": {plain,
		[]string{`"format":"sipp"`, `"final":200`, `"run":"sipp \"$TARGET\" -sf repro.xml -m 1 -t u1"`}},
	// The captures bundle runs with a file root holding copies of the
	// sample (frame 1: 500 bytes, the first INVITE; tshark -x, -T pdml) and
	// of sip_call.pcap (one INVITE call, Completed: tshark -Y sip). The
	// examples run in name order: export_capture's file is in the root
	// when list_captures lists it (its first frame is the sample's first
	// INVITE, so the same first_packet), and so is build_evidence_package's
	// folder (not_listed.other).
	"list_captures": {plain,
		[]string{`"filename":"sip-rtp-g711.pcap","bytes":198831,"first_packet":"2016-11-26T14:52:59.666393Z","encrypted":false`,
			`"filename":"exported-sip.pcap","bytes":5673,"first_packet":"2016-11-26T14:52:59.666393Z"`, `"filename":"sip_call.pcap","bytes":2171`, `"returned":3`, `"not_listed":{"other_files":1,"symlinks":0,"other":1}`}},
	"compare_captures": {plain,
		[]string{`"dialogs":1`, `{"value":"InCall","a":0,"b":1,"delta":1},{"value":"Completed","a":1,"b":1,"delta":0}`,
			`{"value":"INVITE","a":1,"b":2,"delta":1}`}},
	"show_evidence": {plain,
		[]string{`"verified":1`, `"status":"verified"`, `"frame_bytes":500,"hex_bytes_shown":64,"truncated":true,"hex":"0000000000000000000000000800450001e6`}},
	"decode_evidence": {fenced,
		[]string{`"payload_offset":42`, `"src_addr":"10.0.2.20","src_port":5060,"dst_addr":"10.0.2.15","dst_port":5060,"transport":"UDP"`, `"header_count":9`}},
	"decode_evidence-2": {fenced,
		[]string{`"headers_returned":1`, `"name":"Call-ID"`, `"frame_byte_start":226,"frame_byte_end":251`}},
	"export_capture": {plain,
		[]string{`"path":"exported-sip.pcap","messages":10`, `"dialogs":2`}},
	"save_findings": {plain,
		[]string{`"seq":1`, `"readable_over_mcp":false`, `"remaining":999`}},
	// find_in_captures sweeps the three files (exported-sip.pcap is in the
	// root by then): INVITE dialogs by tshark (distinct Call-IDs of INVITE
	// requests) 2, 2 and 1; the sample holds no problem call. The examples
	// run in name order, so cancel_find_in_captures' example (sweep-1)
	// runs before any sweep was issued: refused, naming none issued.
	"find_in_captures": {plain,
		[]string{`"job_id":"sweep-1","status":"done"`, `{"filename":"exported-sip.pcap","dialogs_matched":2,"first_call_id":"1-1966@10.0.2.20"}`,
			`{"filename":"sip-rtp-g711.pcap","dialogs_matched":2,"first_call_id":"1-1966@10.0.2.20"}`, `{"filename":"sip_call.pcap","dialogs_matched":1,"first_call_id":"test-call-1@10.0.0.1"}`,
			`"unreadable":[],"complete":true`}},
	"find_in_captures-2":      {plain, []string{`"job_id":"sweep-2","status":"running"`, `"files_examined":0,"files_total":3`}},
	"find_in_captures_status": {plain, []string{`"job_id":"sweep-2","status":"done"`, `"matches":[],"files_examined":3,"files_total":3,"unreadable":[],"complete":true`}},
	"cancel_find_in_captures": {refused, []string{`unknown job_id "sweep-1"`, "this server issued 0"}},
	// Both sample calls: 10 SIP messages (6 + 4), one RTP stream each.
	"build_evidence_package": {plain,
		[]string{`"path":"ticket-evidence"`, `{"ordinal":1,"call_id":"` + sampleA + `","ladder":"call-01-ladder.md","rtp":"call-01-rtp.json","messages":6,"streams":1}`,
			`"messages":10`, `"name":"signaling.pcapng"`}},
	"generate_wireshark_filter": {plain,
		[]string{`"display_filter":"sip.Call-ID == \"` + sampleA + `\"`, `"sip_messages":6`, `"tshark":"tshark -r $BINDIR/sip-rtp-g711.pcap`}},
}

// goldenCall is one recorded call.
type goldenCall struct {
	bundle, golden, tool string
	args                 map[string]any
}

// exampleCalls are the registered tools' example calls, named as their
// goldens, and the tools that have none.
func exampleCalls(reg *sdk.Registry) (calls []goldenCall, none []string) {
	for _, r := range reg.Bundles() {
		for _, tl := range r.Tools {
			if len(tl.Examples) == 0 {
				none = append(none, tl.Name)
			}
			for i, ex := range tl.Examples {
				name := tl.Name
				if i > 0 {
					name = fmt.Sprintf("%s-%d", tl.Name, i+1)
				}
				args := ex.Args
				if args == nil {
					args = map[string]any{}
				}
				calls = append(calls, goldenCall{r.Info.ID, name, tl.Name, args})
			}
		}
	}
	return calls, none
}

func TestToolGoldenTranscriptsE2E(t *testing.T) {
	calls, none := exampleCalls(registry(t))
	for _, name := range none {
		t.Errorf("tool %s has no example call (sdk.Descriptor.Examples)", name)
	}
	// Refusals are no examples: recorded here by hand.
	calls = append(calls, goldenCall{"signaling", "explain_rule-unknown", "explain_rule", map[string]any{"rule_id": "nope"}})

	// The file tools (captures bundle) read a copy of the sample (and
	// sip_call.pcap, compare_captures' second file) in a root of their own;
	// save_findings is enabled.
	s := startRaw(t, append([]string{"-N", "--mcp", "--node-name", "e2e", "-I", sampleCapture()}, fileToolArgs(t, sampleCapture())...)...)
	have := s.tools()
	s.waitLoaded()
	for _, tc := range calls {
		t.Run(tc.golden, func(t *testing.T) {
			needTools(t, have, tc.tool)
			r := s.on(t).call(tc.tool, tc.args)
			got := goldenVolatile.ReplaceAll(transcript(t, r), []byte("${1}0"))
			got = goldenWrittenAt.ReplaceAll(got, []byte("${1}WRITTEN_AT"))
			got = goldenVolatileObjects.ReplaceAll(got, []byte("${1}{}"))
			got = goldenVolatileText.ReplaceAll(got, []byte("${1}"))
			got = goldenVolatileList.ReplaceAll(got, []byte("${1}[]"))
			got = bytes.ReplaceAll(got, []byte(filepath.Dir(bin)), []byte("$BINDIR"))
			if tc.tool == "list_tls_libraries" {
				got = goldenTLSLibraries.ReplaceAll(got, []byte("${1}[]${2}"))
				got = goldenTLSCounts.ReplaceAll(got, []byte("${1}0"))
				got = goldenTLSComplete.ReplaceAll(got, []byte("${1}true"))
				got = goldenTLSSummary.ReplaceAll(got, []byte("${1}"))
			}
			checkToolGolden(t, tc.bundle, tc.golden+".json", got)

			hc, checked := handChecked[tc.golden]
			if hc.shape == refused {
				rf := r.refused(t)
				if rf == nil {
					t.Fatalf("got %+v %s, want a tool execution error", r.Err, r.Response)
				}
				for _, w := range hc.want {
					if !strings.Contains(rf.Message, w) {
						t.Errorf("refusal %q does not name %q", rf.Message, w)
					}
				}
				return
			}
			if r.Err != nil || r.IsError {
				t.Fatalf("got error %+v %s", r.Err, r.Response)
			}
			texts := r.texts()
			first := texts[0]
			for _, w := range hc.want {
				w = strings.ReplaceAll(w, "$BINDIR", filepath.Dir(bin))
				if !strings.Contains(first, w) {
					t.Errorf("answer lacks %s:\n%.1500s", w, first)
				}
			}
			last := texts[len(texts)-1]
			all := strings.Join(texts, "\n")
			if !checked {
				// Sender text is fenced, and fenced text is followed by
				// the provenance note as the last block.
				if (strings.Contains(all, sdk.FenceOpen) || len(texts) > 1) && last != sdk.ProvenanceNote {
					t.Errorf("fenced text or several blocks without the provenance note last; got %d blocks, last %.60q", len(texts), last)
				}
				return
			}
			switch hc.shape {
			case plain:
				if len(texts) != 1 || strings.Contains(all, sdk.FenceOpen) || strings.Contains(all, sdk.ProvenanceNote) {
					t.Errorf("want one block of sipnab's own values, no markers, no note; got %d blocks", len(texts))
				}
			case fenced:
				if len(texts) != 2 || last != sdk.ProvenanceNote || !strings.Contains(first, sdk.FenceOpen) {
					t.Errorf("want fenced text then the provenance note as the last block; got %d blocks, last %.60q", len(texts), last)
				}
			case document:
				// a report fences each value the sender wrote whole, never
				// the document
				if len(texts) != 2 || last != sdk.ProvenanceNote || strings.Count(first, sdk.FenceOpen) != strings.Count(first, sdk.FenceClose) ||
					strings.HasPrefix(first, sdk.FenceOpen) {
					t.Errorf("want the document (paired markers around values only) then the provenance note as the last block; got %d blocks, last %.60q", len(texts), last)
				}
			}
		})
	}
	// Every hand-checked golden is still made.
	made := map[string]bool{}
	for _, c := range calls {
		made[c.golden] = true
	}
	for name := range handChecked {
		if !made[name] {
			t.Errorf("hand-checked golden %s is no longer made by any example", name)
		}
	}
}

func checkToolGolden(t *testing.T, bundle, name string, got []byte) {
	t.Helper()
	path := filepath.Join(testcap.Root(), "bundles", bundle, "testdata", "transcripts", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden (run go test ./tests -run TestToolGoldenTranscriptsE2E -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; review and rerun with -update\n--- got ---\n%s", path, got)
	}
}
