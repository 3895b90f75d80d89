package core

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testgen"
	"github.com/sipnab/sipnab/sdk"
)

func TestMain(m *testing.M) { os.Exit(testgen.Run(m)) }

// lqCarrier is the generator's carrier mix (220 dialogs: 20 failed calls,
// ten calls of each fault kind, 330 streams) with 4 s calls instead of
// 25 s: 65,000 frames instead of 410,000, every answer kind still there.
// With -short it is the small capture (every kind once). The full carrier
// capture is BenchmarkRTPStatsSweep's.
func lqCarrier(seed uint64) gen.Config {
	if testing.Short() {
		return gen.Small(seed)
	}
	cfg := gen.Carrier(seed)
	cfg.Duration = 4 * time.Second
	return cfg
}

// lqGenerated loads the lqCarrier capture whole (generated once for the
// package).
func lqGenerated(t *testing.T, seed uint64) (*engine.Capture, *gen.Answers) {
	t.Helper()
	path, ans := testgen.Capture(t, lqCarrier(seed))
	return lqLoad(t, engine.Config{}, path), ans
}

// TestFindProblemsOnGeneratedCapture: on the generated carrier capture,
// find_problems returns exactly the dialogs the generator made faulty, per
// alias, and exactly its failed calls with a state filter AND-ed.
func TestFindProblemsOnGeneratedCapture(t *testing.T) {
	c, ans := lqGenerated(t, 1)
	tools := lqTools(t, c)
	withReason := func(reason string) []string {
		var out []string
		for _, p := range ans.ProblemCalls {
			if slices.Contains(p.Reasons, reason) {
				out = append(out, p.CallID)
			}
		}
		return lqSorted(out)
	}
	var all []string
	for _, p := range ans.ProblemCalls {
		all = append(all, p.CallID)
	}
	cases := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"default kinds", map[string]any{}, lqSorted(all)},
		{"empty kinds are the default", map[string]any{"kinds": []string{}}, lqSorted(all)},
		{"failed calls", map[string]any{"filter": "state == Failed"}, lqSorted(ans.FailedCalls)},
		{"failed calls by status", map[string]any{"kinds": []string{"problems"}, "filter": "not state == InCall and not state == Completed"}, lqSorted(ans.FailedCalls)},
		{"one-way", map[string]any{"kinds": []string{"one-way"}}, withReason(gen.ReasonOneWay)},
		{"slow-setup", map[string]any{"kinds": []string{"slow-setup"}}, withReason(gen.ReasonSlowSetup)},
		{"late-media", map[string]any{"kinds": []string{"late-media"}}, withReason(gen.ReasonLateMedia)},
		{"kinds OR-ed", map[string]any{"kinds": []string{"one-way", "late-media"}}, lqSorted(append(withReason(gen.ReasonOneWay), withReason(gen.ReasonLateMedia)...))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.want) == 0 {
				t.Fatal("the generator made no such dialog: the case proves nothing")
			}
			args := map[string]any{"limit": 7}
			for k, v := range tc.args {
				args[k] = v
			}
			rows, pages := lqPageAll(t, tools, "find_problems", args, sdk.DefaultLimits())
			if got := lqIDs(t, rows); !slices.Equal(got, tc.want) {
				t.Errorf("got %d %v\nwant %d %v", len(got), got, len(tc.want), tc.want)
			}
			for _, r := range rows {
				if len(r.Matched) == 0 || r.Matched[0].Clause == "" || r.Matched[0].Measured == "" {
					t.Errorf("%s: matched %+v, want the clauses it matched with their values", r.CallID, r.Matched)
				}
			}
			p := pages[0]
			if *p.Total != len(tc.want) || len(p.ByMethod) != 1 || p.ByMethod[0].Method != "INVITE" || p.ByMethod[0].Count != len(tc.want) {
				t.Errorf("total_matched %d by_method %+v, want %d INVITE", *p.Total, p.ByMethod, len(tc.want))
			}
		})
	}
}

// TestFindProblemsOnPublicCaptures: on captures whose only faults are
// signaling ones, the problems alias selects exactly the dialogs tshark
// shows ending in a final failure: a response of 300 or more that is not a
// 401/407 challenge, and no 2xx. b2bua-asterisk.pcapng's INVITEs are left
// out with a filter (one has a media fault truth cannot show).
func TestFindProblemsOnPublicCaptures(t *testing.T) {
	cases := []struct {
		capture string
		args    map[string]any
		min     int
	}{
		{"sip-488-codec-reject.pcapng", map[string]any{}, 1},
		{"sip-auth-failure.pcapng", map[string]any{}, 2},
		{"sip-routing-error.pcapng", map[string]any{"kinds": []string{"problems"}}, 10},
		{"b2bua-asterisk.pcapng", map[string]any{"filter": "not method == INVITE"}, 8},
	}
	for _, tc := range cases {
		t.Run(tc.capture, func(t *testing.T) {
			tr := testcap.LoadTruth[lqTruth](t, tc.capture)
			var want []string
			for _, d := range tr.SIP.Dialogs {
				if d.Requests["INVITE"] > 0 && tc.capture == "b2bua-asterisk.pcapng" {
					continue
				}
				failed := false
				for code, n := range d.Responses {
					if n > 0 && code >= "300" && code != "401" && code != "407" {
						failed = true
					}
				}
				if failed && !lqHas2xx(d) {
					want = append(want, d.CallID)
				}
			}
			if len(want) < tc.min {
				t.Fatalf("truth names %d failed dialogs, want at least %d: the case proves too little", len(want), tc.min)
			}
			rows, pages := lqPageAll(t, lqTools(t, lqPublic(t, tc.capture)), "find_problems", tc.args, sdk.DefaultLimits())
			if got := lqIDs(t, rows); !slices.Equal(got, lqSorted(want)) {
				t.Errorf("got %v, want %v", got, lqSorted(want))
			}
			if *pages[0].Total != len(want) {
				t.Errorf("total_matched %d, want %d", *pages[0].Total, len(want))
			}
		})
	}
}

func lqHas2xx(d lqTruthDialog) bool {
	for code, n := range d.Responses {
		if n > 0 && code[0] == '2' {
			return true
		}
	}
	return false
}

func TestFindProblemsRefusals(t *testing.T) {
	tools := lqTools(t, lqPublic(t, "sip-rtp-g711.pcap"))
	cases := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"unknown alias lists the aliases", map[string]any{"kinds": []string{"one-way", "reg-flood"}},
			[]string{"reg-flood", "problems", "slow-setup", "short-calls", "one-way", "nat-issues", "codec-asym", "ptime-asym", "payload-asym", "duration-asym", "late-media"}},
		{"bad filter", map[string]any{"filter": "pdd >"}, []string{"position 5"}},
		{"bad cursor", map[string]any{"cursor": "soon"}, []string{"invalid cursor"}},
		{"unknown field", map[string]any{"fields": []string{"verdict"}}, []string{"verdict", "call_id"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lqInvoke(t, tools, "find_problems", tc.args, sdk.DefaultLimits())
			if lqCode(err) != sdk.CodeInvalidParams {
				t.Fatalf("got %v, want -32602", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestFindProblemsRowsNameTheirClauses: each row names the alias clauses it
// matched with the values it measured. Asterisk_ZFONE_XLITE.pcap: the call
// whose stream 0xbee0f2ed lost 64.3 % (tshark: 369 lost of 574) and whose
// directions lasted 15.8 s and 11.5 s, and a SUBSCRIBE answered 404.
func TestFindProblemsRowsNameTheirClauses(t *testing.T) {
	tools := lqTools(t, lqPublic(t, "Asterisk_ZFONE_XLITE.pcap"))
	type m struct{ alias, clause, measured string }
	cases := []struct {
		name   string
		args   map[string]any
		callID string
		want   []m
	}{
		{"loss and asymmetry under problems", map[string]any{}, "ZDYzOWVlNjEwM2NjZTBjNzliNmM1ZTNiOGZjNWFhN2E.", []m{
			{"problems", "rtp.loss > 5", "rtp.loss=64.286"},
			{"problems", "duration_asymmetry == true", "duration_asymmetry=true"},
		}},
		{"a failure under problems", map[string]any{}, "OGY5ZTk4MzFkYzZhM2FlYjNjNTA3ZTM2ZWY0YzI1ODA.", []m{
			{"problems", "state == Failed", "state=Failed"},
		}},
		{"only the kinds asked", map[string]any{"kinds": []string{"slow-setup", "duration-asym"}}, "ZDYzOWVlNjEwM2NjZTBjNzliNmM1ZTNiOGZjNWFhN2E.", []m{
			{"duration-asym", "duration_asymmetry == true", "duration_asymmetry=true"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows, _ := lqPageAll(t, tools, "find_problems", tc.args, sdk.DefaultLimits())
			var got []m
			found := false
			for _, r := range rows {
				if r.CallID != tc.callID {
					continue
				}
				found = true
				for _, x := range r.Matched {
					got = append(got, m{x.Alias, x.Clause, x.Measured})
				}
			}
			if !found || !slices.Equal(got, tc.want) {
				t.Errorf("%s: got %v (found %v), want %v", tc.callID, got, found, tc.want)
			}
		})
	}
}

// TestFindProblemsCursorHoldsToItsKinds: a cursor of the default listing
// (kinds absent) continues with kinds ["problems"], the same listing
// spelled out; with other kinds or another filter it is refused naming
// what it was bound to, never read as a position in another row set.
func TestFindProblemsCursorHoldsToItsKinds(t *testing.T) {
	tools := lqTools(t, lqPublic(t, "sip-routing-error.pcapng"))
	var first lqPage
	lqCall(t, tools, "find_problems", map[string]any{"limit": 1}, &first)
	if first.NextCursor == nil {
		t.Fatal("no next_cursor on a page of 1")
	}
	var next lqPage
	lqCall(t, tools, "find_problems", map[string]any{"limit": 1, "kinds": []string{"problems"}, "cursor": *first.NextCursor}, &next)
	if next.Returned != 1 || lqIDs(t, next.Dialogs)[0] == lqIDs(t, first.Dialogs)[0] {
		t.Errorf("kinds [problems] after the default page: returned %d (%v after %v), want the next row", next.Returned, lqIDs(t, next.Dialogs), lqIDs(t, first.Dialogs))
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"other kinds", map[string]any{"kinds": []string{"one-way"}, "cursor": *first.NextCursor},
			`cursor belongs to find_problems with kinds "problems"; this call asks kinds "one-way"`},
		{"another filter", map[string]any{"filter": "method == INVITE", "cursor": *first.NextCursor},
			`cursor belongs to find_problems with filter absent; this call asks filter "method == INVITE"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lqInvoke(t, tools, "find_problems", tc.args, sdk.DefaultLimits())
			if lqCode(err) != sdk.CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want -32602 containing %q", err, tc.want)
			}
		})
	}
}
