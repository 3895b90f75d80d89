package host

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sipnab/sipnab/sdk"
)

// Tests of "nothing outlives the connection" (mcp-surface §4.3): a
// connection's subscriptions, and the poller that watches them, end with the
// connection, over stdio (EOF) and streamable HTTP (DELETE, eviction from
// the session table), and the cap of 16 is per connection.

// probeContext returns a context whose Run reports its resourceHost.
func probeContext(t *testing.T) (context.Context, func() *resourceHost) {
	t.Helper()
	var mu sync.Mutex
	var got *resourceHost
	ctx := context.WithValue(context.Background(), resourceProbeKey{}, func(rh *resourceHost) {
		mu.Lock()
		got = rh
		mu.Unlock()
	})
	return ctx, func() *resourceHost {
		t.Helper()
		for i := 0; i < 2000; i++ {
			mu.Lock()
			rh := got
			mu.Unlock()
			if rh != nil {
				return rh
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("Run did not start its resource host")
		return nil
	}
}

// eventually polls cond for up to 10 s (a bound on how long the test
// waits, not a timing assertion) and reports what it last saw.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for i := 0; i < 1000; i++ {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: still %s after 10 s", what, last)
}

// wantHeld waits until rh holds want subscriptions and wantPollers poller
// goroutines run.
func wantHeld(t *testing.T, rh *resourceHost, want int, wantPollers int32, what string) {
	t.Helper()
	eventually(t, what, func() (bool, string) {
		n, p := rh.count(), rh.pollers.Load()
		return n == want && p == wantPollers, fmt.Sprintf("got %d subscriptions and %d pollers, want %d and %d", n, p, want, wantPollers)
	})
}

// startStdioCtx is startStdio under ctx.
func startStdioCtx(t *testing.T, ctx context.Context, args []string, bundles []sdk.Bundle) *stdioSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioSession{t: t, in: inW, out: bufio.NewReader(outR), stderr: &syncBuffer{}, done: make(chan int, 1),
		resp: map[string]chan map[string]any{}, notes: make(chan map[string]any, 64)}
	go func() {
		code := Run(ctx, args, bundles, IO{Stdin: inR, Stdout: outW, Stderr: s.stderr})
		_ = outW.Close()
		s.done <- code
	}()
	go func() {
		for {
			line, err := s.out.ReadString('\n')
			if err != nil {
				s.mu.Lock()
				for _, ch := range s.resp {
					close(ch)
				}
				s.resp = map[string]chan map[string]any{}
				s.mu.Unlock()
				return
			}
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				continue
			}
			if _, isNote := m["method"]; isNote && m["id"] == nil {
				select {
				case s.notes <- m:
				default:
				}
				continue
			}
			s.mu.Lock()
			ch, ok := s.resp[fmt.Sprint(m["id"])]
			delete(s.resp, fmt.Sprint(m["id"]))
			s.mu.Unlock()
			if ok {
				ch <- m
			}
		}
	}()
	t.Cleanup(func() { _ = inW.Close() })
	s.initialized = s.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	s.notify("notifications/initialized")
	return s
}

// subscribeAll subscribes to the live view and to items 0..n-2 (n in all)
// and fails on any refusal.
func subscribeAll(t *testing.T, n int, sub func(uri string) map[string]any) {
	t.Helper()
	for i := 0; i < n; i++ {
		uri := "test://t/live"
		if i > 0 {
			uri = fmt.Sprintf("test://t/item/%d", i-1)
		}
		if m := sub(uri); m["error"] != nil {
			t.Fatalf("subscription %d (%s): %v", i+1, uri, m["error"])
		}
	}
}

// TestSubscriptionsEndWithStdio: 16 subscriptions and their poller are
// held while the stdio connection is open and dropped at EOF on stdin; an
// unsubscribe of every URI stops the poller while the connection stays.
func TestSubscriptionsEndWithStdio(t *testing.T) {
	for _, tc := range []struct {
		name string
		// unsubscribeFirst unsubscribes every URI before EOF.
		unsubscribeFirst bool
	}{
		{"EOF with 16 subscriptions", false},
		{"unsubscribe all, then EOF", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, probe := probeContext(t)
			s := startStdioCtx(t, ctx, []string{"-N", "--mcp"}, []sdk.Bundle{&testBundle{id: "t"}})
			rh := probe()
			wantHeld(t, rh, 0, 0, "before any subscription")
			subscribeAll(t, maxSubscriptions, func(uri string) map[string]any {
				return s.call("resources/subscribe", map[string]any{"uri": uri})
			})
			wantHeld(t, rh, maxSubscriptions, 1, "with 16 subscriptions")
			if tc.unsubscribeFirst {
				for i := 0; i < maxSubscriptions; i++ {
					uri := "test://t/live"
					if i > 0 {
						uri = fmt.Sprintf("test://t/item/%d", i-1)
					}
					if m := s.call("resources/unsubscribe", map[string]any{"uri": uri}); m["error"] != nil {
						t.Fatalf("unsubscribe %s: %v", uri, m["error"])
					}
				}
				wantHeld(t, rh, 0, 0, "after unsubscribing every URI, connection open")
				// A new subscription starts the poller again.
				if m := s.call("resources/subscribe", map[string]any{"uri": "test://t/live"}); m["error"] != nil {
					t.Fatal(m["error"])
				}
				wantHeld(t, rh, 1, 1, "resubscribed")
			}
			if code := s.close(); code != 0 {
				t.Fatalf("exit %d", code)
			}
			wantHeld(t, rh, 0, 0, "after EOF on stdin")
		})
	}
}

// startHTTPCtx is startHTTPInProcess under a probe context.
func startHTTPCtx(t *testing.T, bundles []sdk.Bundle, args ...string) (string, *resourceHost) {
	t.Helper()
	pctx, probe := probeContext(t)
	ctx, cancel := context.WithCancel(pctx)
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	full := append([]string{"-N", "--mcp", "--mcp-transport", "http", "--mcp-bind", "127.0.0.1:0", "--mcp-rate-limit-per-peer", "0"}, args...)
	go func() {
		done <- Run(ctx, full, bundles, IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	for i := 0; i < 2000; i++ {
		if m := urlRE.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], probe()
		}
		select {
		case code := <-done:
			t.Fatalf("server exited %d:\n%s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("server did not start:\n%s", stderr.String())
	return "", nil
}

// httpSession is one streamable HTTP session of a test client.
type httpSession struct {
	t      *testing.T
	url    string
	id     string
	nextID int
	// stream is the GET listening stream, when opened.
	stream *http.Response
}

func newHTTPSession(t *testing.T, url string) *httpSession {
	t.Helper()
	m, sid := post(t, url, "", "", initMsg)
	if m["result"] == nil || sid == "" {
		t.Fatalf("initialize: %v (session %q)", m, sid)
	}
	s := &httpSession{t: t, url: url, id: sid, nextID: 1}
	s.rpc("notifications/initialized", nil)
	return s
}

func (s *httpSession) rpc(method string, params any) map[string]any {
	s.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if !strings.HasPrefix(method, "notifications/") {
		s.nextID++
		msg["id"] = s.nextID
	}
	b, _ := json.Marshal(msg)
	m, _ := post(s.t, s.url, "", s.id, string(b))
	return m
}

// listen opens the GET stream that carries the session's notifications.
func (s *httpSession) listen() {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		s.t.Fatalf("GET stream: status %d", resp.StatusCode)
	}
	s.stream = resp
	s.t.Cleanup(func() { resp.Body.Close() })
}

// end sends DELETE for the session and wants 200.
func (s *httpSession) end() {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, s.url+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("DELETE: status %d", resp.StatusCode)
	}
}

// TestSubscriptionsEndWithHTTPSession: two sessions hold 16 subscriptions
// each (the cap is per session, not global: a 17th is refused on either);
// DELETE of one drops exactly its 16 and the poller keeps running for the
// other; DELETE of the other drops the rest and the poller exits. The
// session ended is refused afterwards. Cases: sessions that only POST, and
// sessions with a GET listening stream (open, or closed by the client
// before the DELETE).
func TestSubscriptionsEndWithHTTPSession(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listen bool
		// hangUp closes the GET stream before the DELETE.
		hangUp bool
	}{
		{"POST only", false, false},
		{"with a GET stream", true, false},
		{"GET stream closed before DELETE", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, rh := startHTTPCtx(t, []sdk.Bundle{&testBundle{id: "t"}})
			a, b := newHTTPSession(t, url), newHTTPSession(t, url)
			if tc.listen {
				a.listen()
				b.listen()
			}
			for _, s := range []*httpSession{a, b} {
				subscribeAll(t, maxSubscriptions, func(uri string) map[string]any {
					return s.rpc("resources/subscribe", map[string]any{"uri": uri})
				})
			}
			wantHeld(t, rh, 2*maxSubscriptions, 1, "two sessions with 16 each")
			for name, s := range map[string]*httpSession{"first": a, "second": b} {
				if code, msg := errCode(s.rpc("resources/subscribe", map[string]any{"uri": "test://t/item/99"})); code != -32602 || !strings.Contains(msg, "at most 16") {
					t.Errorf("17th subscription of the %s session: got %d %q, want -32602 at most 16", name, code, msg)
				}
			}
			if tc.hangUp {
				a.stream.Body.Close()
				b.stream.Body.Close()
				// Hanging up the stream does not end the session (the
				// event store keeps it for a reconnect).
				wantHeld(t, rh, 2*maxSubscriptions, 1, "after the GET streams closed")
			}
			a.end()
			wantHeld(t, rh, maxSubscriptions, 1, "after DELETE of the first session")
			if m := a.rpc("resources/subscribe", map[string]any{"uri": "test://t/live"}); m["result"] != nil {
				t.Errorf("subscribe on an ended session answered %v", m)
			}
			b.end()
			wantHeld(t, rh, 0, 0, "after DELETE of both sessions")
		})
	}
}

// TestEvictedHTTPSessionsTakeTheirSubscriptions: a session abandoned
// without DELETE (no idle timeout: mcp-surface §6.2 defines none) lives
// until the capped session table evicts it, and its subscriptions go with
// it; a subscribe that lands after its session ended (racing the DELETE) is
// not recorded.
func TestEvictedHTTPSessionsTakeTheirSubscriptions(t *testing.T) {
	rh := newResourceHost(newTestLogger(), 0)
	live := served{revision: func() uint64 { return 1 },
		read: func(context.Context, string, map[string]string) (sdk.ResourceContent, error) {
			return sdk.ResourceContent{Text: "x"}, nil
		}}
	rh.fixed["test://t/live"] = live
	m := newSessionManager()
	m.max = 3
	rh.bindSessions(m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rh.start(ctx)

	subscribe := func(id string) {
		rh.subscribe(sessionContext(id), "test://t/live")
	}
	var ids []string
	for i := 0; i < 3; i++ {
		id := m.Generate()
		ids = append(ids, id)
		subscribe(id)
	}
	wantHeld(t, rh, 3, 1, "three sessions, one subscription each")
	for i := 0; i < 3; i++ {
		m.Generate() // each new session evicts the oldest
		wantHeld(t, rh, 2-i, min(1, int32(2-i)), fmt.Sprintf("after eviction %d", i+1))
	}
	// A subscribe for a session already ended is dropped.
	subscribe(ids[0])
	if n := rh.count(); n != 0 {
		t.Errorf("subscribe after the session ended: %d subscriptions, want 0", n)
	}
	// The same for one ended by DELETE.
	id := m.Generate()
	_, _ = m.Terminate(id)
	subscribe(id)
	wantHeld(t, rh, 0, 0, "subscribe after DELETE")
}

// fakeSession is a ClientSession with a fixed id.
type fakeSession string

func (fakeSession) Initialize()                                         {}
func (fakeSession) Initialized() bool                                   { return true }
func (fakeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (f fakeSession) SessionID() string                                 { return string(f) }

func sessionContext(id string) context.Context {
	return server.NewMCPServer("t", "1").WithContext(context.Background(), fakeSession(id))
}

// TestEvictedHTTPSessionsLeaveNothing floods initialize through the HTTP
// front with the session table capped at 100: at every step the sessions
// mcp-go holds registered and the subscriptions stay within the cap (an
// evicted session is ended in mcp-go too, which frees it only on DELETE),
// and once every session is deleted nothing is left, the poller included.
// 2,000 sessions (twenty times the cap) evict 1,900; the 20,000 it once
// sent took 128 s under -race on a loaded 2-core machine.
func TestEvictedHTTPSessionsLeaveNothing(t *testing.T) {
	const cap, flood = 100, 2000
	h := newMCPHost(hostOptions{log: newTestLogger(), reg: testRegistry(t, &testBundle{id: "t"}), selected: map[string]bool{"t_echo": true},
		entries: []string{"full"}, limits: sdk.DefaultLimits()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.res.start(ctx)
	front := newHTTPFront(h, newTestLogger(), &verifier{}, cap)
	var mu sync.Mutex
	registered := 0
	h.srv.GetHooks().AddOnRegisterSession(func(context.Context, server.ClientSession) { mu.Lock(); registered++; mu.Unlock() })
	h.srv.GetHooks().AddOnUnregisterSession(func(context.Context, server.ClientSession) { mu.Lock(); registered--; mu.Unlock() })
	serve := func(method, sid, body string) (*httptest.ResponseRecorder, map[string]any) {
		req := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		rec := httptest.NewRecorder()
		front.ServeHTTP(rec, req)
		var m map[string]any
		for _, l := range strings.Split(rec.Body.String(), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok && strings.Contains(d, `"id"`) {
				_ = json.Unmarshal([]byte(d), &m)
			}
		}
		return rec, m
	}
	var sids []string
	for i := 0; i < flood; i++ {
		rec, _ := serve(http.MethodPost, "", initMsg)
		sid := rec.Header().Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize %d: status %d %s", i, rec.Code, rec.Body.String())
		}
		sids = append(sids, sid)
		if i%10 == 0 {
			if _, m := serve(http.MethodPost, sid, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://t/live"}}`); m["result"] == nil {
				t.Fatalf("subscribe %d: %v", i, m)
			}
		}
		mu.Lock()
		r := registered
		mu.Unlock()
		if n := h.res.count(); r > cap || n > cap/10+1 {
			t.Fatalf("step %d: %d sessions registered, %d subscriptions; want at most %d and %d", i, r, n, cap, cap/10+1)
		}
	}
	if got := front.sessions.evicted; got != flood-cap {
		t.Errorf("evicted %d sessions, want %d", got, flood-cap)
	}
	if rec, _ := serve(http.MethodPost, sids[0], `{"jsonrpc":"2.0","id":3,"method":"ping"}`); rec.Code != http.StatusNotFound {
		t.Errorf("request on an evicted session: status %d, want 404", rec.Code)
	}
	for _, sid := range sids[flood-cap:] {
		if rec, _ := serve(http.MethodDelete, sid, ""); rec.Code != http.StatusOK {
			t.Fatalf("DELETE: status %d", rec.Code)
		}
	}
	mu.Lock()
	r := registered
	mu.Unlock()
	if r != 0 {
		t.Errorf("after DELETE of the live sessions: %d still registered, want 0", r)
	}
	wantHeld(t, h.res, 0, 0, "after DELETE of the live sessions")
}

// TestModernEraSubscribeRecordsNothing: protocol 2026-07-28 has no
// sessions and no resources/subscribe (mcp-surface §4.3: subscriptions/listen
// not implemented). A modern request runs on an ephemeral session whose id
// is empty, shared by every modern client, so a subscription recorded for it
// would never end and would share one cap between all of them: it is refused
// and nothing is recorded.
func TestModernEraSubscribeRecordsNothing(t *testing.T) {
	url, rh := startHTTPCtx(t, []sdk.Bundle{&testBundle{id: "t"}})
	for i := 0; i < 3; i++ {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "resources/subscribe",
			"params": map[string]any{"uri": "test://t/live", "_meta": map[string]any{
				mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
				mcp.MetaKeyClientInfo:         map[string]any{"name": "t", "version": "1"},
				mcp.MetaKeyClientCapabilities: map[string]any{}}}})
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
		req.Header.Set(mcp.HeaderMethod, "resources/subscribe")
		req.Header.Set(mcp.HeaderName, "test://t/live")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(answer), `"code":-32601`) {
			t.Errorf("modern resources/subscribe %d: status %d %s, want -32601", i+1, resp.StatusCode, answer)
		}
	}
	wantHeld(t, rh, 0, 0, "after three modern-era subscribes")
	// Should mcp-go ever let one through, the host records nothing for a
	// request without a session id.
	rh.subscribe(sessionContext(""), "test://t/live")
	if n := rh.count(); n != 0 {
		t.Errorf("subscribe without a session id: %d recorded, want 0", n)
	}
}

// TestEvictedSessionsStopTheirGoroutines: mcp-go runs one pump goroutine
// per session that opened its GET stream, for as long as the session lives
// (the event store records what arrives while nobody is connected). 200
// sessions open and hang up their stream with the table capped at 10: the
// evicted ones are ended in mcp-go, so the goroutine count settles near the
// 10 live sessions' pumps (the previous wiring left one pump per evicted
// session running: 203 goroutines against 3 before the flood).
func TestEvictedSessionsStopTheirGoroutines(t *testing.T) {
	const cap, flood = 10, 200
	h := newMCPHost(hostOptions{log: newTestLogger(), reg: testRegistry(t, &testBundle{id: "t"}), selected: map[string]bool{"t_echo": true},
		entries: []string{"full"}, limits: sdk.DefaultLimits()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.res.start(ctx)
	front := newHTTPFront(h, newTestLogger(), &verifier{}, cap)
	ts := httptest.NewServer(front)
	defer ts.Close()
	base := runtime.NumGoroutine()
	var live []*httpSession
	for i := 0; i < flood; i++ {
		s := newHTTPSession(t, ts.URL)
		s.listen()
		s.stream.Body.Close()
		live = append(live, s)
	}
	// Keep-alive connections add a few goroutines of their own: 10 slack.
	eventually(t, "goroutines after the flood", func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= base+cap+10, fmt.Sprintf("%d goroutines (%d before the flood), want at most %d", n, base, base+cap+10)
	})
	for _, s := range live[flood-cap:] {
		s.end()
	}
	eventually(t, "goroutines after DELETE of the live sessions", func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= base+10, fmt.Sprintf("%d goroutines (%d before the flood), want at most %d", n, base, base+10)
	})
}
