package signaling

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/sdk"
)

// settingsTool provisions the bundle with the host's services and returns
// one tool.
func settingsTool(t *testing.T, services []any, name string) sdk.Tool {
	t.Helper()
	tools, err := Bundle{}.Provision(context.Background(), sdk.NewEnv(sdk.EnvOptions{Services: services}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("%s not provisioned", name)
	return sdk.Tool{}
}

// TestCorrelationSettingsReachTheTools: the host's correlate.Config (the
// --leg-correlation-window and --x-call-id-header settings) decides which
// header ties legs and how far apart a timing guess may start.
func TestCorrelationSettingsReachTheTools(t *testing.T) {
	c := crCapture(t,
		crafted{callID: "a-leg", a: "192.0.2.1:5060", b: "192.0.2.10:5060"},
		crafted{callID: "c-leg", at: 60 * time.Millisecond, a: "192.0.2.10:5060", b: "192.0.2.30:5060", extra: []string{"X-Call-ID: a-leg"}},
		crafted{callID: "d-leg", at: 500 * time.Millisecond, a: "192.0.2.10:5060", b: "192.0.2.50:5060", extra: []string{"X-Orig-Call-ID: a-leg"}},
		crafted{callID: "bystander", at: 1900 * time.Millisecond, a: "192.0.2.10:5060", b: "192.0.2.40:5060"},
	)
	for _, tc := range []struct {
		name     string
		services []any
		want     string
	}{
		{"defaults: X-Call-ID, 2 s", []any{c},
			"c-leg:x_call_id d-leg:timing_heuristic bystander:timing_heuristic"},
		{"the run's header and a 100 ms window", []any{c, correlate.Config{Window: 100 * time.Millisecond, XCallIDHeaders: []string{"X-Orig-Call-ID"}}},
			"d-leg:x_call_id c-leg:timing_heuristic"},
		{"both headers, 1 s", []any{c, correlate.Config{Window: time.Second, XCallIDHeaders: []string{"X-Call-ID", "X-Orig-Call-ID"}}},
			"c-leg:x_call_id d-leg:x_call_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := settingsTool(t, tc.services, "find_correlated").Invoke(context.Background(), json.RawMessage(`{"call_id":"a-leg"}`), sdk.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			var got FindCorrelated
			if err := json.Unmarshal([]byte(r.Blocks[0]), &got); err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, l := range got.Legs {
				parts = append(parts, l.CallID+":"+l.Strategy)
			}
			if g := strings.Join(parts, " "); g != tc.want {
				t.Errorf("got %q, want %q", g, tc.want)
			}
		})
	}
}

// TestThresholdsReachTheQuerier: validate_filter compiles aliases with the
// host's filter.Thresholds (the crafted call talks for 2 s, from its 200 at
// 1 s to its BYE at 3 s: a short call under the default 3 s, not under 1.5 s).
func TestThresholdsReachTheQuerier(t *testing.T) {
	c := crCapture(t, crafted{callID: "x", a: "192.0.2.1:5060", b: "192.0.2.10:5060"})
	th := filter.DefaultThresholds()
	th.ShortCallSeconds = 1.5
	for _, tc := range []struct {
		name     string
		services []any
		want     int
	}{
		{"defaults", []any{c}, 1},
		{"short-call threshold 1.5 s", []any{c, th}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := settingsTool(t, tc.services, "validate_filter").Invoke(context.Background(), json.RawMessage(`{"expr":"short-calls"}`), sdk.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				TotalMatched *int `json:"total_matched"`
			}
			if err := json.Unmarshal([]byte(r.Blocks[0]), &got); err != nil || got.TotalMatched == nil || *got.TotalMatched != tc.want {
				t.Errorf("got %s, want total_matched %d", r.Blocks[0], tc.want)
			}
		})
	}
}
