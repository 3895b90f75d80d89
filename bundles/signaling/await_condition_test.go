package signaling

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

type sgAwait struct {
	SchemaVersion  int    `json:"schema_version"`
	Filter         string `json:"filter"`
	Matched        bool   `json:"matched"`
	StoppedBecause string `json:"stopped_because"`
	Dialogs        []struct {
		CallID string `json:"call_id"`
	} `json:"dialogs"`
	Returned        int   `json:"returned"`
	TotalMatched    int   `json:"total_matched"`
	Truncated       *bool `json:"truncated"`
	ElapsedMS       int64 `json:"elapsed_ms"`
	TimeoutSeconds  int   `json:"timeout_seconds"`
	TimeoutClamped  bool  `json:"timeout_clamped"`
	PollIntervalMS  int   `json:"poll_interval_ms"`
	Polls           int   `json:"polls"`
	Scans           int   `json:"scans"`
	SourceExhausted bool  `json:"source_exhausted"`
	CaptureIdentity struct {
		Instance string `json:"instance"`
	} `json:"capture_identity"`
}

func sgAwaitCall(t *testing.T, c *engine.Capture, args map[string]any, l sdk.Limits) sgAwait {
	t.Helper()
	r, err := sgInvoke(t, c, "await_condition", args, l)
	if err != nil {
		t.Fatalf("await_condition %v: %v", args, err)
	}
	var got sgAwait
	if err := json.Unmarshal([]byte(r.Blocks[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.Scans > got.Polls || got.Polls < 1 {
		t.Errorf("scans %d polls %d: want 1 <= scans <= polls", got.Scans, got.Polls)
	}
	return got
}

func TestAwaitConditionOnALoadedFile(t *testing.T) {
	c := sgLoad(t, testcap.Public("b2bua-asterisk.pcapng"))
	cases := []struct {
		name    string
		args    map[string]any
		stopped string
		matched int
		timeout int
		poll    int
		clamped bool
	}{
		{"existing match", map[string]any{"filter": "method == INVITE"}, "condition_met", 2, 30, 500, false},
		// The file is read whole: nothing more will arrive, so an impossible
		// condition stops at once instead of waiting out the deadline.
		{"impossible on an exhausted source", map[string]any{"filter": "method == MESSAGE", "timeout_seconds": 5}, "source_exhausted", 0, 5, 500, false},
		{"look once", map[string]any{"filter": "state == Failed", "timeout_seconds": 0}, "condition_met", 8, 0, 500, false},
		{"clamped to the ceiling", map[string]any{"filter": "method == INVITE", "timeout_seconds": 3600}, "condition_met", 2, 60, 500, true},
		{"poll floor", map[string]any{"filter": "method == INVITE", "poll_interval_ms": 1}, "condition_met", 2, 30, 100, false},
		// problems: the 8 Failed dialogs and both legs of the answered
		// B2BUA call: after Asterisk's direct-media re-INVITEs both legs
		// hold the two streams (core/media 566fec1), 355 packets 145->1
		// against 1 packet back: one-way audio (core/analysis 681036a).
		{"an alias", map[string]any{"filter": "problems"}, "condition_met", 10, 30, 500, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := sgAwaitCall(t, c, tc.args, sdk.Limits{})
			if got.StoppedBecause != tc.stopped || got.Matched != (tc.stopped == "condition_met") || got.TotalMatched != tc.matched {
				t.Errorf("stopped %q matched %v total %d, want %q %d", got.StoppedBecause, got.Matched, got.TotalMatched, tc.stopped, tc.matched)
			}
			if got.TimeoutSeconds != tc.timeout || got.TimeoutClamped != tc.clamped || got.PollIntervalMS != tc.poll {
				t.Errorf("timeout %d clamped %v poll %d, want %d %v %d", got.TimeoutSeconds, got.TimeoutClamped, got.PollIntervalMS, tc.timeout, tc.clamped, tc.poll)
			}
			if got.Polls != 1 || got.Scans != 1 || got.Returned != len(got.Dialogs) || got.Returned != tc.matched {
				t.Errorf("polls %d scans %d returned %d rows %d, want one look returning %d", got.Polls, got.Scans, got.Returned, len(got.Dialogs), tc.matched)
			}
			if !got.SourceExhausted || got.Truncated == nil || *got.Truncated {
				t.Errorf("source_exhausted %v truncated %v, want true and false", got.SourceExhausted, got.Truncated)
			}
		})
	}
}

// TestAwaitConditionDeadline: on a source that never ends (no file, as a
// live capture), an impossible condition waits out its timeout, answers
// deadline as a success, and rescans nothing while the store is still.
func TestAwaitConditionDeadline(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	got := sgAwaitCall(t, c, map[string]any{"filter": "method == INVITE", "timeout_seconds": 1, "poll_interval_ms": 200}, sdk.Limits{})
	if got.StoppedBecause != "deadline" || got.Matched || got.TotalMatched != 0 || got.Dialogs == nil {
		t.Errorf("got %+v, want deadline with no match and dialogs []", got)
	}
	if got.ElapsedMS < 1000 {
		t.Errorf("elapsed %d ms: the deadline is 1 s", got.ElapsedMS)
	}
	if got.Polls < 2 || got.Scans != 1 {
		t.Errorf("polls %d scans %d: want several polls and one scan of the unchanged store", got.Polls, got.Scans)
	}
	if got.SourceExhausted || got.Truncated != nil {
		t.Errorf("source_exhausted %v truncated %v: a source still open claims neither", got.SourceExhausted, got.Truncated)
	}
	// The ceiling comes from the server (--mcp-max-wait-seconds).
	l := sdk.DefaultLimits()
	l.MaxWaitSeconds = 1
	got = sgAwaitCall(t, c, map[string]any{"filter": "method == INVITE", "timeout_seconds": 30}, l)
	if got.TimeoutSeconds != 1 || !got.TimeoutClamped || got.StoppedBecause != "deadline" {
		t.Errorf("with a 1 s ceiling: timeout %d clamped %v stopped %q", got.TimeoutSeconds, got.TimeoutClamped, got.StoppedBecause)
	}
}

// TestAwaitConditionSeesANewCall: a call arriving while the tool waits
// moves the dialog revision; the next poll scans and the condition is met.
func TestAwaitConditionSeesANewCall(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	go func() {
		time.Sleep(300 * time.Millisecond)
		c.HandlePacket(&packet.Packet{
			TS:  time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC),
			Src: netip.MustParseAddrPort("192.0.2.10:5060"), Dst: netip.MustParseAddrPort("198.51.100.20:5060"),
			Transport: packet.TransportUDP, Origin: packet.OriginWire,
			Payload: []byte("INVITE sip:bob@example.net SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKnew1\r\n" +
				"From: <sip:alice@example.com>;tag=a1\r\nTo: <sip:bob@example.net>\r\nCall-ID: arrives-late\r\n" +
				"CSeq: 1 INVITE\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"),
		})
	}()
	got := sgAwaitCall(t, c, map[string]any{"filter": "call_id == arrives-late", "timeout_seconds": 30, "poll_interval_ms": 100}, sdk.Limits{})
	if got.StoppedBecause != "condition_met" || len(got.Dialogs) != 1 || got.Dialogs[0].CallID != "arrives-late" {
		t.Fatalf("got %+v, want condition_met on arrives-late", got)
	}
	if got.Scans < 2 {
		t.Errorf("scans %d: want a scan before and one after the call arrived", got.Scans)
	}
}

func TestAwaitConditionRefusalsAndCancellation(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing filter", map[string]any{}, "filter"},
		{"empty filter", map[string]any{"filter": ""}, "filter"},
		{"bad filter", map[string]any{"filter": "state == failed"}, "Failed"},
		{"negative timeout", map[string]any{"filter": "method == INVITE", "timeout_seconds": -1}, "timeout_seconds"},
		{"negative poll", map[string]any{"filter": "method == INVITE", "poll_interval_ms": -1}, "poll_interval_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sgInvoke(t, c, "await_condition", tc.args, sdk.Limits{})
			if sgCode(err) != sdk.CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want -32602 mentioning %q", err, tc.want)
			}
		})
	}
	// A cancelled call returns at once: nothing outlives it.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := sgTool(t, c, "await_condition").Invoke(ctx, json.RawMessage(`{"filter":"method == INVITE","timeout_seconds":60}`), sdk.DefaultLimits())
	if err == nil || !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("cancelled wait: got %v, want an error", err)
	}
}
