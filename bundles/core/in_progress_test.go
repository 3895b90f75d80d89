package core

import (
	"context"
	"fmt"
	"testing"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/sdk"
)

// TestRowsOfACallInProgressAtCaptureEnd: the MCP rows (list_dialogs, and
// find_problems through the same page builder; get_dialog) agree with the batch
// document (core/report TestInCallAtCaptureEnd) on a call still in progress
// when the capture ended. sip-rtp-g711.pcap: 1-1968@10.0.2.20 was answered
// at 1480171988.290862 and the capture's last packet (RTP) is at
// 1480171996.569179 (tshark), so ended false and 8278 ms, while
// duration_sec keeps its meaning (first to last SIP message: 0.004 s) and
// timing.duration_ms stays absent. 1-1966@10.0.2.20 ended with a BYE: no
// ended, no duration_to_capture_end_ms. Before this, the rows carried
// neither field.
func TestRowsOfACallInProgressAtCaptureEnd(t *testing.T) {
	tools := lqTools(t, lqPublic(t, "sip-rtp-g711.pcap"))
	type row struct {
		CallID      string  `json:"call_id"`
		DurationSec float64 `json:"duration_sec"`
		Ended       *bool   `json:"ended"`
		ToEndMs     *int64  `json:"duration_to_capture_end_ms"`
		Timing      struct {
			DurationMs *int64 `json:"duration_ms"`
		} `json:"timing"`
	}
	show := func(r row) string {
		v := fmt.Sprintf("duration_sec %.3f", r.DurationSec)
		if r.Ended != nil {
			v += fmt.Sprintf(" ended %v", *r.Ended)
		}
		if r.ToEndMs != nil {
			v += fmt.Sprintf(" to_end %d ms", *r.ToEndMs)
		}
		if r.Timing.DurationMs != nil {
			v += fmt.Sprintf(" duration_ms %d", *r.Timing.DurationMs)
		}
		return v
	}
	want := map[string]string{
		"1-1966@10.0.2.20": "duration_sec 8.504 duration_ms 8499",
		"1-1968@10.0.2.20": "duration_sec 0.004 ended false to_end 8278 ms",
	}
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
	}{
		{"list_dialogs", "list_dialogs", map[string]any{}},
		{"list_dialogs page of 1", "list_dialogs", map[string]any{"limit": 1, "cursor": ""}},
		{"list_dialogs filtered", "list_dialogs", map[string]any{"filter": "method == INVITE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			args := tc.args
			if _, paged := args["cursor"]; paged {
				delete(args, "cursor")
				for {
					var page struct {
						Dialogs    []row   `json:"dialogs"`
						NextCursor *string `json:"next_cursor"`
					}
					lqCall(t, tools, tc.tool, args, &page)
					for _, r := range page.Dialogs {
						got[r.CallID] = show(r)
					}
					if page.NextCursor == nil {
						break
					}
					args = map[string]any{"limit": 1, "cursor": *page.NextCursor}
				}
			} else {
				var page struct {
					Dialogs []row `json:"dialogs"`
				}
				lqCall(t, tools, tc.tool, args, &page)
				for _, r := range page.Dialogs {
					got[r.CallID] = show(r)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	for id, w := range want {
		t.Run("get_dialog "+id, func(t *testing.T) {
			var out struct {
				Dialog row `json:"dialog"`
			}
			lqCall(t, tools, "get_dialog", map[string]any{"call_id": id}, &out)
			if got := show(out.Dialog); got != w {
				t.Errorf("got %s, want %s", got, w)
			}
		})
	}
}

// TestFindProblemsRowOfACallInProgress: find_problems' rows are completed
// like list_dialogs'. sip-rtp-g711.pcap has no problem at the default
// thresholds; at a 0.001 ms jitter threshold both calls' streams are over
// it (their jitter_ms end at 0.005 and 0.006), so "problems" lists both, and
// 1-1968@10.0.2.20 carries ended false and 8278 ms.
func TestFindProblemsRowOfACallInProgress(t *testing.T) {
	th := filter.DefaultThresholds()
	th.JitterMs = 0.001
	tools, err := Bundle{}.Provision(context.Background(), sdk.NewEnv(sdk.EnvOptions{Services: []any{lqPublic(t, "sip-rtp-g711.pcap"), th}}))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]sdk.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	var page struct {
		Dialogs []struct {
			CallID  string `json:"call_id"`
			Ended   *bool  `json:"ended"`
			ToEndMs *int64 `json:"duration_to_capture_end_ms"`
		} `json:"dialogs"`
	}
	lqCall(t, byName, "find_problems", map[string]any{"kinds": []string{"problems"}}, &page)
	got := map[string]string{}
	for _, r := range page.Dialogs {
		v := "absent"
		if r.Ended != nil && r.ToEndMs != nil {
			v = fmt.Sprintf("ended %v %d ms", *r.Ended, *r.ToEndMs)
		}
		got[r.CallID] = v
	}
	want := map[string]string{"1-1966@10.0.2.20": "absent", "1-1968@10.0.2.20": "ended false 8278 ms"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
