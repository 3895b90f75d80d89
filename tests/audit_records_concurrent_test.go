package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrentCallsLeaveWholeAuditRecords: concurrent calls leave whole,
// sequential audit records (docs/mcp-protocol.md), with records large enough that
// a torn or interleaved write would show. Three sessions of one peer send
// 150 concurrent tools/call with distinct ~900-byte arguments (and some
// over the 1024-byte bound) under --mcp-max-concurrent 3, so ok, tool
// errors and refusals interleave. The audit file must hold exactly one
// whole JSON line per call, seq 1..n in file order, each carrying its own
// call's arguments (compact, keys sorted, cut with …(truncated) past 1024
// bytes) byte-identical to the args of its mcp_audit log line on stderr.
func TestConcurrentCallsLeaveWholeAuditRecords(t *testing.T) {
	dir := sharedDir(t)
	audit := filepath.Join(dir, "audit.jsonl")
	token := "e2e-static-token-0123456789"
	srv := startHTTP(t, []string{"SIPNAB_MCP_TOKEN=" + token, "SIPNAB_LOG=info"}, "-I", sampleCapture(),
		"--mcp-rate-limit-per-peer", "0", "--mcp-max-concurrent", "3", "--mcp-audit-file", audit)
	sessions := []*httpSession{openSession(t, srv.URL, token), openSession(t, srv.URL, token), openSession(t, srv.URL, token)}

	const n = 150
	wantArgs := map[string]string{} // JSON-RPC id -> expected args string
	bodies := make([]string, n)
	for i := 0; i < n; i++ {
		id := 5000 + i
		pad := strings.Repeat(string(rune('a'+i%26)), 880)
		if i%10 == 9 {
			pad = strings.Repeat("z", 3000) // over the 1024-byte bound
		}
		filter := fmt.Sprintf("call_id == \"audit-%d-%s\"", id, pad)
		fb, _ := json.Marshal(filter)
		expect := `{"filter":` + string(fb) + `,"limit":1}`
		if len(expect) > 1024 {
			expect = expect[:1024] + "…(truncated)"
		}
		wantArgs[fmt.Sprint(id)] = expect
		// Keys out of order on the wire: the record sorts them.
		bodies[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_dialogs","arguments":{"limit":1,"filter":%s}}}`, id, fb)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	clientRefused := 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			m := sessions[i%len(sessions)].post(bodies[i])
			if e, _ := m["error"].(map[string]any); e != nil && e["code"] == float64(-32000) {
				mu.Lock()
				clientRefused++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()

	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	seen := map[string]bool{}
	lines, refused := 0, 0
	for sc.Scan() {
		lines++
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("line %d is not one whole JSON record: %v: %.200q", lines, err, sc.Text())
		}
		if _, ok := raw["error"]; !ok {
			t.Errorf("line %d has no error key", lines)
		}
		var r auditLine
		_ = json.Unmarshal(sc.Bytes(), &r)
		if r.Seq != lines {
			t.Errorf("line %d has seq %d", lines, r.Seq)
		}
		want, ok := wantArgs[r.ID]
		if !ok || seen[r.ID] {
			t.Errorf("line %d: id %q unknown or recorded twice", lines, r.ID)
			continue
		}
		seen[r.ID] = true
		if r.Tool != "list_dialogs" || r.Args == nil || *r.Args != want {
			got := "<nil>"
			if r.Args != nil {
				got = *r.Args
			}
			t.Errorf("id %s: tool %q args %.120q…, want %.120q…", r.ID, r.Tool, got, want)
		}
		if r.Outcome == "refused" {
			refused++
			if r.Error == nil || !strings.HasPrefix(*r.Error, "at capacity") {
				t.Errorf("id %s: refused without its reason: %+v", r.ID, r.Error)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines != n {
		t.Fatalf("audit file has %d records, want %d", lines, n)
	}
	if refused != clientRefused {
		t.Errorf("audit shows %d refusals, clients saw %d", refused, clientRefused)
	}
	t.Logf("%d calls: %d refused at capacity", n, refused)

	// The log line carries the same args string, byte for byte.
	logged := map[string]string{}
	for i := 0; i < 300 && len(logged) < n; i++ {
		logged = map[string]string{}
		for _, l := range strings.Split(srv.stderr.String(), "\n") {
			if !strings.Contains(l, `"@module":"sipnab.mcp_audit"`) {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil {
				continue
			}
			if id, ok := m["id"].(string); ok {
				if a, ok := m["args"].(string); ok {
					logged[id] = a
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(logged) != n {
		t.Fatalf("%d mcp_audit log lines on stderr, want %d", len(logged), n)
	}
	for id, want := range wantArgs {
		if logged[id] != want {
			t.Errorf("id %s: log line args %.120q…, record args %.120q…", id, logged[id], want)
		}
	}
}
