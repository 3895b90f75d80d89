package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/heptest"
	"github.com/sipnab/sipnab/internal/testcap"
)

// serverTools are the five tools of the server bundle (mcp-surface §3.7).
var serverTools = []string{"server_capabilities", "runtime_stats", "capture_health", "hep_senders", "shutdown_server"}

// num reads a number at a dotted path of a decoded answer (-1 when absent).
func num(m map[string]any, path string) float64 {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return -1
		}
		v = o[k]
	}
	f, ok := v.(float64)
	if !ok {
		return -1
	}
	return f
}

// TestServerBundleE2E drives the read-only server tools over stdio on
// public captures: server_capabilities' version_line is what sipnab
// --version prints and its runtime what the command line enabled;
// runtime_stats' dialogs.used is list_dialogs' total_matched (2 on the
// sample, 1334 on sipp-branch-scenario.pcapng: tshark's distinct Call-IDs);
// capture_health's totals are capture_status's.
func TestServerBundleE2E(t *testing.T) {
	version, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		dialogs float64
	}{
		{"sample", sampleCapture(), 2},
		{"sipp-branch-scenario", testcap.Public("sipp-branch-scenario.pcapng"), 1334},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, "-N", "--mcp", "--mcp-allow-shutdown", "--mcp-file-root", t.TempDir(), "-I", tc.path)
			needTools(t, s.tools(), serverTools...)
			s.waitLoaded()

			caps, _ := s.ok("server_capabilities", nil)
			if caps["version_line"] != strings.TrimSpace(string(version)) || !strings.HasPrefix(caps["version_line"].(string), "sipnab "+caps["version"].(string)+",") {
				t.Errorf("version %v, version_line %q; sipnab --version prints %q", caps["version"], caps["version_line"], version)
			}
			rt, _ := caps["runtime"].(map[string]any)
			if rt["mcp_allow_shutdown"] != true || rt["mcp_file_root"] != true || caps["can_hep"] != true {
				t.Errorf("runtime %v can_hep %v", rt, caps["can_hep"])
			}
			if b, _ := json.Marshal(caps["bundles"]); !strings.Contains(string(b), `"server"`) || !strings.Contains(string(b), `"core"`) {
				t.Errorf("bundles %s", b)
			}

			list, _ := s.ok("list_dialogs", map[string]any{"limit": 1})
			stats, _ := s.ok("runtime_stats", nil)
			if got := num(stats, "dialogs.used"); got != tc.dialogs || got != list["total_matched"].(float64) || num(stats, "dialogs.capacity") != 100000 {
				t.Errorf("runtime_stats dialogs %v, list_dialogs total_matched %v, want %v", stats["dialogs"], list["total_matched"], tc.dialogs)
			}
			if num(stats, "process.rss_bytes") <= 0 || num(stats, "process.threads") < 1 || num(stats, "process.open_fds") < 3 || num(stats, "uptime_seconds") < 0 {
				t.Errorf("process %v uptime %v", stats["process"], stats["uptime_seconds"])
			}

			status, _ := s.ok("capture_status", nil)
			health, r := s.ok("capture_health", map[string]any{"sample_seconds": 1})
			if num(health, "attachment") != 3 || num(health, "totals.packets") != num(status, "load.packets") ||
				num(health, "dialogs_tracked") != tc.dialogs || num(health, "window.applied_seconds") != 1 {
				t.Errorf("capture_health %s; capture_status load %v", r.texts()[0], status["load"])
			}
			if len(r.texts()) != 1 || strings.Contains(r.texts()[0], `":"`) {
				t.Errorf("capture_health carries a string or a second block: %v", r.texts())
			}
			hep, _ := s.ok("hep_senders", nil)
			if hep["listening"] != false || hep["note"] == nil {
				t.Errorf("hep_senders without -L: %v", hep)
			}
		})
	}
}

// TestHEPSendersE2E: a HEP feed on loopback (3 UDP datagrams and one TCP
// message from heptest) appears in hep_senders as one sender, 127.0.0.1,
// with 4 packets, claiming capture id 0 (heptest's HEP2 header carries id
// 0; its HEP3 envelopes none), under --hep-silence-warn 5; capture_health
// counts it as a live attachment (code 2) with 4 admitted.
func TestHEPSendersE2E(t *testing.T) {
	addr := heptest.FreeAddr(t)
	s := startRaw(t, "-N", "--mcp", "-L", addr, "--hep-silence-warn", "5")
	needTools(t, s.tools(), serverTools...)
	heptest.Send(t, addr, []heptest.Message{
		{Version: 3, Text: "OPTIONS sip:a@example.net SIP/2.0\r\nCall-ID: e2e-1\r\nCSeq: 1 OPTIONS\r\n\r\n"},
		{Version: 3, Offset: time.Millisecond, Text: "SIP/2.0 200 OK\r\nCall-ID: e2e-1\r\nCSeq: 1 OPTIONS\r\n\r\n"},
		{Version: 2, Offset: 2 * time.Millisecond, Text: "OPTIONS sip:b@example.net SIP/2.0\r\nCall-ID: e2e-2\r\nCSeq: 1 OPTIONS\r\n\r\n"},
		{Version: 3, TCP: true, Offset: 3 * time.Millisecond, Text: "OPTIONS sip:c@example.net SIP/2.0\r\nCall-ID: e2e-3\r\nCSeq: 1 OPTIONS\r\n\r\n"},
	})
	var got map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = s.ok("hep_senders", nil); num(got, "packets_admitted") == 4 {
			break
		}
	}
	senders, _ := got["senders"].([]any)
	if got["listening"] != true || num(got, "silence_threshold_seconds") != 5 || num(got, "packets_admitted") != 4 || len(senders) != 1 {
		t.Fatalf("hep_senders %v", got)
	}
	if snd := senders[0].(map[string]any); snd["peer"] != "127.0.0.1" || snd["source"] != "hep:0@127.0.0.1" || snd["capture_id"] != 0.0 || snd["packets"] != 4.0 || snd["silent"] != false {
		t.Errorf("sender %v", snd)
	}
	health, _ := s.ok("capture_health", map[string]any{"sample_seconds": 1})
	if num(health, "attachment") != 2 || num(health, "hep.admitted") != 4 || num(health, "hep.senders") != 1 {
		t.Errorf("capture_health %v", health)
	}
}

// waitExit waits for the server process to end and returns its exit code.
func waitExit(t *testing.T, s *rawSession) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not exit within 30 s\nstderr:\n%s", s.stderr.String())
	}
	return -1
}

// TestShutdownServerE2E: a dry run leaves the server answering; the
// deliberate call stops it and the process exits 0 with the call in the
// audit file. With a HEP source the stop needs save_to: the held SIP is
// written into the file root and sipnab reads it back.
func TestShutdownServerE2E(t *testing.T) {
	t.Run("file source", func(t *testing.T) {
		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		s := startRaw(t, "-N", "--mcp", "--mcp-allow-shutdown", "--mcp-audit-file", audit, "-I", sampleCapture())
		needTools(t, s.tools(), "shutdown_server")
		s.waitLoaded()
		dry, _ := s.ok("shutdown_server", map[string]any{"dry_run": false})
		if dry["dry_run"] != true || dry["would_stop"] != true {
			t.Fatalf("first call %v", dry)
		}
		if _, r := s.ok("capture_status", nil); r.IsError {
			t.Fatal("the server stopped answering after a dry run")
		}
		stop, _ := s.ok("shutdown_server", map[string]any{"dry_run": false})
		if stop["stopping"] != true || stop["confirmed_by_operator"] != nil {
			t.Fatalf("second call %v", stop)
		}
		if code := waitExit(t, s); code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, s.stderr.String())
		}
		b, err := os.ReadFile(audit)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var last struct{ Tool, Outcome string }
		_ = json.Unmarshal([]byte(lines[len(lines)-1]), &last)
		if last.Tool != "shutdown_server" || last.Outcome != "ok" {
			t.Errorf("last audit record %s", lines[len(lines)-1])
		}
	})
	t.Run("hep source saved", func(t *testing.T) {
		root, addr := t.TempDir(), heptest.FreeAddr(t)
		s := startRaw(t, "-N", "--mcp", "--mcp-allow-shutdown", "--mcp-file-root", root, "-L", addr)
		heptest.Send(t, addr, []heptest.Message{{Version: 3, Text: "INVITE sip:bob@example.net SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10;branch=z9hG4bK-1\r\nFrom: <sip:a@example.net>;tag=1\r\nTo: <sip:bob@example.net>\r\nCall-ID: saved-1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"}})
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if st, _ := s.ok("capture_status", nil); num(st, "dialog_count") == 1 {
				break
			}
		}
		dry, _ := s.ok("shutdown_server", nil)
		if dry["unsaved"] != true || dry["would_stop"] != false {
			t.Fatalf("dry run %v", dry)
		}
		if rf := s.call("shutdown_server", map[string]any{"dry_run": false}).refused(t); rf == nil || !strings.Contains(rf.Message, "save_to") {
			t.Fatalf("unsaved stop not refused: %+v", rf)
		}
		stop, _ := s.ok("shutdown_server", map[string]any{"dry_run": false, "save_to": "held.pcapng"})
		if stop["stopping"] != true || stop["saved_to"] != "held.pcapng" || num(stop, "saved.messages") != 1 {
			t.Fatalf("stop %v", stop)
		}
		if code := waitExit(t, s); code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, s.stderr.String())
		}
		out, err := exec.Command(bin, "-N", "-I", filepath.Join(root, "held.pcapng"), "--json-dialogs").Output()
		if err != nil || !strings.Contains(string(out), `"call_id":"saved-1"`) {
			t.Errorf("reading the saved file: %v\n%s", err, out)
		}
	})
}

// TestShutdownServerElicitsE2E: a client that declared elicitation is
// asked on the deliberate call (elicitation/create with a required boolean
// confirm); a decline leaves the server running, an accept stops it (exit
// 0); confirmed_by_operator reports each answer.
func TestShutdownServerElicitsE2E(t *testing.T) {
	s := startRawCaps(t, map[string]any{"elicitation": map[string]any{}}, "-N", "--mcp", "--mcp-allow-shutdown", "-I", sampleCapture())
	needTools(t, s.tools(), "shutdown_server")
	s.waitLoaded()
	if dry, _ := s.ok("shutdown_server", nil); dry["dry_run"] != true {
		t.Fatalf("dry run %v", dry)
	}
	for _, accept := range []bool{false, true} {
		*s.nextID++
		id := *s.nextID
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]any{"name": "shutdown_server", "arguments": map[string]any{"dry_run": false}}})
		s.send(req)
		var answer map[string]any
		for answer == nil {
			var line []byte
			select {
			case l, ok := <-s.lines:
				if !ok {
					t.Fatalf("stdout closed\nstderr:\n%s", s.stderr.String())
				}
				line = l
			case <-time.After(30 * time.Second):
				t.Fatalf("no answer\nstderr:\n%s", s.stderr.String())
			}
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					RequestedSchema struct {
						Required []string `json:"required"`
					} `json:"requestedSchema"`
				} `json:"params"`
				Result *struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			if err := json.Unmarshal(line, &msg); err != nil {
				t.Fatal(err)
			}
			switch {
			case msg.Method == "elicitation/create":
				if len(msg.Params.RequestedSchema.Required) != 1 || msg.Params.RequestedSchema.Required[0] != "confirm" {
					t.Errorf("question %s", line)
				}
				res := map[string]any{"action": "decline"}
				if accept {
					res = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
				}
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": res})
				s.send(b)
			case string(msg.ID) == jsonInt(id) && msg.Result != nil:
				if err := json.Unmarshal([]byte(msg.Result.Content[0].Text), &answer); err != nil {
					t.Fatalf("%v: %s", err, line)
				}
			}
		}
		if answer["confirmed_by_operator"] != accept || answer["stopping"] != accept {
			t.Errorf("accept %v: answer %v", accept, answer)
		}
		if !accept {
			if _, r := s.ok("capture_status", nil); r.IsError {
				t.Fatal("a declined stop stopped the server")
			}
		}
	}
	if code := waitExit(t, s); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, s.stderr.String())
	}
}

func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestShutdownServerOverHTTPE2E: over streamable HTTP the stopping call is
// answered (the reply reaches the client) and the process then exits 0.
func TestShutdownServerOverHTTPE2E(t *testing.T) {
	srv := startHTTP(t, nil, "--mcp-allow-shutdown", "-I", sampleCapture())
	s := openSession(t, srv.URL, "")
	text := func(m map[string]any) string {
		res, _ := m["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if len(content) == 0 {
			t.Fatalf("no content: %v", m)
		}
		return content[0].(map[string]any)["text"].(string)
	}
	stopCall := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"shutdown_server","arguments":{"dry_run":false}}}`
	if got := text(s.post(strings.Replace(stopCall, "%d", "1", 1))); !strings.Contains(got, `"dry_run":true`) {
		t.Fatalf("first call %s", got)
	}
	if got := text(s.post(strings.Replace(stopCall, "%d", "2", 1))); !strings.Contains(got, `"stopping":true`) {
		t.Fatalf("second call %s", got)
	}
	select {
	case <-srv.exited:
		if code := srv.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, srv.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not exit\nstderr:\n%s", srv.stderr.String())
	}
}

// TestHEPExportReachesAnotherSipnabE2E: one sipnab forwards the sample's
// SIP (10 messages: tshark -r sip-rtp-g711.pcap -Y sip; no RTCP) with -H
// and capture id 2001 to a second sipnab's -L; the first's runtime_stats
// counts 10 sent, the second's hep_senders lists hep:2001@127.0.0.1 with
// 10 packets.
func TestHEPExportReachesAnotherSipnabE2E(t *testing.T) {
	addr := heptest.FreeAddr(t)
	rx := startRaw(t, "-N", "--mcp", "-L", addr)
	tx := startRaw(t, "-N", "--mcp", "-I", sampleCapture(), "-H", addr, "--hep-capture-id", "2001")
	needTools(t, tx.tools(), serverTools...)
	tx.waitLoaded()
	var sent, got map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sent, _ = tx.ok("runtime_stats", nil)
		got, _ = rx.ok("hep_senders", nil)
		if num(sent, "hep_export.sent") == 10 && num(got, "packets_admitted") == 10 {
			break
		}
	}
	if num(sent, "hep_export.sent") != 10 || num(sent, "hep_export.sent_sip") != 10 || num(sent, "hep_export.dropped_queue_full") != 0 {
		t.Errorf("runtime_stats hep_export %v", sent["hep_export"])
	}
	senders, _ := got["senders"].([]any)
	if len(senders) != 1 {
		t.Fatalf("hep_senders %v", got)
	}
	if snd := senders[0].(map[string]any); snd["source"] != "hep:2001@127.0.0.1" || snd["capture_id"] != 2001.0 || snd["packets"] != 10.0 {
		t.Errorf("sender %v", snd)
	}
}

// TestServerToolsOnALiveCaptureE2E (root): a live capture on lo, 5 SIP
// OPTIONS sent to its --portrange port. runtime_stats lists the interface
// and capture_packets_total counts at least the 5 frames (other traffic on
// the port may add some); capture_health reads it as a live attachment
// (code 2) with the kernel's drop count and lo's rx_dropped over the
// window; shutdown_server refuses to stop the unsaved live capture without
// save_to or discard_unsaved, and with discard_unsaved the process exits 0.
func TestServerToolsOnALiveCaptureE2E(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture on lo needs root (CAP_NET_RAW); skipped")
	}
	port := bsFreeUDPPort(t)
	s := startRaw(t, "-N", "--mcp", "-i", "lo", "--portrange", fmt.Sprint(port), "--mcp-allow-shutdown")
	needTools(t, s.tools(), serverTools...)
	conn, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var stats map[string]any
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		// Sent until seen: the capture may open after the first ones left.
		for i := range 5 {
			fmt.Fprintf(conn, "OPTIONS sip:probe@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1;branch=z9hG4bK-%d\r\nFrom: <sip:p@127.0.0.1>;tag=%d\r\nTo: <sip:probe@127.0.0.1>\r\nCall-ID: live-%d-%d\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n", i, i, port, i)
		}
		if stats, _ = s.ok("runtime_stats", nil); num(stats, "capture_packets_total") >= 5 {
			break
		}
	}
	ifaces, _ := stats["interfaces"].([]any)
	if len(ifaces) != 1 || num(stats, "capture_packets_total") < 5 {
		t.Fatalf("runtime_stats %v", stats)
	}
	if lo := ifaces[0].(map[string]any); lo["name"] != "lo" || lo["packets"] != stats["capture_packets_total"] {
		t.Errorf("interface %v, capture_packets_total %v", lo, stats["capture_packets_total"])
	}
	health, _ := s.ok("capture_health", map[string]any{"sample_seconds": 1})
	if num(health, "attachment") != 2 || num(health, "totals.kernel_dropped") < 0 || num(health, "in_window.interface_dropped") < 0 {
		t.Errorf("capture_health %v", health)
	}
	if dry, _ := s.ok("shutdown_server", nil); dry["live"] != true || dry["unsaved"] != true || dry["would_stop"] != false {
		t.Errorf("dry run %v", dry)
	}
	if rf := s.call("shutdown_server", map[string]any{"dry_run": false}).refused(t); rf == nil {
		t.Fatal("the unsaved live capture was stopped without save_to or discard_unsaved")
	}
	if stop, _ := s.ok("shutdown_server", map[string]any{"dry_run": false, "discard_unsaved": true}); stop["stopping"] != true {
		t.Fatalf("stop %v", stop)
	}
	if code := waitExit(t, s); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, s.stderr.String())
	}
}
