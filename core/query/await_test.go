package query

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestAwait(t *testing.T) {
	never := func() bool { return false }
	always := func() bool { return true }
	cases := []struct {
		name      string
		filter    string
		timeout   time.Duration
		exhausted func() bool
		want      string
		matched   int
		polls     int // exact, 0 = at least 2
		scans     int
	}{
		{name: "existing match", filter: "method == INVITE", timeout: time.Minute, exhausted: never,
			want: StopConditionMet, matched: 12, polls: 1, scans: 1},
		{name: "look once", filter: "method == SUBSCRIBE", timeout: 0, exhausted: never,
			want: StopDeadline, polls: 1, scans: 1},
		{name: "exhausted source stops at once", filter: "method == SUBSCRIBE", timeout: time.Minute, exhausted: always,
			want: StopSourceExhausted, polls: 1, scans: 1},
		{name: "match wins over exhaustion", filter: "state == Registered", timeout: time.Minute, exhausted: always,
			want: StopConditionMet, matched: 2, polls: 1, scans: 1},
		// The store never moves: every poll after the first compares two
		// integers and skips the scan.
		{name: "deadline on an unchanged store", filter: "method == SUBSCRIBE", timeout: 350 * time.Millisecond, exhausted: never,
			want: StopDeadline, scans: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := carrierQuerier(t)
			f, err := q.Compile(tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			res, err := q.Await(context.Background(), AwaitOptions{Filter: f, Timeout: tc.timeout,
				PollInterval: MinPollInterval, Limit: 5, Exhausted: tc.exhausted})
			if err != nil {
				t.Fatal(err)
			}
			if res.StoppedBecause != tc.want {
				t.Errorf("stopped because %q, want %q", res.StoppedBecause, tc.want)
			}
			if res.Page.TotalMatched != tc.matched || len(res.Page.Rows) != min(tc.matched, 5) || res.Page.More != (tc.matched > 5) {
				t.Errorf("matched %d, rows %d, more %v; want %d, %d, %v", res.Page.TotalMatched, len(res.Page.Rows), res.Page.More,
					tc.matched, min(tc.matched, 5), tc.matched > 5)
			}
			if tc.polls > 0 && res.Polls != tc.polls {
				t.Errorf("polls %d, want %d", res.Polls, tc.polls)
			}
			if tc.polls == 0 && res.Polls < 2 {
				t.Errorf("polls %d, want at least 2", res.Polls)
			}
			if res.Scans != tc.scans || res.Scans > res.Polls {
				t.Errorf("scans %d (polls %d), want %d", res.Scans, res.Polls, tc.scans)
			}
		})
	}
}

// TestAwaitSeesANewDialog: a dialog arriving during the wait moves the
// dialog revision, the next poll scans and the condition is met.
func TestAwaitSeesANewDialog(t *testing.T) {
	b := newGrpBuilder(t)
	b.add(call{id: "r1", register: true})
	q := b.querier()
	f, err := q.Compile(`call_id == "late-call"`)
	if err != nil {
		t.Fatal(err)
	}
	var polled atomic.Int32
	done := make(chan AwaitResult, 1)
	go func() {
		res, err := q.Await(context.Background(), AwaitOptions{Filter: f, Timeout: time.Minute, PollInterval: MinPollInterval,
			Exhausted: func() bool { polled.Add(1); return false }})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	// The second poll has begun: the first scan (no match) is done.
	for polled.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	b.add(call{id: "late-call", at: time.Second, final: 200, setup: time.Second})
	res := <-done
	if res.StoppedBecause != StopConditionMet || res.Page.TotalMatched != 1 || res.Page.Rows[0].CallID != "late-call" {
		t.Fatalf("got %q, %d matches, want condition_met on late-call", res.StoppedBecause, res.Page.TotalMatched)
	}
	if res.Scans < 2 || res.Scans > res.Polls {
		t.Errorf("scans %d polls %d: want a second scan after the store moved, scans <= polls", res.Scans, res.Polls)
	}
}

// TestAwaitStreamRevision: a moved stream-store revision alone forces a
// scan (a media field may have changed).
func TestAwaitStreamRevision(t *testing.T) {
	q := carrierQuerier(t)
	f, _ := q.Compile("method == SUBSCRIBE")
	var rev atomic.Uint64
	res, err := q.Await(context.Background(), AwaitOptions{Filter: f, Timeout: 250 * time.Millisecond, PollInterval: MinPollInterval,
		StreamRevision: func() uint64 { return rev.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.StoppedBecause != StopDeadline || res.Scans != res.Polls || res.Polls < 2 {
		t.Errorf("got %q with %d scans over %d polls, want deadline with a scan per poll", res.StoppedBecause, res.Scans, res.Polls)
	}
}

func TestAwaitCancellation(t *testing.T) {
	q := carrierQuerier(t)
	f, _ := q.Compile("method == SUBSCRIBE")
	ctx, cancel := context.WithCancel(context.Background())
	var polls atomic.Int32
	go func() {
		for polls.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := q.Await(ctx, AwaitOptions{Filter: f, Timeout: time.Hour, PollInterval: MinPollInterval,
		Exhausted: func() bool { polls.Add(1); return false }})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestAwaitPollFloor(t *testing.T) {
	q := carrierQuerier(t)
	f, _ := q.Compile("method == SUBSCRIBE")
	// A zero interval is raised to the floor: a 250 ms wait polls at most
	// a handful of times, never thousands.
	res, err := q.Await(context.Background(), AwaitOptions{Filter: f, Timeout: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Polls > 5 {
		t.Errorf("%d polls in 250 ms with a zero interval, want at most 5 (floor %v)", res.Polls, MinPollInterval)
	}
}
