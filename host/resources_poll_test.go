package host

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sipnab/sipnab/sdk"
)

// pollFixture is one watched resource whose revision, instance and content
// the test moves by hand, with the host's poller driven on a synthetic clock.
type pollFixture struct {
	rh       *resourceHost
	rev      uint64
	instance string
	content  string
	renders  int
	notes    []time.Time
	clock    time.Time     // the synthetic now
	render   time.Duration // how long one rendering takes on it
}

func newPollFixture() *pollFixture {
	f := &pollFixture{instance: "capture-1", content: "v0"}
	f.rh = newResourceHost(newTestLogger(), 0)
	f.rh.notify = func(session, uri string) error {
		f.notes = append(f.notes, f.clock)
		return nil
	}
	f.rh.now = func() time.Time { return f.clock }
	s := served{
		read: func(context.Context, string, map[string]string) (sdk.ResourceContent, error) {
			f.renders++
			if f.renders%2 == 1 {
				f.clock = f.clock.Add(f.render) // every other rendering is slow
			}
			return sdk.ResourceContent{Text: f.content}, nil
		},
		revision: func() uint64 { return f.rev },
		instance: func() string { return f.instance },
	}
	w := &watch{s: s, uri: "sipnab://live/dialogs", rev: f.rev, instance: f.instance, digest: digest(sdk.ResourceContent{Text: f.content})}
	f.rh.sessions["s1"] = map[string]*watch{w.uri: w}
	return f
}

// TestSubscriptionPollerRendersOncePerWindow drives the poller every 100 ms
// over 5 s of a store that changes on every poll: the content is rendered
// at most once per one-second window (not once per poll) and each window
// with a changed rendering notifies once.
func TestSubscriptionPollerRendersOncePerWindow(t *testing.T) {
	f := newPollFixture()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var notedAt []time.Duration
	for i := 1; i <= 50; i++ {
		now := t0.Add(time.Duration(i) * subscribePoll)
		f.clock = now
		f.rev++
		f.content = fmt.Sprintf("v%d", i)
		before := len(f.notes)
		f.rh.tick(context.Background(), now)
		if len(f.notes) > before {
			notedAt = append(notedAt, now.Sub(t0))
		}
	}
	if f.renders != 5 {
		t.Errorf("got %d renderings over 50 polls in 5 s, want 5 (one per window)", f.renders)
	}
	want := []time.Duration{100 * time.Millisecond, 1100 * time.Millisecond, 2100 * time.Millisecond, 3100 * time.Millisecond, 4100 * time.Millisecond}
	if fmt.Sprint(notedAt) != fmt.Sprint(want) {
		t.Errorf("notified at %v, want %v", notedAt, want)
	}
	// The last change (v50 at 5.0 s) is held, not dropped: it goes out when
	// the window opens, without any further change.
	f.clock = t0.Add(5100 * time.Millisecond)
	f.rh.tick(context.Background(), f.clock)
	if len(f.notes) != 6 {
		t.Errorf("held change: got %d notifications, want 6", len(f.notes))
	}
	// Quiet: no revision change, no rendering, no notification.
	r := f.renders
	for i := 0; i < 30; i++ {
		f.rh.tick(context.Background(), t0.Add(6*time.Second+time.Duration(i)*subscribePoll))
	}
	if f.renders != r || len(f.notes) != 6 {
		t.Errorf("quiet store: %d renderings and %d notifications, want none", f.renders-r, len(f.notes)-6)
	}
}

// TestSubscriptionPollerWindowStartsAtTheSend: a rendering that takes
// 600 ms (a big list mid-load) delays its notification; the next, quick one
// still waits a full second from when that one left, not from the poll that
// started the slow rendering.
func TestSubscriptionPollerWindowStartsAtTheSend(t *testing.T) {
	f := newPollFixture()
	f.render = 600 * time.Millisecond
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	next := t0
	for i := 1; i <= 60; i++ {
		// The poller ticks every 100 ms; a tick that rendered ran late.
		if next.Before(f.clock) {
			next = f.clock
		}
		next = next.Add(subscribePoll)
		f.clock = next
		f.rev++
		f.content = fmt.Sprintf("v%d", i)
		f.rh.tick(context.Background(), next)
	}
	if len(f.notes) < 3 {
		t.Fatalf("got %d notifications over 6 s of changes, want several", len(f.notes))
	}
	for i := 1; i < len(f.notes); i++ {
		if gap := f.notes[i].Sub(f.notes[i-1]); gap < subscribeDebounce {
			t.Errorf("notifications %d and %d sent %v apart, want at least %v", i-1, i, gap, subscribeDebounce)
		}
	}
}

func TestSubscriptionPollerIdenticalRenderingAndSwap(t *testing.T) {
	f := newPollFixture()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// A revision bump with an identical rendering sends nothing.
	f.rev++
	f.rh.tick(context.Background(), t0)
	if f.renders != 1 || len(f.notes) != 0 {
		t.Fatalf("identical rendering: %d renderings, %d notifications; want 1, 0", f.renders, len(f.notes))
	}
	// A capture swap notifies even when the rendering is identical (an
	// empty page before and after), once the window opens.
	f.instance = "capture-2"
	f.rh.tick(context.Background(), t0.Add(500*time.Millisecond))
	if len(f.notes) != 0 {
		t.Fatalf("swap inside the window: notified at once")
	}
	f.rh.tick(context.Background(), t0.Add(time.Second))
	if len(f.notes) != 1 {
		t.Fatalf("swap: got %d notifications, want 1", len(f.notes))
	}
	// Once.
	f.rh.tick(context.Background(), t0.Add(3*time.Second))
	if len(f.notes) != 1 {
		t.Errorf("after the swap: got %d notifications, want 1", len(f.notes))
	}
}

// TestRawURIsResolve: a URI naming a raw value (reserved characters not
// percent-encoded) resolves through the <prefix>{var} template with the
// longest prefix, to the same variables as its encoded form.
func TestRawURIsResolve(t *testing.T) {
	rh := newResourceHost(newTestLogger(), 0)
	for _, tpl := range []string{"sipnab://live/dialogs/{call_id}", "sipnab://filter/{alias}", "sipnab://filter/field/{field}", "sipnab:///{filename}"} {
		rh.templates = append(rh.templates, newTemplateEntry(sdk.ResourceTemplate{URITemplate: tpl, Name: tpl}))
	}
	rh.fixed["sipnab://live/dialogs"] = served{}
	for _, tc := range []struct {
		uri, canon string
		vars       map[string]string
	}{
		{"sipnab://live/dialogs", "sipnab://live/dialogs", nil},
		{"sipnab://live/dialogs/abc%40host", "sipnab://live/dialogs/abc%40host", map[string]string{"call_id": "abc@host"}},
		{"sipnab://live/dialogs/abc@host", "sipnab://live/dialogs/abc%40host", map[string]string{"call_id": "abc@host"}},
		{"sipnab://live/dialogs/a/b c@[::1]", "sipnab://live/dialogs/a%2Fb%20c%40%5B%3A%3A1%5D", map[string]string{"call_id": "a/b c@[::1]"}},
		{"sipnab://live/dialogs/50%off@x", "sipnab://live/dialogs/50%25off%40x", map[string]string{"call_id": "50%off@x"}},
		{"sipnab://filter/problems", "sipnab://filter/problems", map[string]string{"alias": "problems"}},
		{"sipnab://filter/field/from.user", "sipnab://filter/field/from.user", map[string]string{"field": "from.user"}},
		{"sipnab://filter/field/a@b", "sipnab://filter/field/a%40b", map[string]string{"field": "a@b"}},
		{"sipnab:///../etc/passwd", "sipnab:///..%2Fetc%2Fpasswd", map[string]string{"filename": "../etc/passwd"}},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			_, vars, canon, ok := rh.resolve(tc.uri)
			if !ok || canon != tc.canon || fmt.Sprint(vars) != fmt.Sprint(tc.vars) {
				t.Errorf("got %v %q %v, want %q %v", ok, canon, vars, tc.canon, tc.vars)
			}
		})
	}
	if _, _, _, ok := rh.resolve("sipnab://other/x"); ok {
		t.Error("a URI no template serves resolved")
	}
	// The request rewrite: only a read of a raw URI changes, and keeps the
	// client's URI.
	raw := `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"sipnab://live/dialogs/abc@host","_meta":{"progressToken":7}}}`
	var m struct {
		Params struct {
			URI  string         `json:"uri"`
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(rh.canonicalRead([]byte(raw)), &m); err != nil {
		t.Fatal(err)
	}
	if m.Params.URI != "sipnab://live/dialogs/abc%40host" || m.Params.Meta[requestedMetaKey] != "sipnab://live/dialogs/abc@host" || m.Params.Meta["progressToken"] != 7.0 {
		t.Errorf("rewritten read: %+v", m.Params)
	}
	for _, keep := range []string{
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"sipnab://live/dialogs/abc%40host"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{"q":"resources/read sipnab://live/dialogs/a@b"}}}`,
		`not json resources/read`,
	} {
		if got := string(rh.canonicalRead([]byte(keep))); got != keep {
			t.Errorf("rewrote %s into %s", keep, got)
		}
	}
}

// TestRawURIReadOverStdio reads a template URI with an unencoded value
// through the whole server: the answer names the URI the client sent.
func TestRawURIReadOverStdio(t *testing.T) {
	s := startStdio(t, []string{"-N", "--mcp"}, []sdk.Bundle{&testBundle{id: "t"}}, nil)
	defer s.close()
	for _, tc := range []struct{ uri, id string }{
		{"test://t/item/abc@host", "abc@host"},
		{"test://t/item/abc%40host", "abc@host"},
		{"test://t/item/a/b:c", "a/b:c"},
	} {
		m := s.call("resources/read", map[string]any{"uri": tc.uri})
		r, ok := m["result"].(map[string]any)
		if !ok {
			t.Errorf("%s: %v", tc.uri, m)
			continue
		}
		c := r["contents"].([]any)[0].(map[string]any)
		want, _ := json.Marshal(map[string]string{"id": tc.id})
		if c["uri"] != tc.uri || c["text"] != string(want) {
			t.Errorf("%s: got uri %v text %v, want %s", tc.uri, c["uri"], c["text"], want)
		}
	}
	// Subscribing to a raw URI works too; the URI stays the client's.
	if m := s.call("resources/subscribe", map[string]any{"uri": "test://t/item/abc@host"}); m["error"] != nil {
		t.Errorf("subscribe raw: %v", m["error"])
	}
	if code, msg := errCode(s.call("resources/read", map[string]any{"uri": "test://nothing/x@y"})); code == 0 || !strings.Contains(msg, "not found") && !strings.Contains(msg, "no resource") {
		t.Errorf("unknown resource: got %d %q", code, msg)
	}
	_ = mcp.MethodResourcesRead
}

// TestRawURIReadOverHTTP: the HTTP front applies the same rewrite.
func TestRawURIReadOverHTTP(t *testing.T) {
	url, _ := startHTTPInProcess(t, []sdk.Bundle{&testBundle{id: "t"}}, nil)
	_, sid := post(t, url, "", "", initMsg)
	m, _ := post(t, url, "", sid, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://t/item/abc@host"}}`)
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("read: %v", m)
	}
	c := r["contents"].([]any)[0].(map[string]any)
	if c["uri"] != "test://t/item/abc@host" || c["text"] != `{"id":"abc@host"}` {
		t.Errorf("got %v", c)
	}
}
