package core

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

type truth struct {
	Frames int `json:"frames"`
	SIP    struct {
		CallIDs struct {
			Count int `json:"count"`
		} `json:"call_ids"`
	} `json:"sip"`
}

func loadTruth(t *testing.T, name string) truth {
	t.Helper()
	b, err := os.ReadFile(testcap.Truth(name))
	if err != nil {
		t.Skipf("no truth for %s: %v", name, err)
	}
	var tr truth
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// callStatus provisions the bundle on a capture and calls capture_status
// through the tool's public path.
func callStatus(t *testing.T, c *engine.Capture) map[string]any {
	t.Helper()
	env := sdk.NewEnv(sdk.EnvOptions{Services: []any{c}})
	tools, err := Bundle{}.Provision(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name != "capture_status" {
			continue
		}
		r, err := tl.Invoke(context.Background(), json.RawMessage(`{}`), sdk.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(r.Blocks[0]), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatal("capture_status not provisioned")
	return nil
}

func TestCaptureStatusAgreesWithTshark(t *testing.T) {
	for _, name := range []string{"sip-rtp-g711.pcap", "sip-register.pcap", "sip-auth-failure.pcapng", "sipp-branch-scenario.pcapng"} {
		t.Run(name, func(t *testing.T) {
			tr := loadTruth(t, name)
			c := engine.New(engine.Config{Node: "test-node"}, nil)
			if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); err != nil {
				t.Fatal(err)
			}
			c.Wait()
			m := callStatus(t, c)
			for _, tc := range []struct {
				field string
				got   any
				want  any
			}{
				{"source", m["source"], "file"},
				{"name", m["name"], name},
				{"dialog_count", m["dialog_count"], float64(tr.SIP.CallIDs.Count)},
				{"source_exhausted", m["source_exhausted"], true},
				{"source_stopped_early", m["source_stopped_early"], false},
				{"unsaved", m["unsaved"], false},
				{"load.packets", m["load"].(map[string]any)["packets"], float64(tr.Frames)},
				{"load.done", m["load"].(map[string]any)["done"], true},
				{"load.filename", m["load"].(map[string]any)["filename"], name},
				{"capture_identity.node", m["capture_identity"].(map[string]any)["node"], "test-node"},
				{"schema_version", m["schema_version"], float64(2)},
			} {
				if tc.got != tc.want {
					t.Errorf("%s: got %v, want %v", tc.field, tc.got, tc.want)
				}
			}
			if v, ok := m["ami_cleartext"]; !ok || v != nil {
				t.Errorf("ami_cleartext: got %v (present %v), want present and null (not looked)", v, ok)
			}
			if m["active_call_count"].(float64) > m["active_dialog_count"].(float64) ||
				m["active_dialog_count"].(float64) > m["dialog_count"].(float64) {
				t.Errorf("counts inconsistent: %v", m)
			}
		})
	}
}

func TestCaptureStatusWithoutSource(t *testing.T) {
	m := callStatus(t, engine.New(engine.Config{}, nil))
	for _, tc := range []struct {
		field string
		got   any
		want  any
	}{
		{"source", m["source"], "unknown"},
		{"source_exhausted", m["source_exhausted"], false},
		{"dialog_count", m["dialog_count"], float64(0)},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.field, tc.got, tc.want)
		}
	}
	for _, absent := range []string{"load", "writing_to", "unanalysed_sip_messages"} {
		if _, ok := m[absent]; ok {
			t.Errorf("%s present; unmeasured values are omitted", absent)
		}
	}
}

// TestCaptureStatusNeverClaimsAWholeReadMidLoad polls capture_status while
// the largest public capture loads: until the load is done, the answer says
// source_exhausted false and load.done false.
func TestCaptureStatusNeverClaimsAWholeReadMidLoad(t *testing.T) {
	name := "sipp-branch-scenario.pcapng"
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		m := callStatus(t, c)
		load := m["load"].(map[string]any)
		done, exhausted := load["done"].(bool), m["source_exhausted"].(bool)
		if exhausted && !done {
			t.Fatalf("source_exhausted true while the load runs: %v", m)
		}
		if done {
			if !exhausted {
				t.Errorf("load done but source_exhausted false: %v", m)
			}
			return
		}
		if !strings.Contains(m["source"].(string), "file") {
			t.Fatalf("source %v", m["source"])
		}
	}
	t.Fatal("load did not finish")
}
