package tests

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/tlspeer"
)

// The SIP a real OpenSSL server (openssl s_server) reads and answers over
// TLS: the tls bundle's uprobes on its libssl read them in plaintext.
const (
	tlsInvite = "INVITE sips:bob@example.test SIP/2.0\r\n" +
		"Via: SIP/2.0/TLS 192.0.2.10:5061;branch=z9hG4bK-tlse2e-1\r\n" +
		"Max-Forwards: 70\r\n" +
		"From: <sips:alice@example.test>;tag=a1\r\n" +
		"To: <sips:bob@example.test>\r\n" +
		"Call-ID: tls-e2e-1@example.test\r\n" +
		"CSeq: 3 INVITE\r\n" +
		"Contact: <sips:alice@192.0.2.10:5061>\r\n" +
		"Content-Length: 0\r\n\r\n"
	tls200 = "SIP/2.0 200 OK\r\n" +
		"Via: SIP/2.0/TLS 192.0.2.10:5061;branch=z9hG4bK-tlse2e-1\r\n" +
		"From: <sips:alice@example.test>;tag=a1\r\n" +
		"To: <sips:bob@example.test>;tag=b1\r\n" +
		"Call-ID: tls-e2e-1@example.test\r\n" +
		"CSeq: 3 INVITE\r\n" +
		"Contact: <sips:bob@192.0.2.20:5061>\r\n" +
		"Content-Length: 0\r\n\r\n"
)

// TestTLSCaptureE2E drives the tls bundle over stdio through the built
// binary: list_tls_libraries finds the libssl the openssl server maps,
// start_tls_capture attaches to it, the INVITE the server reads and the
// 200 it writes reach the engine (get_dialog, input_origin uprobe), and
// stop_tls_capture leaves no BPF object or perf event open in sipnab.
func TestTLSCaptureE2E(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("attaching uprobes needs root (CI runs as root)")
	}
	srv := tlspeer.Start(t)
	s := startRaw(t, "-N", "--mcp", "--mcp-output-schemas", "--mcp-allow-tls-capture")
	schemas := outputSchemas(t, s)

	libs, r := s.ok("list_tls_libraries", nil)
	checkStructured(t, schemas["list_tls_libraries"], r)
	var probePath string
	for _, row := range rowsOf(libs, "libraries") {
		pids, _ := row["pids"].([]any)
		if row["flavor"] == "openssl" && row["probeable"] == true && slices.Contains(pids, any(float64(srv.PID))) {
			probePath = str(row["probe_path"])
		}
	}
	if probePath == "" {
		t.Fatalf("list_tls_libraries names no probeable openssl library of pid %d: %v", srv.PID, libs)
	}

	before := tlspeer.BPFDescriptors(t, s.cmd.Process.Pid)
	r = s.call("start_tls_capture", map[string]any{"flavors": []string{"openssl"}, "libraries": []string{probePath}})
	if rf := r.refused(t); rf != nil && strings.Contains(rf.Message, "kernel refused") {
		t.Skipf("the kernel refused the uprobes: %s", rf.Message)
	}
	if r.Err != nil || r.IsError {
		t.Fatalf("start_tls_capture: %+v %s", r.Err, r.Response)
	}
	checkStructured(t, schemas["start_tls_capture"], r)
	if st := r.object(t); st["running"] != true || len(st["targets"].([]any)) != 1 {
		t.Fatalf("start answered %v", st)
	}
	if n := tlspeer.BPFDescriptors(t, s.cmd.Process.Pid) - before; n < 8 {
		t.Fatalf("%d BPF/perf descriptors opened, want the 4 probes and their links at least", n)
	}

	srv.Exchange(t, tlsInvite, tls200)

	const callID = "tls-e2e-1@example.test"
	var dialog map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; {
		// other tests' SIP over libssl may arrive too (the probes see every
		// process mapping the library): look for this Call-ID
		page, _ := s.ok("list_dialogs", map[string]any{"limit": 1000})
		listed := false
		for _, row := range rowsOf(page, "dialogs") {
			listed = listed || row["call_id"] == callID
		}
		if listed {
			if d, _ := s.ok("get_dialog", map[string]any{"call_id": callID}); len(rowsOf(d, "messages")) == 2 {
				dialog = d
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dialog did not arrive within 5 s: %v", page)
		}
		time.Sleep(50 * time.Millisecond)
	}
	msgs := rowsOf(dialog, "messages")
	local := fmt.Sprintf("127.%d.%d.%d", byte(srv.PID>>16), byte(srv.PID>>8), byte(srv.PID))
	in, out := msgs[0], msgs[1]
	cseq := func(m map[string]any) string {
		c, _ := m["cseq"].(map[string]any)
		return fmt.Sprint(c["number"], " ", c["method"])
	}
	if in["method"] != "INVITE" || cseq(in) != "3 INVITE" || in["input_origin"] != "uprobe" || in["transport"] != "TLS" ||
		in["dst"] != local || in["dst_port"] != float64(5061) {
		t.Errorf("INVITE %v", in)
	}
	if out["status_code"] != float64(200) || cseq(out) != "3 INVITE" || out["input_origin"] != "uprobe" ||
		out["src"] != local || out["dst"] != in["src"] || out["dst_port"] != in["src_port"] {
		t.Errorf("200 %v", out)
	}

	st, r := s.ok("stop_tls_capture", nil)
	checkStructured(t, schemas["stop_tls_capture"], r)
	framing, _ := st["framing"].(map[string]any)
	if st["running"] != false || st["messages"].(float64) < 2 || st["lost"] != float64(0) || st["error"] != nil ||
		framing["bytes"].(float64) < float64(len(tlsInvite)+len(tls200)) {
		t.Fatalf("stop answered %v", st)
	}
	if n := tlspeer.BPFDescriptors(t, s.cmd.Process.Pid); n != before {
		t.Fatalf("%d BPF/perf descriptors after the stop, %d before the start: a probe stayed attached", n, before)
	}
}
