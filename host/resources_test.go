package host

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/sdk"
)

func TestResourcesReadListAndComplete(t *testing.T) {
	b := &testBundle{id: "t"}
	s := startStdio(t, []string{"-N", "--mcp", "--mcp-max-rows", "40"}, []sdk.Bundle{b}, nil)
	m := s.call("resources/list", map[string]any{})
	var uris []string
	for _, r := range m["result"].(map[string]any)["resources"].([]any) {
		uris = append(uris, r.(map[string]any)["uri"].(string))
	}
	if strings.Join(uris, ",") != "test://t/live,test://t/reference" {
		t.Errorf("resources/list: %v", uris)
	}
	m = s.call("resources/templates/list", map[string]any{})
	if tpl := m["result"].(map[string]any)["resourceTemplates"].([]any); len(tpl) != 1 {
		t.Errorf("templates: %v", tpl)
	}
	m = s.call("resources/read", map[string]any{"uri": "test://t/item/abc"})
	c := m["result"].(map[string]any)["contents"].([]any)[0].(map[string]any)
	if c["text"] != `{"id":"abc"}` || c["mimeType"] != "application/json" {
		t.Errorf("read: %v", c)
	}
	for _, tc := range []struct {
		name      string
		arg       string
		value     string
		wantN     int
		wantTotal float64
	}{
		{"capped by --mcp-max-rows, total reported", "id", "call-", 40, 150},
		{"prefix", "id", "call-14", 10, 10},
		{"unknown argument", "nope", "", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := s.call("completion/complete", map[string]any{
				"ref":      map[string]any{"type": "ref/resource", "uri": "test://t/item/{id}"},
				"argument": map[string]any{"name": tc.arg, "value": tc.value}})
			comp := m["result"].(map[string]any)["completion"].(map[string]any)
			vals := comp["values"].([]any)
			total, _ := comp["total"].(float64)
			if len(vals) != tc.wantN || total != tc.wantTotal {
				t.Errorf("got %d values, total %v; want %d, %v", len(vals), total, tc.wantN, tc.wantTotal)
			}
		})
	}
	s.close()
}

func TestSubscriptionsNotifyOnChangeOnlyDebounced(t *testing.T) {
	b := &testBundle{id: "t"}
	s := startStdio(t, []string{"-N", "--mcp"}, []sdk.Bundle{b}, nil)
	uri := "test://t/live"

	if code, msg := errCode(s.call("resources/subscribe", map[string]any{"uri": "test://t/reference"})); code != -32602 || !strings.Contains(msg, "cannot be subscribed") {
		t.Errorf("subscribing a static resource: got %d %q", code, msg)
	}
	if m := s.call("resources/subscribe", map[string]any{"uri": uri}); m["error"] != nil {
		t.Fatalf("subscribe: %v", m["error"])
	}
	// A revision bump with an identical rendering sends nothing.
	b.rev.Add(1)
	select {
	case n := <-s.notes:
		t.Fatalf("notified without a content change: %v", n)
	case <-time.After(600 * time.Millisecond):
	}
	// A change notifies once; a change right after waits out the debounce.
	b.text.Store("v1")
	b.rev.Add(1)
	waitNote(t, s, uri)
	// The change right after is held, not dropped (its spacing is checked
	// on a synthetic clock by TestSubscriptionPollerRendersOncePerWindow:
	// wall-clock gaps measured across pipes are not asserted).
	b.text.Store("v2")
	b.rev.Add(1)
	waitNote(t, s, uri)
	// Nothing more without a change.
	select {
	case n := <-s.notes:
		t.Errorf("extra notification: %v", n)
	case <-time.After(1200 * time.Millisecond):
	}
	// The cap: 16 per connection (the template gives distinct URIs).
	for i := 0; i < 15; i++ {
		if m := s.call("resources/subscribe", map[string]any{"uri": fmt.Sprintf("test://t/item/%d", i)}); m["error"] != nil {
			t.Fatalf("subscription %d: %v", i+2, m["error"])
		}
	}
	if code, msg := errCode(s.call("resources/subscribe", map[string]any{"uri": "test://t/item/99"})); code != -32602 || !strings.Contains(msg, "at most 16") {
		t.Errorf("17th subscription: got %d %q", code, msg)
	}
	s.close()
}

func waitNote(t *testing.T, s *stdioSession, uri string) time.Time {
	t.Helper()
	select {
	case n := <-s.notes:
		if n["method"] != "notifications/resources/updated" || n["params"].(map[string]any)["uri"] != uri {
			t.Fatalf("notification %v", n)
		}
		return time.Now()
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	return time.Time{}
}

func TestProgressReachesTheClient(t *testing.T) {
	s := startStdio(t, []string{"-N", "--mcp"}, []sdk.Bundle{&testBundle{id: "t"}}, nil)
	m := s.call("tools/call", map[string]any{"name": "t_echo", "arguments": map[string]any{"text": "progress"},
		"_meta": map[string]any{"progressToken": "tok-1"}})
	if m["error"] != nil {
		t.Fatal(m["error"])
	}
	var got []string
	for len(got) < 2 {
		select {
		case n := <-s.notes:
			p := n["params"].(map[string]any)
			got = append(got, fmt.Sprintf("%v %v %v %v", n["method"], p["progressToken"], p["progress"], p["message"]))
		case <-time.After(5 * time.Second):
			t.Fatalf("got %v", got)
		}
	}
	want := "notifications/progress tok-1 1 half,notifications/progress tok-1 2 <nil>"
	if strings.Join(got, ",") != want {
		t.Errorf("got %v, want %s", got, want)
	}
	// Without a token nothing is sent.
	s.tool("t_echo", map[string]any{"text": "progress"})
	select {
	case n := <-s.notes:
		t.Errorf("progress without a token: %v", n)
	case <-time.After(300 * time.Millisecond):
	}
	s.close()
}
