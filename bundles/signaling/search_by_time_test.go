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

type sgTimePage struct {
	Dialogs []struct {
		CallID          string    `json:"call_id"`
		CreatedAt       time.Time `json:"created_at"`
		State           string    `json:"state"`
		FinalStatusCode int       `json:"final_status_code"`
	} `json:"dialogs"`
	Returned        int     `json:"returned"`
	TotalMatched    *int    `json:"total_matched"`
	Truncated       *bool   `json:"truncated"`
	NextCursor      *string `json:"next_cursor"`
	SourceExhausted bool    `json:"source_exhausted"`
}

// TestSearchByTimeWindowsOnTheGeneratedCapture: the dialogs in each window
// are exactly the generator's dialogs whose first message falls in
// [start, end), paged by 3 without loss or repetition.
func TestSearchByTimeWindowsOnTheGeneratedCapture(t *testing.T) {
	p, ans := sgGenerated(t)
	c := sgLoad(t, p)
	t0 := ans.Dialogs[0].FirstTime
	cases := []struct {
		name       string
		start, end time.Time
		filter     string
	}{
		{"first two seconds", t0, t0.Add(2 * time.Second), ""},
		{"start on a dialog's first message is inclusive", ans.Dialogs[3].FirstTime, ans.Dialogs[9].FirstTime, ""},
		{"open end", ans.Dialogs[10].FirstTime, time.Time{}, ""},
		{"with a filter", t0, t0.Add(time.Hour), "method == REGISTER"},
		{"before the capture", t0.Add(-time.Hour), t0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]bool{}
			for _, d := range ans.Dialogs {
				in := !d.FirstTime.Before(tc.start) && (tc.end.IsZero() || d.FirstTime.Before(tc.end))
				if in && (tc.filter == "" || d.Method == "REGISTER") {
					want[d.CallID] = true
				}
			}
			args := map[string]any{"start": tc.start.Format(time.RFC3339Nano), "limit": 3}
			if !tc.end.IsZero() {
				args["end"] = tc.end.Format(time.RFC3339Nano)
			}
			if tc.filter != "" {
				args["filter"] = tc.filter
			}
			got := map[string]bool{}
			var last time.Time
			for page := 0; ; page++ {
				var pg sgTimePage
				sgCall(t, c, "search_by_time", args, &pg)
				if pg.TotalMatched == nil || *pg.TotalMatched != len(want) {
					t.Fatalf("page %d: total_matched %v, want %d", page, pg.TotalMatched, len(want))
				}
				for _, d := range pg.Dialogs {
					if got[d.CallID] {
						t.Fatalf("%s served twice", d.CallID)
					}
					if d.CreatedAt.Before(last) {
						t.Errorf("%s out of created_at order", d.CallID)
					}
					got[d.CallID], last = true, d.CreatedAt
				}
				if pg.Returned != len(pg.Dialogs) {
					t.Errorf("returned %d for %d rows", pg.Returned, len(pg.Dialogs))
				}
				if pg.NextCursor == nil {
					if pg.Truncated == nil || *pg.Truncated {
						t.Errorf("last page: truncated %v, want false over a source read whole", pg.Truncated)
					}
					break
				}
				args["cursor"] = *pg.NextCursor
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("got %d dialogs %v, want %d %v", len(got), got, len(want), want)
			}
		})
	}
}

// TestSearchByTimePagesSippByOne pages sipp-branch-scenario.pcapng's 1334
// dialogs (1200 of them share their second with the previous one) seven at
// a time and by one through a busy second: every dialog exactly once.
func TestSearchByTimePagesSippByOne(t *testing.T) {
	c := sgLoad(t, testcap.Public("sipp-branch-scenario.pcapng"))
	for _, limit := range []int{1, 7, 1000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			args := map[string]any{"start": "2000-01-01T00:00:00Z", "limit": limit, "fields": []string{"state"}}
			seen := map[string]bool{}
			pages := 0
			for {
				var pg sgTimePage
				r := sgCall(t, c, "search_by_time", args, &pg)
				if pages == 0 && strings.Contains(r.Blocks[0], "created_at") {
					t.Errorf("fields [state] kept created_at: %.200s", r.Blocks[0])
				}
				for _, d := range pg.Dialogs {
					if seen[d.CallID] {
						t.Fatalf("%s served twice", d.CallID)
					}
					seen[d.CallID] = true
				}
				pages++
				if pg.NextCursor == nil {
					break
				}
				args["cursor"] = *pg.NextCursor
				if limit == 1 && pages == 60 {
					break // the first minute, by one
				}
			}
			want := 1334
			if limit == 1 {
				want = 60
			}
			if len(seen) != want {
				t.Errorf("got %d distinct dialogs, want %d", len(seen), want)
			}
		})
	}
}

func TestSearchByTimeRefusals(t *testing.T) {
	c := sgLoad(t, testcap.Public("sip-rtp-g711.pcap"))
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing start", map[string]any{}, "start"},
		{"bad start", map[string]any{"start": "yesterday"}, "RFC 3339"},
		{"bad end", map[string]any{"start": "2020-01-01T00:00:00Z", "end": "1577836800"}, "RFC 3339"},
		{"end equal to start", map[string]any{"start": "2020-01-01T00:00:00Z", "end": "2020-01-01T00:00:00Z"}, "after start"},
		{"end before start", map[string]any{"start": "2020-01-01T00:00:00Z", "end": "2019-12-31T23:59:59Z"}, "after start"},
		{"end before start across zones", map[string]any{"start": "2020-01-01T01:00:00+02:00", "end": "2019-12-31T23:00:00Z"}, "after start"},
		{"bad cursor", map[string]any{"start": "2020-01-01T00:00:00Z", "cursor": "page-2"}, "cursor"},
		{"unknown field", map[string]any{"start": "2020-01-01T00:00:00Z", "fields": []string{"from_user"}}, "final_status_code"},
		{"bad filter", map[string]any{"start": "2020-01-01T00:00:00Z", "filter": "pdd >"}, "position"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sgInvoke(t, c, "search_by_time", tc.args, sdk.Limits{})
			if sgCode(err) != sdk.CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want -32602 mentioning %q", err, tc.want)
			}
		})
	}
	// An end one nanosecond after start is a window, however empty.
	r, err := sgInvoke(t, c, "search_by_time", map[string]any{"start": "2020-01-01T00:00:00Z", "end": "2020-01-01T00:00:00.000000001Z"}, sdk.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var pg sgTimePage
	_ = json.Unmarshal([]byte(r.Blocks[0]), &pg)
	if pg.TotalMatched == nil || *pg.TotalMatched != 0 || pg.Dialogs == nil {
		t.Errorf("empty window: %s", r.Blocks[0])
	}
}
