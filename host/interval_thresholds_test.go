package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestBatchIntervalVerdictsFollowTheRunsThresholds: the engine's stream
// store judges quality intervals with the run's --jitter-threshold (and
// --loss-threshold), as the high_jitter finding does. SIP_CALL_RTP_G711,
// 200.57.7.204:8000: its last interval ends at jitter_ms 3.339, degraded
// at --jitter-threshold 3, acceptable at the default 50 (before, 50 always).
func TestBatchIntervalVerdictsFollowTheRunsThresholds(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"default", nil, "acceptable acceptable acceptable acceptable acceptable acceptable"},
		{"jitter 3", []string{"--jitter-threshold", "3"}, "acceptable acceptable acceptable acceptable acceptable degraded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, out, errb := runBatchAsync(context.Background(), append([]string{"-N", "-I", testcap.Public("SIP_CALL_RTP_G711"), "--json-run"}, tc.args...)...)
			if code := exitOf(t, done, errb); code != exitOK {
				t.Fatalf("exit %d, want 0: %s", code, errb.String())
			}
			var doc struct {
				Streams []struct {
					Src       string `json:"src"`
					Intervals []struct {
						Verdict string `json:"verdict"`
					} `json:"quality_intervals"`
				} `json:"streams"`
			}
			if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
				t.Fatalf("decoding --json-run: %v", err)
			}
			var got []string
			for _, s := range doc.Streams {
				if s.Src == "200.57.7.204:8000" {
					for _, iv := range s.Intervals {
						got = append(got, iv.Verdict)
					}
				}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("got %s, want %s", g, tc.want)
			}
		})
	}
}
