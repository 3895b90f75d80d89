package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/sdk"
)

// Golden transcripts for the tools the core goldens do not record
// (TestCoreGoldenTranscriptsE2E: triage_call, rtp_stats,
// get_capture_report; bundles/core TestQueryToolTranscripts: list_dialogs,
// find_problems, aggregate_dialogs, search_messages, get_dialog): capture_status
// and each of the signaling bundle's twenty tools, one call each through the
// built binary over stdio on the sample capture (testdata/sip-rtp-g711.pcap:
// two INVITE calls from 10.0.2.20, display name "PCMU/8000", SDP codecs
// PCMU/8000 and telephone-event/8000, one BYE with a Q.850 Reason).
//
//	go test ./tests -run TestToolGoldenTranscriptsE2E -update

// goldenVolatile are the values that change from run to run: wall-clock
// durations of the load and of the call; the dialog store's byte account
// (build-dependent structure sizes) and budget (sized for the machine).
var goldenVolatile = regexp.MustCompile(`(\\*"(?:uptime_sec|elapsed_sec|elapsed_ms|held_bytes|max_bytes)\\*":\s*)[0-9.eE+-]+`)

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

func TestToolGoldenTranscriptsE2E(t *testing.T) {
	s := startRaw(t, "-N", "--mcp", "--node-name", "e2e", "-I", sampleCapture())
	have := s.tools()
	s.waitLoaded()
	const a, b = "1-1966@10.0.2.20", "1-1968@10.0.2.20"
	cases := []struct {
		golden string
		tool   string
		args   map[string]any
		shape  goldenShape
		// want are substrings of the first block (or of the error message)
		// checked by hand against the capture (tshark -r
		// testdata/sip-rtp-g711.pcap -Y sip) and the bundle's rules.
		want []string
	}{
		{"capture_status", "capture_status", map[string]any{}, plain,
			[]string{`"dialog_count":2`, `"stream_count":2`, `"source_exhausted":true`, `"packets":852`}},
		{"timeline", "timeline", map[string]any{"bucket_seconds": 10}, plain,
			// INVITEs at 14:52:59.666 and 14:53:00.x: epoch-aligned 10 s buckets.
			[]string{`"start":"2016-11-26T14:52:50Z","bucket_seconds":10,"dialogs":1`, `"start":"2016-11-26T14:53:00Z","bucket_seconds":10,"dialogs":1`, `"total_dialogs":2`}},
		{"group_dialogs", "group_dialogs", map[string]any{"by": "method"}, plain,
			// Both INVITEs answered 200 without an 18x: ASR 100, PDD null with a reason.
			[]string{`"value":"INVITE","count":2`, `"asr":100`, `"ner":100`, `"pdd_p50":null`, `"asr":"percent"`}},
		{"search_by_time", "search_by_time", map[string]any{"start": "2000-01-01T00:00:00Z", "limit": 1}, plain,
			[]string{`"call_id":"` + a + `"`, `"returned":1,"total_matched":2,"truncated":true,"next_cursor":"`}},
		{"validate_filter", "validate_filter", map[string]any{"expr": "state == Failed and (method =="}, plain,
			[]string{`"valid":false`, `"position":30`, `"total_matched":null`, `"total_dialogs":2`}},
		{"tail_dialogs", "tail_dialogs", map[string]any{"limit": 1}, fenced,
			[]string{`"call_id":"` + a + `"`, `"from_user":"` + sdk.FenceOpen + `sipp` + sdk.FenceClose + `"`}},
		{"await_condition", "await_condition", map[string]any{"filter": "method == INVITE", "timeout_seconds": 1}, fenced,
			[]string{`"matched":true,"stopped_because":"condition_met"`, `"total_matched":2`, `"polls":1,"scans":1`}},
		{"find_correlated", "find_correlated", map[string]any{"call_id": a}, plain,
			// Both INVITEs carry the same SDP origin.
			[]string{`"call_id":"` + b + `","score":90,"strategy":"sdp_origin","identifier_match":true`, `"heuristic_only":false`}},
		{"get_call_tree", "get_call_tree", map[string]any{"call_id": a}, fenced,
			[]string{`"root_call_id":"` + a + `"`, `"call_id":"` + b + `"`}},
		{"compare_dialogs", "compare_dialogs", map[string]any{"call_id_a": a, "call_id_b": b}, plain,
			// a ended with a BYE (6 messages), b was still up at the end (4).
			[]string{`{"field":"state","a":"Completed","b":"InCall"}`, `{"field":"msg_count","a":"6","b":"4"}`, `"termination","a":"Q.850 16 (Reason)"`}},
		{"get_dialog_report", "get_dialog_report", map[string]any{"call_id": a}, document,
			[]string{`"call_id":"` + a + `"`, `"final_status_code":200`, `"msg_count":6`}},
		{"get_message", "get_message", map[string]any{"call_id": a, "index": 0}, fenced,
			[]string{`"is_request":true`, `"method":"INVITE"`, `"from":"` + sdk.FenceOpen}},
		{"render_ladder", "render_ladder", map[string]any{"call_id": a}, document,
			[]string{"# sipnab call report: `" + a + "`", "6 messages"}},
		{"get_sdp_timeline", "get_sdp_timeline", map[string]any{"call_id": a}, fenced,
			[]string{`"direction":"offer"`, `"direction":"answer"`, sdk.FenceOpen + `PCMU/8000` + sdk.FenceClose}},
		{"check_codec_negotiation", "check_codec_negotiation", map[string]any{"call_id": a}, fenced,
			[]string{`"result":"ok"`, `"common":["` + sdk.FenceOpen + `PCMU/8000` + sdk.FenceClose + `"]`}},
		{"lint_dialog", "lint_dialog", map[string]any{"call_id": a}, fenced,
			// The answer adds telephone-event (101), which the offer lacked.
			[]string{`"finding_count":1`, `"rule_id":"SDP-3264-6.1-ANSWER-EXTRA-FORMAT"`, `"rfc":3264,"section":"6.1"`, `"rules_not_evaluated"`, `"findings_withheld"`, `"suppressions"`}},
		{"validate_message", "validate_message", map[string]any{"call_id": a, "index": 0}, plain,
			[]string{`"message_count":1`, `"finding_count":0`, `"single-message mode`}},
		{"explain_rule-known", "explain_rule", map[string]any{"rule_id": "SDP-3264-6.1-ANSWER-EXTRA-FORMAT"}, plain,
			[]string{`"rfc":3264`, `"section":"6.1"`}},
		{"explain_rule-unknown", "explain_rule", map[string]any{"rule_id": "nope"}, refused,
			lint.IDs()},
		{"explain_response_code", "explain_response_code", map[string]any{"code": 488}, plain,
			[]string{`"phrase":"Not Acceptable Here"`, `"reference":"RFC 3261 §21.4.26"`}},
		{"generate_repro", "generate_repro", map[string]any{"call_id": a}, plain,
			[]string{`"format":"sipp"`, `"final":200`, `"run":"sipp \"$TARGET\" -sf repro.xml -m 1 -t u1"`}},
		{"generate_wireshark_filter", "generate_wireshark_filter", map[string]any{"call_id": a}, plain,
			[]string{`"display_filter":"sip.Call-ID == \"` + a + `\"`, `"sip_messages":6`, `"tshark":"tshark -r $BINDIR/sip-rtp-g711.pcap`}},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		seen[tc.tool] = true
		t.Run(tc.golden, func(t *testing.T) {
			needTools(t, have, tc.tool)
			r := s.on(t).call(tc.tool, tc.args)
			got := goldenVolatile.ReplaceAll(transcript(t, r), []byte("${1}0"))
			got = bytes.ReplaceAll(got, []byte(filepath.Dir(bin)), []byte("$BINDIR"))
			checkToolGolden(t, tc.golden+".json", got)

			if tc.shape == refused {
				rf := r.refused(t)
				if rf == nil {
					t.Fatalf("got %+v %s, want a tool execution error", r.Err, r.Response)
				}
				for _, w := range tc.want {
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
			for _, w := range tc.want {
				w = strings.ReplaceAll(w, "$BINDIR", filepath.Dir(bin))
				if !strings.Contains(first, w) {
					t.Errorf("answer lacks %s:\n%.1500s", w, first)
				}
			}
			last := texts[len(texts)-1]
			all := strings.Join(texts, "\n")
			switch tc.shape {
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
	// Every signaling tool is recorded here (and capture_status).
	for name := range have {
		if !seen[name] && !strings.Contains(" triage_call rtp_stats get_capture_report list_dialogs find_problems aggregate_dialogs search_messages get_dialog ", " "+name+" ") {
			t.Errorf("tool %s has no golden transcript", name)
		}
	}
}

func checkToolGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "tools", name)
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
