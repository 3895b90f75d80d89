package core

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/core/live"
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
			tr := testcap.LoadTruth[truth](t, name)
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
			if v, ok := m["ami_cleartext"].([]any); !ok || len(v) != 0 {
				t.Errorf("ami_cleartext: got %#v, want [] (looked, none)", m["ami_cleartext"])
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

// TestCaptureStatusReportsAMICleartext loads core/ami's fixture (two AMI
// sessions with a secret on 5038, one MD5 login on 15038, read by hand with
// tshark): four sightings, no username, no secret.
func TestCaptureStatusReportsAMICleartext(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{"../../core/ami/testdata/ami-cleartext.pcap"}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	m := callStatus(t, c)
	b, err := json.Marshal(m["ami_cleartext"])
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"count":2,"default_port":5038,"dst":"198.51.100.5","dst_port":5038,"observation":"banner","secret_present":false,"src":"192.0.2.10"},` +
		`{"count":1,"default_port":5038,"dst":"198.51.100.5","dst_port":15038,"observation":"banner","secret_present":false,"src":"192.0.2.10"},` +
		`{"count":2,"default_port":5038,"dst":"198.51.100.5","dst_port":5038,"observation":"cleartext-login","secret_present":true,"src":"192.0.2.10"},` +
		`{"count":1,"default_port":5038,"dst":"198.51.100.5","dst_port":15038,"observation":"cleartext-login","secret_present":false,"src":"192.0.2.10"}]`
	if string(b) != want {
		t.Errorf("ami_cleartext:\ngot  %s\nwant %s", b, want)
	}
	if s := string(b); strings.Contains(s, "admin") || strings.Contains(s, "hunter2") {
		t.Errorf("ami_cleartext carries a username or secret: %s", s)
	}
	if _, ok := m["capture_quality"].(map[string]any)["kernel_dropped_packets"]; ok {
		t.Errorf("kernel_dropped_packets present for a file: not measured is absent")
	}
}

// TestCaptureStatusReportsKernelDrops captures live on the loopback device
// (needs CAP_NET_RAW; skipped without): kernel_dropped_packets is the live
// source's own kernel counter, present because it was measured.
func TestCaptureStatusReportsKernelDrops(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lc, err := live.Start(ctx, live.Options{Device: "lo"}, c)
	if err != nil {
		t.Skipf("no live capture here: %v", err)
	}
	defer lc.Stop()
	env := sdk.NewEnv(sdk.EnvOptions{Services: []any{c, []*live.Capture{lc}}})
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
		var m struct {
			Quality struct {
				Kernel    *uint64 `json:"kernel_dropped_packets"`
				Interface *uint64 `json:"interface_dropped_packets"`
			} `json:"capture_quality"`
		}
		if err := json.Unmarshal([]byte(r.Blocks[0]), &m); err != nil {
			t.Fatal(err)
		}
		st := lc.Stats()
		if !st.KernelStats {
			t.Skip("the kernel's counters are not readable here")
		}
		if m.Quality.Kernel == nil || *m.Quality.Kernel > st.KernelDrops {
			t.Errorf("kernel_dropped_packets: got %v, want present and at most %d (read after)", m.Quality.Kernel, st.KernelDrops)
		}
		if m.Quality.Interface != nil {
			t.Errorf("interface_dropped_packets: got %d, want absent (not measured)", *m.Quality.Interface)
		}
	}
}

// TestCaptureStatusCountsFollowTheRows: capture_status counts from the
// store's tally by state; every count equals the one read off the rows
// (dialog_count, active_dialog_count: not Completed, Cancelled, Failed,
// Redirected, Expired or Terminated; active_call_count: InCall) on captures
// with calls in progress, failed, cancelled and registered.
func TestCaptureStatusCountsFollowTheRows(t *testing.T) {
	for _, name := range []string{"sip-rtp-g711.pcap", "sipp-branch-scenario.pcapng", "b2bua-asterisk.pcapng", "sip-routing-error.pcapng", "SIP_CALL_RTP_G711"} {
		t.Run(name, func(t *testing.T) {
			c := rptLoad(t, testcap.Public(name))
			var dialogs, active, inCall int
			for _, s := range c.Dialogs().Summaries(dialog.ByCreated) {
				dialogs++
				if !finalStates[s.State] {
					active++
				}
				if s.State == dialog.InCall.String() {
					inCall++
				}
			}
			m := callStatus(t, c)
			for _, tc := range []struct {
				field string
				want  int
			}{{"dialog_count", dialogs}, {"active_dialog_count", active}, {"active_call_count", inCall}} {
				if got := m[tc.field]; got != float64(tc.want) {
					t.Errorf("%s: got %v, want %d", tc.field, got, tc.want)
				}
			}
			if dialogs == 0 {
				t.Error("no dialogs: the comparison proves nothing")
			}
		})
	}
}

// TestCaptureStatusReportsHEPRefusals: datagrams a HEP listener refuses
// appear in capture_quality.hep_refused by reason, and the capture is
// degraded because data a sender meant to deliver was lost.
func TestCaptureStatusReportsHEPRefusals(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	defer c.Close()
	l, err := c.StartHEP(context.Background(), heplisten.Config{UDP: "127.0.0.1:0", GlobalRate: 3})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("udp", l.UDPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const sent = 20
	for i := 0; i < sent; i++ {
		if _, err := conn.Write([]byte("HEP3\x00\x06")); err != nil { // a bare HEP3 header: admitted or rate-refused
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := c.Status()
		if len(st.HEP.Listeners) == 1 && st.HEP.Listeners[0].Received == sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listener never received %d datagrams: %+v", sent, st.HEP.Listeners)
		}
		time.Sleep(10 * time.Millisecond)
	}
	m := callStatus(t, c)
	q := m["capture_quality"].(map[string]any)
	refused, _ := q["hep_refused"].(map[string]any)
	// 3 tokens at once, then 3 a second: at least 10 of 20 refused
	// unless reading the datagrams took over 2 s.
	if n, _ := refused["global_rate"].(float64); n < 10 {
		t.Errorf("hep_refused %v: want global_rate >= 10", refused)
	}
	if q["degraded"] != true {
		t.Errorf("degraded %v with HEP data lost", q["degraded"])
	}
}
