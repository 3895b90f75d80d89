package signaling

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// treeLines renders a tree as "call_id depth parent strategy followed".
func treeLines(tr CallTree) string {
	var lines []string
	for _, l := range tr.Legs {
		lines = append(lines, fmt.Sprintf("%s d=%d p=%s %s followed=%v", l.CallID, l.Depth, l.ParentCallID, l.Strategy, l.Followed))
	}
	return strings.Join(lines, "\n")
}

func TestGetCallTreeOnTheB2BUACapture(t *testing.T) {
	c := crLoad(t, testcap.Public("b2bua-asterisk.pcapng"))
	const a, b = "M2Q0ZDc1ZGM1NzIyMTlhZTA3NDU3NTgzMzA5YmJmZWQ.", "37686afc57ce24ac655742b3644a7bb8@172.16.98.101:5060"
	var tr CallTree
	crCall(t, c, "get_call_tree", map[string]any{"call_id": a}, &tr)
	want := a + " d=0 p=  followed=true\n" + b + " d=1 p=" + a + " timing_heuristic followed=false"
	if g := treeLines(tr); g != want {
		t.Fatalf("got tree\n%s\nwant\n%s", g, want)
	}
	// tshark: 13 messages on the A leg (first: frame 19, epoch
	// 1463595795.920336), 15 on the B leg (last: frame 410, the BYE's 200,
	// epoch 1463595810.855632)
	if tr.TotalLegs != 2 || tr.MaxDepth != 1 || tr.HeuristicEdges != 1 || tr.TotalMessages != 28 {
		t.Errorf("got total_legs %d max_depth %d heuristic_edges %d total_messages %d, want 2, 1, 1, 28",
			tr.TotalLegs, tr.MaxDepth, tr.HeuristicEdges, tr.TotalMessages)
	}
	if tr.Truncated == nil || *tr.Truncated {
		t.Errorf("got truncated %v, want false on a whole read", tr.Truncated)
	}
	if tr.TimingClock != nil {
		t.Errorf("a timing leaf from a file: its gap is capture time, want no host timing_clock")
	}
	if got := tr.FirstActivity.UTC().Format(time.RFC3339Nano); got != "2016-05-18T18:23:15.920336Z" {
		t.Errorf("got first_activity %s, want the A leg's first INVITE, 2016-05-18T18:23:15.920336Z", got)
	}
	if got := tr.LastActivity.UTC().Format(time.RFC3339Nano); got != "2016-05-18T18:23:30.855632Z" {
		t.Errorf("got last_activity %s, want the B leg's BYE 200, 2016-05-18T18:23:30.855632Z", got)
	}
	root := tr.Legs[0]
	if root.Dialog == nil || root.Dialog.MsgCount != 13 || root.Dialog.FromUser != sdk.FenceOpen+"telephone1"+sdk.FenceClose {
		t.Errorf("got root dialog %+v, want 13 messages and a fenced from_user", root.Dialog)
	}
	if root.IdentifierMatch != nil || root.Strategy != "" || root.Score != 0 {
		t.Errorf("the root has no edge: got %+v", root)
	}
}

func TestGetCallTreeWalk(t *testing.T) {
	// a -session_id- b -x_call_id- c (identifier chain); t1 starts 1.5 s
	// after a on a shared address (a guess); t2 starts 1.5 s after t1 (a
	// guess of the guess, 3 s from a); x names t1 in X-Call-ID (an
	// identifier hanging off a guess). Neither t2 nor x may be reached.
	c := crCapture(t,
		crafted{callID: "a", a: "192.0.2.1:5060", b: "192.0.2.10:5060", extra: []string{"Session-ID: ab30317f1a784dc48ff824d0d3715d86"}},
		crafted{callID: "b", at: time.Minute, a: "198.51.100.1:5060", b: "198.51.100.2:5060", extra: []string{"Session-ID: 47755a9de7794ba387653f2099600ef2;remote=ab30317f1a784dc48ff824d0d3715d86"}},
		crafted{callID: "c", at: 2 * time.Minute, a: "198.51.100.3:5060", b: "198.51.100.4:5060", extra: []string{"X-Call-ID: b"}},
		crafted{callID: "t1", at: 1500 * time.Millisecond, a: "192.0.2.10:5060", b: "192.0.2.20:5060"},
		crafted{callID: "t2", at: 3 * time.Second, a: "192.0.2.20:5060", b: "192.0.2.30:5060"},
		crafted{callID: "x", at: 3 * time.Minute, a: "203.0.113.1:5060", b: "203.0.113.2:5060", extra: []string{"X-Call-ID: t1"}},
	)
	cases := []struct {
		name      string
		limit     int
		want      string
		truncated bool
		heuristic int
	}{
		{"whole tree: timing edges are leaves", 0,
			"a d=0 p=  followed=true\nb d=1 p=a session_id followed=true\nc d=2 p=b x_call_id followed=true\nt1 d=1 p=a timing_heuristic followed=false",
			false, 1},
		{"limit cuts a queued leg: followed false", 2,
			"a d=0 p=  followed=true\nb d=1 p=a session_id followed=false", true, 0},
		{"limit 3: c queued, not searched", 3,
			"a d=0 p=  followed=true\nb d=1 p=a session_id followed=true\nc d=2 p=b x_call_id followed=false", true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"call_id": "a"}
			if tc.limit > 0 {
				args["limit"] = tc.limit
			}
			var tr CallTree
			crCall(t, c, "get_call_tree", args, &tr)
			if g := treeLines(tr); g != tc.want {
				t.Errorf("got tree\n%s\nwant\n%s", g, tc.want)
			}
			// packets fed by hand are no source read to its end, so a
			// complete walk omits truncated rather than say false
			if (tr.Truncated != nil) != tc.truncated || (tr.Truncated != nil && !*tr.Truncated) || tr.HeuristicEdges != tc.heuristic {
				t.Errorf("got truncated %v heuristic_edges %d, want %v %d", tr.Truncated, tr.HeuristicEdges, tc.truncated, tc.heuristic)
			}
			if tc.heuristic == 0 && tr.TimingClock != nil {
				t.Errorf("no timing leaf returned: want no timing_clock")
			}
		})
	}
	// From t1 itself both guesses are one hop away, and x is an identifier.
	var tr CallTree
	crCall(t, c, "get_call_tree", map[string]any{"call_id": "t1"}, &tr)
	want := "t1 d=0 p=  followed=true\nx d=1 p=t1 x_call_id followed=true\na d=1 p=t1 timing_heuristic followed=false\nt2 d=1 p=t1 timing_heuristic followed=false"
	if g := treeLines(tr); g != want {
		t.Errorf("from t1: got\n%s\nwant\n%s", g, want)
	}
}

func TestGetCallTreeRefusals(t *testing.T) {
	c := crCapture(t, crafted{callID: "a", a: "192.0.2.1:5060", b: "192.0.2.2:5060"})
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown call_id", map[string]any{"call_id": "nobody"}, `unknown call_id "nobody"`},
		{"missing call_id", map[string]any{}, "call_id"},
		{"negative limit", map[string]any{"call_id": "a", "limit": -3}, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := crInvoke(t, c, "get_call_tree", tc.args)
			if crCode(err) != sdk.CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want -32602 mentioning %q", err, tc.want)
			}
		})
	}
	// A loaded capture's unknown Call-ID is refused, an empty tree would
	// read as "no other legs".
	r, err := crInvoke(t, c, "get_call_tree", map[string]any{"call_id": "a"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Blocks[0]), &m); err != nil || m["total_legs"].(float64) != 1 {
		t.Errorf("a lone call: got %v (%v), want a one-leg tree", m["total_legs"], err)
	}
}

// TestGetCallTreeRowOfACallInProgress: a leg's dialog row carries ended false
// and duration_to_capture_end_ms like list_dialogs' row. sip-rtp-g711.pcap's
// 1-1968@10.0.2.20 is answered and has no BYE: 8278 ms from the answer to
// the capture's last packet; 1-1966@10.0.2.20 ended with a BYE and carries
// neither.
func TestGetCallTreeRowOfACallInProgress(t *testing.T) {
	c := crLoad(t, testcap.Public("sip-rtp-g711.pcap"))
	for _, tc := range []struct {
		callID     string
		inProgress bool
	}{{"1-1968@10.0.2.20", true}, {"1-1966@10.0.2.20", false}} {
		t.Run(tc.callID, func(t *testing.T) {
			var tr CallTree
			crCall(t, c, "get_call_tree", map[string]any{"call_id": tc.callID}, &tr)
			if len(tr.Legs) == 0 || tr.Legs[0].Dialog == nil {
				t.Fatalf("no root row: %+v", tr)
			}
			r := tr.Legs[0].Dialog
			if !tc.inProgress {
				if r.Ended != nil || r.DurationToCaptureEndMs != nil {
					t.Errorf("ended %v, duration_to_capture_end_ms %v: want both absent", r.Ended, r.DurationToCaptureEndMs)
				}
				return
			}
			if r.Ended == nil || *r.Ended || r.DurationToCaptureEndMs == nil || *r.DurationToCaptureEndMs != 8278 {
				t.Errorf("ended %v, duration_to_capture_end_ms %v: want false, 8278", r.Ended, r.DurationToCaptureEndMs)
			}
		})
	}
}
