package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// capSIP lists a capture's SIP messages as tshark reads them
// ("Call-ID|CSeq|method or status"), sorted; one message per frame in
// the captures used here.
func capSIP(t *testing.T, path string) []string {
	t.Helper()
	rows := capSIPInOrder(t, path)
	slices.Sort(rows)
	return rows
}

// capSIPInOrder is capSIP in the file's (time) order.
func capSIPInOrder(t *testing.T, path string) []string {
	t.Helper()
	return testcap.TsharkSIP(t, path)
}

// firstInvite is the Call-ID of a capture's first INVITE request as
// tshark reads it (the earliest INVITE dialog: first_call_id).
func firstInvite(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("tshark", "-r", path, "-Y", `sip.Method == "INVITE"`, "-T", "fields", "-e", "sip.Call-ID").Output()
	if err != nil {
		t.Skipf("tshark: %v", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first)
}

// TestCapturesE2E drives the captures bundle through the built binary
// over stdio, reading public captures copied into --mcp-file-root: the
// listing, the engine's evidence pointers (get_dialog's messages[].frame)
// verified and decoded, the same pointers unresolvable once the file
// changes, the held SIP exported and read back by tshark, a finding
// recorded on stderr; and without a root the file tools stay listed and
// refuse.
func TestCapturesE2E(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"sip-auth-failure.pcapng", "sip-rtp-g711.pcap", "sip-over-tcp.pcap"} {
		data, err := os.ReadFile(testcap.Public(n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	input := filepath.Join(root, "sip-auth-failure.pcapng")
	s := startRaw(t, "-N", "--mcp", "-I", input, "--mcp-file-root", root, "--mcp-allow-save-findings", "--mcp-max-findings", "1")
	s.waitLoaded()

	// The listing: three captures, sorted, first_packet from the first
	// record (tshark -c1 -T fields -e frame.time_epoch on each).
	list, _ := s.ok("list_captures", nil)
	caps := list["captures"].([]any)
	want := []struct{ name, first string }{
		{"sip-auth-failure.pcapng", "2016-05-17T08:01:35.431471Z"},
		{"sip-over-tcp.pcap", "2011-07-28T12:54:46.556175Z"},
		{"sip-rtp-g711.pcap", "2016-11-26T14:52:59.666393Z"},
	}
	if len(caps) != len(want) {
		t.Fatalf("list_captures: %v", list)
	}
	for i, w := range want {
		c := caps[i].(map[string]any)
		if c["filename"] != w.name || c["first_packet"] != w.first || c["encrypted"] != false {
			t.Errorf("row %d: %v, want %s first_packet %s", i, c, w.name, w.first)
		}
	}

	// Every message's pointer, as get_dialog gives it.
	var refs []string
	dl, _ := s.ok("list_dialogs", map[string]any{"fields": []string{"call_id"}})
	for _, d := range dl["dialogs"].([]any) {
		gd, _ := s.ok("get_dialog", map[string]any{"call_id": d.(map[string]any)["call_id"]})
		for _, m := range gd["messages"].([]any) {
			if f, ok := m.(map[string]any)["frame"].(string); ok && !slices.Contains(refs, f) {
				refs = append(refs, f)
			}
		}
	}
	if len(refs) != 8 { // tshark -Y sip: 8 SIP frames
		t.Fatalf("get_dialog gave %d pointers, want 8: %v", len(refs), refs)
	}
	ev, _ := s.ok("show_evidence", map[string]any{"refs": refs, "max_bytes": 8})
	if ev["verified"] != float64(8) || ev["resolved"] != float64(8) {
		t.Errorf("show_evidence: %v", ev)
	}
	dec, r := s.ok("decode_evidence", map[string]any{"frame_ref": refs[0], "field": "CSeq"})
	sip, _ := dec["sip"].(map[string]any)
	if dec["status"] != "verified" || sip == nil || sip["headers_returned"] != float64(1) || r.texts()[len(r.texts())-1] != sdk.ProvenanceNote ||
		!strings.Contains(r.texts()[0], sdk.FenceOpen+"1 REGISTER"+sdk.FenceClose) {
		t.Errorf("decode_evidence: %s", r.texts()[0])
	}

	// export_capture: the held SIP reads back in tshark as the source's
	// messages; the -I input and a taken name are refused.
	ex, exr := s.ok("export_capture", map[string]any{"filename": "export.pcap"})
	if ex["path"] != "export.pcap" || ex["messages"] != float64(8) || strings.Contains(string(exr.Response), root) {
		t.Errorf("export_capture: %v", ex)
	}
	if got, src := capSIP(t, filepath.Join(root, "export.pcap")), capSIP(t, input); !slices.Equal(got, src) {
		t.Errorf("tshark reads back\n%v\nfrom the source\n%v", got, src)
	}
	for name, why := range map[string]string{"export.pcap": "is taken", "sip-auth-failure.pcapng": "is taken"} {
		if rf := s.call("export_capture", map[string]any{"filename": name}).refused(t); rf == nil || rf.Code != "file_refused" || !strings.Contains(rf.Message, why) {
			t.Errorf("export_capture over %s: %+v", name, rf)
		}
	}

	// compare_captures reads two other files into scratch captures: the
	// loaded capture keeps its identity and its dialogs. sip-over-tcp.pcap
	// holds one INVITE call, the sample two (tshark -Y sip).
	before, _ := s.ok("capture_status", nil)
	cmp, _ := s.ok("compare_captures", map[string]any{"a": "sip-over-tcp.pcap", "b": "sip-rtp-g711.pcap", "dimensions": []string{"method"}})
	m := cmp["dimensions"].([]any)[0].(map[string]any)["buckets"].([]any)[0].(map[string]any)
	if cmp["a"].(map[string]any)["dialogs"] != float64(1) || cmp["b"].(map[string]any)["dialogs"] != float64(2) ||
		m["value"] != "INVITE" || m["delta"] != float64(1) {
		t.Errorf("compare_captures: %v", cmp)
	}
	after, _ := s.ok("capture_status", nil)
	if fmt.Sprint(before["capture_identity"]) != fmt.Sprint(after["capture_identity"]) || after["dialog_count"] != before["dialog_count"] {
		t.Errorf("compare_captures changed the loaded capture: %v → %v", before["capture_identity"], after["capture_identity"])
	}

	// find_in_captures sweeps the root in the background, each file in a
	// scratch store: INVITE dialogs by tshark (distinct Call-IDs of INVITE
	// requests) are 1 in sip-over-tcp.pcap and 2 in sip-rtp-g711.pcap,
	// none in sip-auth-failure.pcapng nor in export.pcap (its REGISTERs
	// rebuilt). The loaded capture keeps its identity; the result is
	// handed over once.
	sw, _ := s.ok("find_in_captures", map[string]any{"filter": "method == INVITE", "wait_seconds": 30})
	res, _ := sw["sweep"].(map[string]any)
	if sw["status"] != "done" || sw["job_id"] != "sweep-1" || res == nil || res["files_total"] != float64(4) || res["files_examined"] != float64(4) || res["complete"] != true {
		t.Fatalf("find_in_captures: %v", sw)
	}
	var found []string
	for _, mm := range res["matches"].([]any) {
		m := mm.(map[string]any)
		found = append(found, fmt.Sprintf("%s:%v:%v", m["filename"], m["dialogs_matched"], m["first_call_id"]))
	}
	if want := []string{"sip-over-tcp.pcap:1:" + firstInvite(t, filepath.Join(root, "sip-over-tcp.pcap")), "sip-rtp-g711.pcap:2:" + firstInvite(t, filepath.Join(root, "sip-rtp-g711.pcap"))}; !slices.Equal(found, want) {
		t.Errorf("find_in_captures matches %v, want %v", found, want)
	}
	if rf := s.call("find_in_captures_status", map[string]any{"job_id": "sweep-1"}).refused(t); rf == nil || rf.Code != "unknown_id" || !strings.Contains(rf.Message, "handed over") {
		t.Errorf("a second status on a collected sweep: %+v", rf)
	}
	if rf := s.call("cancel_find_in_captures", map[string]any{"job_id": "sweep-1"}).refused(t); rf == nil || rf.Code != "unknown_id" {
		t.Errorf("cancel of a collected sweep: %+v", rf)
	}
	if after2, _ := s.ok("capture_status", nil); fmt.Sprint(before["capture_identity"]) != fmt.Sprint(after2["capture_identity"]) {
		t.Errorf("find_in_captures changed the loaded capture: %v → %v", before["capture_identity"], after2["capture_identity"])
	}

	// build_evidence_package: the loaded capture's two Call-IDs into a new
	// folder; tshark reads signaling.pcapng back as the source's 8 SIP
	// messages (Call-ID, CSeq, method or status) in the same time order.
	var ids []string
	for _, d := range dl["dialogs"].([]any) {
		ids = append(ids, d.(map[string]any)["call_id"].(string))
	}
	pk, pkr := s.ok("build_evidence_package", map[string]any{"call_ids": ids, "filename": "ticket-1"})
	if pk["path"] != "ticket-1" || pk["messages"] != float64(8) || len(pk["calls"].([]any)) != 2 || len(pk["files"].([]any)) != 7 || strings.Contains(string(pkr.Response), root) {
		t.Errorf("build_evidence_package: %v", pk)
	}
	if got, src := capSIPInOrder(t, filepath.Join(root, "ticket-1", "signaling.pcapng")), capSIPInOrder(t, input); !slices.Equal(got, src) {
		t.Errorf("tshark reads the package back as\n%v\nthe source in time order\n%v", got, src)
	}
	if rd, err := os.ReadFile(filepath.Join(root, "ticket-1", "README.md")); err != nil || !strings.Contains(string(rd), "rebuilt frames") {
		t.Errorf("README.md: %v %.300s", err, rd)
	}
	if rf := s.call("build_evidence_package", map[string]any{"call_ids": ids[:1], "filename": "ticket-1"}).refused(t); rf == nil || rf.Code != "file_refused" {
		t.Errorf("a second package under a taken name: %+v", rf)
	}
	if rf := s.call("build_evidence_package", map[string]any{"call_ids": []string{ids[0], "no-such-call"}, "filename": "ticket-2"}).refused(t); rf == nil || rf.Code != "unknown_id" {
		t.Errorf("an unknown call_id: %+v", rf)
	}
	if _, err := os.Lstat(filepath.Join(root, "ticket-2")); err == nil {
		t.Error("a refused package left its folder")
	}

	// The file changes after the pointers were made: the same pointer is a
	// digest mismatch, its bytes never shown.
	data, _ := os.ReadFile(input)
	for i := range data[len(data)-64:] {
		data[len(data)-64+i] ^= 0x5a
	}
	data[200] ^= 0x5a // inside the first packet
	if err := os.WriteFile(input, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ev2, _ := s.ok("show_evidence", map[string]any{"refs": refs[:1]})
	f := ev2["frames"].([]any)[0].(map[string]any)
	if f["status"] != "unresolvable" || !strings.Contains(f["reason"].(string), "digest mismatch") || f["hex"] != nil {
		t.Errorf("after the file changed: %v", f)
	}

	// save_findings: recorded on stderr as one line, the budget of 1 then
	// refuses.
	sf, _ := s.ok("save_findings", map[string]any{"summary": "REGISTER challenged 401 and never retried", "call_id": "e2e"})
	if sf["seq"] != float64(1) || sf["remaining"] != float64(0) || sf["readable_over_mcp"] != false {
		t.Errorf("save_findings: %v", sf)
	}
	if rf := s.call("save_findings", map[string]any{"summary": "second"}).refused(t); rf == nil || !strings.Contains(rf.Message, "1 of 1") {
		t.Errorf("second finding past a budget of 1: %+v", rf)
	}
	if log := s.stderr.String(); strings.Count(log, "agent finding") != 1 || !strings.Contains(log, "REGISTER challenged 401") {
		t.Errorf("stderr does not hold the one finding:\n%s", log)
	}

	// Every tool of triage-outage (captures), post-change-verification
	// (captures, security), codec-interop-audit (media) and
	// carrier-escalation (build_evidence_package, captures) is built: the
	// full selection lists all four.
	if got := listPrompts(t, s); !slices.Equal(got, []string{"carrier-escalation", "codec-interop-audit", "post-change-verification", "triage-outage"}) {
		t.Errorf("prompts/list: %v, want all four", got)
	}

	// Without a root and the flag: listed, refused.
	bare := startRaw(t, "-N", "--mcp", "-I", sampleCapture())
	have := bare.tools()
	for _, tool := range []string{"list_captures", "show_evidence", "decode_evidence", "export_capture", "compare_captures", "save_findings",
		"find_in_captures", "find_in_captures_status", "cancel_find_in_captures", "build_evidence_package"} {
		if !have[tool] {
			t.Errorf("%s is not listed without its gate", tool)
		}
	}
	for tool, args := range map[string]map[string]any{
		"list_captures": nil, "show_evidence": {"refs": refs[:1]}, "decode_evidence": {"frame_ref": refs[0]},
		"export_capture": {"filename": "x.pcap"}, "compare_captures": {"a": "x.pcap", "b": "y.pcap"}, "save_findings": {"summary": "x"},
		"find_in_captures": {"filter": "method == INVITE"}, "find_in_captures_status": {"job_id": "sweep-1"}, "cancel_find_in_captures": {"job_id": "sweep-1"},
		"build_evidence_package": {"call_ids": []string{"x"}, "filename": "p"},
	} {
		if rf := bare.call(tool, args).refused(t); rf == nil || rf.Code != "not_enabled" {
			t.Errorf("%s without its gate: %+v", tool, rf)
		}
	}
}
