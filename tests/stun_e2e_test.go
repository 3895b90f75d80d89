package tests

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestJSONRunShowsTheTURNRelayE2E reads the coturn capture
// (testdata/stun/README.md) through the built binary: --json-run carries
// run.stun, the stun section (the NAT mapping tshark shows in frame 56,
// the allocation of frame 60 with its channel to the peer), and the two
// relayed RTP streams bound to the call under the relayed addresses; over
// MCP, capture_status counts it and rtp_stats names the relay.
func TestJSONRunShowsTheTURNRelayE2E(t *testing.T) {
	t.Parallel()
	path := filepath.Join(testcap.Root(), "testdata", "stun", "turn-relayed-call.pcapng")
	out, errOut, code := runCLI(t, "-N", "-I", path, "--json-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Run struct {
			STUN struct {
				Messages    int `json:"messages"`
				ChannelData int `json:"channel_data"`
				Relayed     int `json:"relayed_unwrapped"`
			} `json:"stun"`
		} `json:"run"`
		Streams []struct {
			SSRC, Src, Dst   string
			AssociatedDialog string `json:"associated_dialog"`
			Packets          int    `json:"packets"`
			InputOrigin      string `json:"input_origin"`
		} `json:"streams"`
		STUN struct {
			Mappings []struct {
				Local, Mapped string
				Translated    bool `json:"translated"`
			} `json:"mappings"`
			Allocations []struct {
				Relayed  string `json:"relayed"`
				Channels []struct {
					Peer string `json:"peer"`
				} `json:"channels"`
			} `json:"allocations"`
		} `json:"stun"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Run.STUN.Messages != 44 || doc.Run.STUN.ChannelData != 112 || doc.Run.STUN.Relayed != 112 {
		t.Errorf("got run.stun %+v", doc.Run.STUN)
	}
	relayed := 0
	for _, s := range doc.Streams {
		if s.AssociatedDialog == "turn-relayed-call@10.0.0.2" && s.Packets == 50 && s.InputOrigin == "turn" &&
			(s.Src == "198.51.100.1:49157" && s.Dst == "198.51.100.2:4000" || s.Src == "198.51.100.2:4000" && s.Dst == "198.51.100.1:49157") {
			relayed++
		}
	}
	if relayed != 2 {
		t.Errorf("got streams %+v, want the two relayed streams of the call", doc.Streams)
	}
	found := false
	for _, m := range doc.STUN.Mappings {
		found = found || (m.Local == "10.0.0.2:40000" && m.Mapped == "198.51.100.254:40000" && m.Translated)
	}
	if !found {
		t.Errorf("got mappings %+v", doc.STUN.Mappings)
	}
	if n := len(doc.STUN.Allocations); n != 3 || doc.STUN.Allocations[2].Relayed != "198.51.100.1:49157" || len(doc.STUN.Allocations[2].Channels) != 1 ||
		doc.STUN.Allocations[2].Channels[0].Peer != "198.51.100.2:4000" {
		t.Errorf("got allocations %+v", doc.STUN.Allocations)
	}

	// over MCP: capture_status counts STUN, rtp_stats' diagnosis names the
	// relay the call crossed
	srv := startRaw(t, "-N", "--mcp", "-I", path)
	srv.waitLoaded()
	_, r := srv.ok("capture_status", map[string]any{})
	if !strings.Contains(string(r.StructuredContent), `"relayed_unwrapped":112`) {
		t.Errorf("capture_status without its stun counts: %s", r.StructuredContent)
	}
	_, r = srv.ok("rtp_stats", map[string]any{"call_id": "turn-relayed-call@10.0.0.2"})
	if !strings.Contains(string(r.StructuredContent), "media crossed a TURN relay: 10.0.0.2:40000 relays at 198.51.100.1:49157") {
		t.Errorf("rtp_stats does not name the relay: %s", r.StructuredContent)
	}
}
