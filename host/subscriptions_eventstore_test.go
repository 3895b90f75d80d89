package host

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sipnab/sipnab/sdk"
)

// TestEventStoreIsCappedPerSession floods one session with 50,000 events
// over three streams: at every step at most the cap is held; a resume from
// an event still held replays exactly the later events of its stream, in
// order; one from a trimmed, foreign or malformed ID is unknown; a purge
// leaves nothing.
func TestEventStoreIsCappedPerSession(t *testing.T) {
	const max, flood = 256, 50000
	s := newBoundedEventStore(max)
	ctx := context.Background()
	var ids []string
	for i := 0; i < flood; i++ {
		id, err := s.StoreEvent(ctx, "s1", fmt.Sprintf("stream-%d", i%3), json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if n, _ := s.held(); n > max {
			t.Fatalf("step %d: %d events held, cap %d", i, n, max)
		}
	}
	if n, sessions := s.held(); n != max || sessions != 1 || s.trimmed != flood-max {
		t.Errorf("got %d events in %d sessions, %d trimmed; want %d, 1, %d", n, sessions, s.trimmed, max, flood-max)
	}
	for _, tc := range []struct {
		name       string
		session    string
		after      string
		wantStream string
		want       []int // the n of the events replayed
		wantErr    bool
	}{
		{"held, 10 before the end", "s1", ids[flood-10], "stream-" + strconv.Itoa((flood-10)%3),
			[]int{flood - 7, flood - 4, flood - 1}, false},
		{"the last event", "s1", ids[flood-1], "stream-" + strconv.Itoa((flood-1)%3), nil, false},
		{"oldest held", "s1", ids[flood-max], "stream-" + strconv.Itoa((flood-max)%3), nil, false},
		{"trimmed", "s1", ids[flood-max-1], "", nil, true},
		{"another session's id", "s2", ids[flood-1], "", nil, true},
		{"malformed", "s1", "abc", "", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			stream, err := s.ReplayEventsAfter(ctx, tc.session, tc.after, func(_ string, msg json.RawMessage) error {
				var m struct{ N int }
				_ = json.Unmarshal(msg, &m)
				got = append(got, m.N)
				return nil
			})
			if tc.wantErr {
				if !errors.Is(err, server.ErrUnknownEventID) {
					t.Errorf("got %v, want ErrUnknownEventID", err)
				}
				return
			}
			if err != nil || stream != tc.wantStream {
				t.Fatalf("got stream %q, error %v; want %q", stream, err, tc.wantStream)
			}
			if tc.name == "oldest held" {
				// every later event of its stream: (max-1)/3 of them
				if len(got) != (max-1)/3 || got[len(got)-1] != flood-max+3*((max-1)/3) {
					t.Errorf("got %d events ending %v", len(got), got[len(got)-1:])
				}
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("replayed %v, want %v", got, tc.want)
			}
		})
	}
	_ = s.PurgeSession(ctx, "s1")
	if n, sessions := s.held(); n != 0 || sessions != 0 {
		t.Errorf("after purge: %d events in %d sessions", n, sessions)
	}
	// An event delivered after its session ended (the pump racing the
	// purge) is not recorded.
	s.alive = func(id string) bool { return id == "live" }
	for _, id := range []string{"ended", "live"} {
		if _, err := s.StoreEvent(ctx, id, "stream", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n, sessions := s.held(); n != 1 || sessions != 1 || len(s.sessions["ended"]) != 0 {
		t.Errorf("got %d events in %d sessions, want the live session's one", n, sessions)
	}
}

// TestAbandonedSubscriberStoresAtMostTheCap: a session opens its GET
// stream, subscribes, and hangs up without DELETE. Its notifications are
// still recorded for a resume (the session lives on), but 1,000 of them
// leave at most 256 held; DELETE then leaves no event, no session, no
// subscription, no poller.
func TestAbandonedSubscriberStoresAtMostTheCap(t *testing.T) {
	h := newMCPHost(hostOptions{log: newTestLogger(), reg: testRegistry(t, &testBundle{id: "t"}), selected: map[string]bool{"t_echo": true},
		entries: []string{"full"}, limits: sdk.DefaultLimits()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.res.start(ctx)
	front := newHTTPFront(h, newTestLogger(), &verifier{}, maxSessions)
	ts := httptest.NewServer(front)
	defer ts.Close()
	s := newHTTPSession(t, ts.URL)
	s.listen()
	if m := s.rpc("resources/subscribe", map[string]any{"uri": "test://t/live"}); m["result"] == nil {
		t.Fatalf("subscribe: %v", m)
	}
	s.stream.Body.Close() // the client goes away without DELETE
	sent := 0
	for sent < 1000 {
		if h.res.notify(s.id, "test://t/live") == nil {
			sent++
		}
		if n, _ := front.events.held(); n > maxStoredEvents {
			t.Fatalf("after %d notifications: %d events held, cap %d", sent, n, maxStoredEvents)
		}
	}
	eventually(t, "1,000 notifications recorded", func() (bool, string) {
		n, sessions := front.events.held()
		front.events.mu.Lock()
		stored := front.events.seq
		front.events.mu.Unlock()
		return stored >= 1000 && n == maxStoredEvents && sessions == 1, fmt.Sprintf("%d recorded, %d events held in %d sessions", stored, n, sessions)
	})
	if n := h.res.count(); n != 1 {
		t.Errorf("the abandoned session holds %d subscriptions, want 1 (it lives until DELETE or eviction)", n)
	}
	// A resume from the oldest event held replays the next one; from one
	// trimmed, it is refused (the client reopens the stream afresh).
	front.events.mu.Lock()
	held := front.events.sessions[s.id]
	oldest, next := held[0].seq, held[1].seq
	front.events.mu.Unlock()
	for _, tc := range []struct {
		name, after string
		wantStatus  int
		wantID      string
	}{
		{"held", strconv.FormatUint(oldest, 10), http.StatusOK, strconv.FormatUint(next, 10)},
		{"trimmed", strconv.FormatUint(oldest-1, 10), http.StatusBadRequest, ""},
	} {
		t.Run("resume "+tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, ts.URL+"/mcp", nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", s.id)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			req.Header.Set("Last-Event-ID", tc.after)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.wantID == "" {
				return
			}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
					if id != tc.wantID {
						t.Errorf("first event replayed %s, want %s", id, tc.wantID)
					}
					return
				}
			}
			t.Errorf("no event replayed")
		})
	}
	s.end()
	wantHeld(t, h.res, 0, 0, "after DELETE")
	if n, sessions := front.events.held(); n != 0 || sessions != 0 {
		t.Errorf("after DELETE: %d events in %d sessions, want none", n, sessions)
	}
}
