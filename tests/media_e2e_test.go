package tests

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/testcap"
)

// The media bundle driven over stdio through the built binary on
// SIP_CALL_RTP_G711, with --one-way-delay and only capture_status and the
// media bundle selected. The values are the ones the bundle's unit tests
// check against tshark (bundles/media): three never-named orphans (the
// 200.57.7.199:4800 legs and MGCP's 0x00002e3d), call 12013223@200.57.7.195
// with its two PCMA streams, its endpoints named by frames 1 and 498.
func TestMediaE2E(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	s := sigSession(t, ctx, "-I", testcap.Public("SIP_CALL_RTP_G711"), "--one-way-delay", "40", "--mcp-tools", "capture_status,media",
		"--retain-audio", "--mcp-file-root", root)
	defer s.close()
	waitLoaded(t, ctx, s)

	names, err := s.tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if want := []string{"capture_status", "explain_attribution", "export_audio", "media_diagnostics", "reconcile_orphans"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}

	t.Run("reconcile_orphans", func(t *testing.T) {
		var got struct {
			Orphans []struct {
				SSRC, Src, Dst, Reason, Note string
				RelayWasConsulted            bool `json:"relay_was_consulted"`
			} `json:"orphans"`
			TotalOrphans      int  `json:"total_orphans"`
			RelayWasConsulted bool `json:"relay_was_consulted"`
			Truncated         *bool
		}
		sigCall(t, ctx, s, "reconcile_orphans", map[string]any{}, &got)
		var ssrcs []string
		for _, o := range got.Orphans {
			ssrcs = append(ssrcs, o.SSRC+" "+o.Src)
			if o.Reason != "never-named" || o.RelayWasConsulted || !strings.Contains(o.Note, "nobody asked") {
				t.Errorf("orphan %+v", o)
			}
		}
		slices.Sort(ssrcs)
		want := []string{"0x00002e3d 200.57.7.202:30000", "0x58f33dea 200.57.7.199:4800", "0xd2bd4e3e 200.57.7.196:40378"}
		if !slices.Equal(ssrcs, want) || got.TotalOrphans != 3 || got.RelayWasConsulted {
			t.Errorf("orphans %v total %d, want %v", ssrcs, got.TotalOrphans, want)
		}
	})

	t.Run("media_diagnostics", func(t *testing.T) {
		var got struct {
			Applicable bool
			Streams    []struct {
				SSRC  string
				QoS   struct{ DSCP *int }
				Delay struct {
					Source   string
					Assumed  bool
					OneWayMs float64 `json:"one_way_ms"`
				}
				EndpointReported *struct{ CNAME string } `json:"endpoint_reported"`
			}
		}
		sigCall(t, ctx, s, "media_diagnostics", map[string]any{"call_id": "12013223@200.57.7.195"}, &got)
		if !got.Applicable || len(got.Streams) != 2 {
			t.Fatalf("applicable %v with %d streams, want 2", got.Applicable, len(got.Streams))
		}
		for _, st := range got.Streams {
			if st.Delay.Source != "declared" || st.Delay.Assumed || st.Delay.OneWayMs != 40 || st.QoS.DSCP == nil || *st.QoS.DSCP != 0 {
				t.Errorf("%s: delay %+v dscp %v, want declared 40 ms and DSCP 0", st.SSRC, st.Delay, st.QoS.DSCP)
			}
			if st.EndpointReported == nil || !strings.HasPrefix(st.EndpointReported.CNAME, "\u27e6untrusted-capture-data\u27e7") {
				t.Errorf("%s: endpoint_reported %+v, want a fenced CNAME", st.SSRC, st.EndpointReported)
			}
		}
		raw := sigCall(t, ctx, s, "media_diagnostics", map[string]any{"call_id": "12015624@200.57.7.195"}, nil)
		if _, ok := raw["streams"]; ok || string(raw["applicable"]) != "false" || !strings.Contains(string(raw["reason"]), "never answered") {
			t.Errorf("an unanswered call: applicable %s reason %s streams present %v", raw["applicable"], raw["reason"], ok)
		}
		r, err := s.result(ctx, "media_diagnostics", map[string]any{"call_id": "no-such-call"})
		if err != nil || !r.isError || len(r.texts) == 0 || !strings.Contains(r.texts[0], "unknown call_id") {
			t.Errorf("unknown call_id: %+v, %v; want isError naming it", r, err)
		}
	})

	t.Run("explain_attribution", func(t *testing.T) {
		var got struct {
			Endpoints []struct {
				Address       string
				Port          int
				InputOrigin   string                 `json:"input_origin"`
				AssertedBy    struct{ Frame string } `json:"asserted_by"`
				DeliveryTrust string                 `json:"delivery_trust"`
			}
			Unauthenticated []string `json:"unauthenticated_endpoints"`
		}
		sigCall(t, ctx, s, "explain_attribution", map[string]any{"call_id": "12013223@200.57.7.195"}, &got)
		if len(got.Endpoints) != 2 || len(got.Unauthenticated) != 2 {
			t.Fatalf("endpoints %+v unauthenticated %v, want 2 and 2", got.Endpoints, got.Unauthenticated)
		}
		for i, w := range []string{"SIP_CALL_RTP_G711#1@", "SIP_CALL_RTP_G711#498@"} {
			if e := got.Endpoints[i]; !strings.HasPrefix(e.AssertedBy.Frame, w) || e.DeliveryTrust != "not-relay-asserted" || e.InputOrigin != "wire" || e.Address == "" {
				t.Errorf("endpoint %d: %+v, want frame %s and not-relay-asserted", i, e, w)
			}
		}
	})

	t.Run("export_audio", func(t *testing.T) {
		var got struct {
			Path     string
			Bytes    int
			Channels []struct {
				SSRC   string
				Frames int
			}
		}
		sigCall(t, ctx, s, "export_audio", map[string]any{"call_id": "12013223@200.57.7.195", "filename": "call.wav"}, &got)
		b, err := os.ReadFile(filepath.Join(root, "call.wav"))
		if err != nil || len(b) != got.Bytes || got.Path != "call.wav" || string(b[:4]) != "RIFF" {
			t.Fatalf("file: %d bytes (%v), answer %+v", len(b), err, got)
		}
		if len(got.Channels) != 2 || got.Channels[0].SSRC != "0xd2bd4e3e" || got.Channels[0].Frames != 548 || got.Channels[1].SSRC != "0x58f33dea" || got.Channels[1].Frames != 891 {
			t.Errorf("channels %+v", got.Channels)
		}
		// The same name again: refused, the file untouched.
		if r, err := s.result(ctx, "export_audio", map[string]any{"call_id": "12013223@200.57.7.195", "filename": "call.wav"}); err != nil || !r.isError {
			t.Errorf("a taken name: %+v %v, want isError", r, err)
		}
		// A call without a stream: -32603, saying what was measured.
		if _, _, err := s.call(ctx, "export_audio", map[string]any{"call_id": "12015624@200.57.7.195", "filename": "none.wav"}); err == nil || !strings.Contains(err.Error(), "nothing retained") {
			t.Errorf("a call without audio: %v, want -32603 nothing retained", err)
		}
	})
}

// TestMediaE2EExportAudioNeedsRetainAudio: without --retain-audio the tool
// stays listed and refuses, naming the flag.
func TestMediaE2EExportAudioNeedsRetainAudio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := sigSession(t, ctx, "-I", sampleCapture(), "--mcp-tools", "capture_status,media", "--mcp-file-root", t.TempDir())
	defer s.close()
	waitLoaded(t, ctx, s)
	r, err := s.result(ctx, "export_audio", map[string]any{"call_id": "1-1966@10.0.2.20", "filename": "a.wav"})
	if err != nil || !r.isError || len(r.texts) == 0 || !strings.Contains(r.texts[0], "--retain-audio") {
		t.Errorf("got %+v, %v; want isError naming --retain-audio", r, err)
	}
}
