package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// httpSession is an initialized raw session against /mcp.
type httpSession struct {
	t     *testing.T
	url   string
	token string
	sid   string
	host  string
	// xff sends a different X-Forwarded-For on every request: the limiter
	// must ignore it.
	xff bool
}

func openSession(t *testing.T, url, token string) *httpSession {
	t.Helper()
	hdr := map[string]string{}
	if token != "" {
		hdr["Authorization"] = "Bearer " + token
	}
	resp, body := rawPost(t, url, initBody, hdr)
	if resp.StatusCode != 200 {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	s := &httpSession{t: t, url: url, token: token, sid: resp.Header.Get("Mcp-Session-Id")}
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// post sends a JSON-RPC body in the session and returns the JSON-RPC
// answer (from a JSON or an event-stream reply), nil for a notification.
func (s *httpSession) post(body string) map[string]any {
	hdr := map[string]string{"Mcp-Session-Id": s.sid, "Mcp-Protocol-Version": "2025-11-25"}
	if s.token != "" {
		hdr["Authorization"] = "Bearer " + s.token
	}
	if s.host != "" {
		hdr["Host"] = s.host
	}
	if s.xff {
		hdr["X-Forwarded-For"] = fmt.Sprintf("198.51.100.%d", rand.IntN(250)+1)
	}
	resp, raw := rawPost(s.t, s.url, body, hdr)
	if resp.StatusCode == 202 {
		return nil
	}
	if resp.StatusCode != 200 {
		s.t.Errorf("POST: %d %s", resp.StatusCode, raw)
		return nil
	}
	payload := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		payload = ""
		for _, line := range strings.Split(raw, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id"`) {
				payload = d
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		s.t.Errorf("reply is not JSON-RPC: %q", raw)
	}
	return m
}

func (s *httpSession) callTool(id int, name string) map[string]any {
	return s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, name))
}

// burst sends n concurrent capture_status calls and sorts the answers.
func burst(s *httpSession, n, firstID int) (ok int, refusals []string, other []string) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			m := s.callTool(id, "capture_status")
			mu.Lock()
			defer mu.Unlock()
			switch e, _ := m["error"].(map[string]any); {
			case m["result"] != nil:
				ok++
			case e != nil && e["code"] == float64(-32000):
				refusals = append(refusals, e["message"].(string))
			default:
				other = append(other, fmt.Sprint(m))
			}
		}(firstID + i)
	}
	wg.Wait()
	return ok, refusals, other
}

type auditLine struct {
	Seq     int     `json:"seq"`
	TS      string  `json:"ts"`
	Tool    string  `json:"tool"`
	ID      string  `json:"id"`
	Caller  string  `json:"caller"`
	Outcome string  `json:"outcome"`
	Elapsed *int    `json:"elapsed_ms"`
	Args    *string `json:"args"`
	Error   *string `json:"error"`
}

func readAudit(t *testing.T, path string) []auditLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("torn audit record %q: %v", sc.Text(), err)
		}
		if _, ok := raw["error"]; !ok {
			t.Errorf("record without error key: %s", sc.Text())
		}
		var l auditLine
		_ = json.Unmarshal(sc.Bytes(), &l)
		out = append(out, l)
	}
	return out
}

// TestRateLimitRefusesABurstAndAuditsIt: a burst over the per-peer rate is
// refused with -32000 carrying the running count, never queued, and every
// call leaves one whole, sequential audit record.
func TestRateLimitRefusesABurstAndAuditsIt(t *testing.T) {
	dir := sharedDir(t)
	audit := filepath.Join(dir, "audit.jsonl")
	token := "e2e-static-token-0123456789"
	srv := startHTTP(t, []string{"SIPNAB_MCP_TOKEN=" + token}, "-I", sampleCapture(),
		"--mcp-rate-limit-per-peer", "5", "--mcp-audit-file", audit)
	s := openSession(t, srv.URL, token)
	s.xff = true
	const n = 60
	ok, refusals, other := burst(s, n, 100)
	if len(other) > 0 {
		t.Errorf("unexpected answers: %v", other)
	}
	if ok < 5 || len(refusals) == 0 || ok+len(refusals) != n {
		t.Fatalf("got %d ok and %d refused of %d", ok, len(refusals), n)
	}
	maxCount := 0
	for _, r := range refusals {
		var c int
		if _, err := fmt.Sscanf(r, "rate limited (%d refused since start)", &c); err != nil {
			t.Errorf("refusal %q does not carry the running count", r)
		}
		maxCount = max(maxCount, c)
	}
	if maxCount != len(refusals) {
		t.Errorf("highest running count %d, want %d", maxCount, len(refusals))
	}

	recs := readAudit(t, audit)
	if len(recs) != n {
		t.Fatalf("audit has %d records, want %d", len(recs), n)
	}
	refused := 0
	for i, r := range recs {
		if r.Seq != i+1 {
			t.Fatalf("record %d has seq %d", i+1, r.Seq)
		}
		if r.Tool != "capture_status" || r.Caller != "peer 127.0.0.1 bearer-verified scope=full token=static" || r.Args == nil || *r.Args != "{}" {
			t.Errorf("record %+v", r)
		}
		if r.Outcome == "refused" {
			refused++
			if r.Error == nil || !strings.HasPrefix(*r.Error, "rate limited") {
				t.Errorf("refused record without its error: %+v", r)
			}
		}
	}
	if refused != len(refusals) {
		t.Errorf("audit shows %d refusals, clients saw %d", refused, len(refusals))
	}
}

// TestConcurrencyCapRefusesInsteadOfQueueing: with one call allowed in
// flight, concurrent bursts are answered ok or -32000 "at capacity", never
// queued behind each other.
func TestConcurrencyCapRefusesInsteadOfQueueing(t *testing.T) {
	srv := startHTTP(t, nil, "-I", sampleCapture(), "--mcp-max-concurrent", "1", "--mcp-rate-limit-per-peer", "0")
	s := openSession(t, srv.URL, "")
	total, refused := 0, 0
	// Overlap is likely in every burst but not guaranteed: try a bounded
	// number of bursts until one call was refused.
	for round := 0; round < 20 && refused == 0; round++ {
		ok, refusals, other := burst(s, 64, 1000+round*100)
		if len(other) > 0 {
			t.Fatalf("unexpected answers: %v", other)
		}
		for _, r := range refusals {
			if !strings.HasPrefix(r, "at capacity") {
				t.Errorf("refusal %q, want at capacity", r)
			}
		}
		total += ok + len(refusals)
		refused += len(refusals)
	}
	if refused == 0 {
		t.Fatalf("no call refused in %d concurrent calls with --mcp-max-concurrent 1", total)
	}
}

// TestReadScopeRefusesWriteTools checks a read-scoped token opens the
// read-only tools; with no write tool compiled in, the registry-level check
// is exercised in host's tests.
func TestReadScopeTokenCallsReadOnlyTools(t *testing.T) {
	key := strings.Repeat("r", 40)
	srv := startHTTP(t, []string{"SIPNAB_MCP_SIGNING_KEY=" + key}, "-I", sampleCapture())
	tok := mint(t, key, "reader \"one\"\n", "read")
	s := openSession(t, srv.URL, tok)
	m := s.callTool(7, "capture_status")
	if m["result"] == nil {
		t.Fatalf("read scope refused a read-only tool: %v", m)
	}
	want := `bearer-verified scope=read token=reader%20%22one%22%0A`
	// stderr arrives through a pipe: give it a moment.
	for i := 0; i < 200 && !strings.Contains(srv.stderr.String(), want); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(srv.stderr.String(), want) {
		t.Errorf("audit caller does not carry the percent-encoded token id:\n%s", srv.stderr.String())
	}
}

func openSessionHost(t *testing.T, url, token, host string) *httpSession {
	t.Helper()
	hdr := map[string]string{"Authorization": "Bearer " + token, "Host": host}
	resp, body := rawPost(t, url, initBody, hdr)
	if resp.StatusCode != 200 {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	return &httpSession{t: t, url: url, token: token, sid: resp.Header.Get("Mcp-Session-Id"), host: host}
}
