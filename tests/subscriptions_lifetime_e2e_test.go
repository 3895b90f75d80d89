package tests

// End-to-end tests of "nothing outlives the connection" (mcp-surface §4.3)
// through the built binary: a connection's subscriptions are dropped when it
// ends (EOF on stdin; DELETE /mcp), the poller stops when none is left, and
// the cap of 16 holds per connection. The binary's debug log is the
// observable: each ending connection logs how many subscriptions it dropped
// and how many the server still holds.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// liveURIs are n subscribable live views: the dialog list and per-call
// views (an unknown Call-ID is an empty page, still a live view).
func liveURIs(n int) []string {
	out := []string{"sipnab://live/dialogs"}
	for i := 1; i < n; i++ {
		out = append(out, fmt.Sprintf("sipnab://live/dialogs/lifetime-%02d", i))
	}
	return out
}

var droppedRE = regexp.MustCompile(`connection ended; its subscriptions dropped:(?: session=(\S+))? dropped=(\d+) subscriptions=(\d+)`)

// dropLines returns the (session, dropped, remaining) triples logged.
func dropLines(stderr string) []string {
	var out []string
	for _, m := range droppedRE.FindAllStringSubmatch(stderr, -1) {
		out = append(out, fmt.Sprintf("%s dropped=%s remaining=%s", m[1], m[2], m[3]))
	}
	return out
}

// TestSubscriptionsE2EEndWithStdio: 16 subscriptions on sip-rtp-g711.pcap,
// a 17th refused; EOF on stdin drops all 16 and leaves none.
func TestSubscriptionsE2EEndWithStdio(t *testing.T) {
	t.Setenv("SIPNAB_LOG", "debug")
	s := startRaw(t, "-N", "--mcp", "--mcp-tools", "core", "-I", sampleCapture())
	uris := append(liveURIs(16), "sipnab://live/dialogs/lifetime-17")
	for i, u := range uris {
		got := "ok"
		if a := s.rpc("resources/subscribe", map[string]any{"uri": u}); a.Error != nil {
			got = fmt.Sprintf("error %d %s", a.Error.Code, a.Error.Message)
		}
		want := "ok"
		if i == 16 {
			want = "error -32602 at most 16 subscriptions per connection"
		}
		if got != want {
			t.Errorf("subscribe %d %s: got %q, want %q", i+1, u, got, want)
		}
	}
	if strings.Contains(s.stderr.String(), "dropped") {
		t.Errorf("subscriptions dropped while the connection is open:\n%s", s.stderr.String())
	}
	_ = s.in.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after EOF: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Fatal("sipnab did not exit after stdin closed")
	}
	stderr := s.stderr.String()
	if got := dropLines(stderr); len(got) != 1 || !strings.HasSuffix(got[0], " dropped=16 remaining=0") {
		t.Errorf("after EOF: got drop lines %q, want one ending dropped=16 remaining=0\nstderr:\n%s", got, stderr)
	}
}

// sseAnswer extracts the JSON-RPC answer from a POST's body (SSE framed).
func sseAnswer(body string) map[string]any {
	var m map[string]any
	for _, l := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok && strings.Contains(d, `"id"`) {
			_ = json.Unmarshal([]byte(d), &m)
		}
	}
	return m
}

type subSession struct {
	t   *testing.T
	url string
	id  string
	n   int
}

func openSubSession(t *testing.T, url string) *subSession {
	t.Helper()
	resp, _ := rawPost(t, url, initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, sid)
	}
	s := &subSession{t: t, url: url, id: sid, n: 1}
	rawPost(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, s.headers())
	return s
}

func (s *subSession) headers() map[string]string {
	return map[string]string{"Mcp-Session-Id": s.id, "Mcp-Protocol-Version": eraLegacy}
}

// subscribe returns "ok" or the error's code and message.
func (s *subSession) subscribe(uri string) string {
	s.t.Helper()
	s.n++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.n, "method": "resources/subscribe", "params": map[string]any{"uri": uri}})
	resp, body := rawPost(s.t, s.url, string(b), s.headers())
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("status %d", resp.StatusCode)
	}
	m := sseAnswer(body)
	if e, ok := m["error"].(map[string]any); ok {
		return fmt.Sprintf("error %v %v", e["code"], e["message"])
	}
	if m["result"] == nil {
		return "no answer: " + body
	}
	return "ok"
}

func (s *subSession) del() {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, s.url+"/mcp", nil)
	for k, v := range s.headers() {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("DELETE: status %d", resp.StatusCode)
	}
}

// waitLog polls stderr (bounded at 10 s, not a timing assertion) until it
// holds want.
func waitLog(t *testing.T, srv *httpServer, want string) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if strings.Contains(srv.stderr.String(), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("log never said %q; drop lines %q\nstderr:\n%s", want, dropLines(srv.stderr.String()), srv.stderr.String())
}

// TestSubscriptionsE2EEndWithHTTPSession: two sessions that only POST hold
// 16 subscriptions each (the cap is per session: both fill it, a 17th is
// refused on each); DELETE of the first drops its 16 and leaves 16, DELETE of
// the second leaves none and the poller stops; the ended session is refused.
func TestSubscriptionsE2EEndWithHTTPSession(t *testing.T) {
	srv := startHTTP(t, []string{"SIPNAB_LOG=debug"}, "--mcp-tools", "core", "-I", sampleCapture())
	a, b := openSubSession(t, srv.URL), openSubSession(t, srv.URL)
	for _, s := range []*subSession{a, b} {
		for i, u := range liveURIs(16) {
			if got := s.subscribe(u); got != "ok" {
				t.Fatalf("session %s subscription %d: %s", s.id, i+1, got)
			}
		}
	}
	for name, s := range map[string]*subSession{"first": a, "second": b} {
		if got, want := s.subscribe("sipnab://live/dialogs/lifetime-17"), "error -32602 at most 16 subscriptions per connection"; got != want {
			t.Errorf("17th subscription of the %s session: got %q, want %q", name, got, want)
		}
	}
	waitLog(t, srv, "subscription poller started")
	a.del()
	waitLog(t, srv, "session="+a.id+" dropped=16 subscriptions=16")
	if got := a.subscribe("sipnab://live/dialogs"); got != "status 404" {
		t.Errorf("subscribe on the ended session: got %q, want status 404", got)
	}
	if strings.Contains(srv.stderr.String(), "subscription poller stopped") {
		t.Errorf("poller stopped while the second session still holds 16 subscriptions")
	}
	b.del()
	waitLog(t, srv, "session="+b.id+" dropped=16 subscriptions=0")
	waitLog(t, srv, "subscription poller stopped")
	if got := dropLines(srv.stderr.String()); len(got) != 2 {
		t.Errorf("drop lines %q, want 2 (one per session)", got)
	}
}

// TestSubscriptionsE2EEvictedSession: a session that subscribed and then
// went away without DELETE lives on (mcp-surface §6.2 defines no idle
// timeout) until 4096 newer sessions fill the session table; its eviction
// drops its subscriptions, stops the poller and ends it (404 afterwards).
func TestSubscriptionsE2EEvictedSession(t *testing.T) {
	srv := startHTTP(t, []string{"SIPNAB_LOG=debug"}, "--mcp-tools", "core", "-I", sampleCapture())
	first := openSubSession(t, srv.URL)
	for i, u := range liveURIs(3) {
		if got := first.subscribe(u); got != "ok" {
			t.Fatalf("subscription %d: %s", i+1, got)
		}
	}
	waitLog(t, srv, "subscription poller started")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for i := 0; i < 4096; i++ {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize %d: status %d", i+1, resp.StatusCode)
		}
		if i < 4095 && strings.Contains(srv.stderr.String(), "session="+first.id) {
			t.Fatalf("the first session ended after only %d newer sessions:\n%s", i+1, srv.stderr.String())
		}
	}
	waitLog(t, srv, "session="+first.id+" dropped=3 subscriptions=0")
	waitLog(t, srv, "subscription poller stopped")
	if got := first.subscribe("sipnab://live/dialogs"); got != "status 404" {
		t.Errorf("subscribe on the evicted session: got %q, want status 404", got)
	}
}
