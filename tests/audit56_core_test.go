package tests

import (
	"encoding/json"
	"math"
	"os"
	"sort"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestAudit56RTPSweepIsTsharksStreamSetE2E: TestCoreToolsAgreeWithTsharkE2E
// checks that every stream tshark ties to SDP (rtp.default) is in the
// rtp_stats sweep; it would not notice a stream sipnab made up. sipnab also
// finds RTP no SDP announced (orphaned streams), which is what tshark reports
// with its RTP heuristic on (rtp.heuristic). So the sweep, paged to its end
// through the binary, must be exactly tshark's heuristic stream set on every
// public capture, each stream with tshark's packets and lost, and max jitter
// within max(0.05 ms, 2 %); and the default set must be inside it.
func TestAudit56RTPSweepIsTsharksStreamSetE2E(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if notPcap[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(testcap.Truth(name))
			if err != nil {
				t.Fatal(err)
			}
			var tr struct {
				RTP struct {
					Default, Heuristic struct {
						Streams []e2eTruthStream `json:"streams"`
					}
				} `json:"rtp"`
			}
			if err := json.Unmarshal(b, &tr); err != nil {
				t.Fatal(err)
			}
			s := startRaw(t, "-N", "--mcp", "-I", testcap.Public(name))
			needTools(t, s.tools(), "rtp_stats")
			s.waitLoaded()
			rows := sweepE2E(t, s, map[string]any{"limit": 2})
			got := map[string]map[string]any{}
			for _, r := range rows {
				got[streamKeyE2E(r)] = r
			}
			want := map[string]e2eTruthStream{}
			for _, w := range tr.RTP.Heuristic.Streams {
				want[w.SSRC+"@"+w.Src+">"+w.Dst] = w
			}
			for _, w := range tr.RTP.Default.Streams {
				if _, ok := want[w.SSRC+"@"+w.Src+">"+w.Dst]; !ok {
					t.Fatalf("truth file: default stream %s@%s>%s not among the heuristic ones", w.SSRC, w.Src, w.Dst)
				}
			}
			var extra, missing []string
			for k := range got {
				if _, ok := want[k]; !ok {
					extra = append(extra, k)
				}
			}
			for k, w := range want {
				g, ok := got[k]
				if !ok {
					missing = append(missing, k)
					continue
				}
				if int64(g["packets"].(float64)) != w.Packets || int64(g["lost"].(float64)) != w.Lost {
					t.Errorf("%s: packets/lost %v/%v, tshark %d/%d", k, g["packets"], g["lost"], w.Packets, w.Lost)
				}
				jm, has := g["jitter_max_ms"].(float64)
				switch {
				case w.MinJitterMs < 0:
					if has && jm != 0 {
						t.Errorf("%s: jitter_max_ms %v where tshark measured none", k, jm)
					}
				case !has || math.Abs(jm-w.MaxJitterMs) > math.Max(0.05, 0.02*w.MaxJitterMs):
					t.Errorf("%s: jitter_max_ms %v, tshark %v (tolerance max(0.05 ms, 2%%))", k, g["jitter_max_ms"], w.MaxJitterMs)
				}
			}
			sort.Strings(extra)
			sort.Strings(missing)
			if len(extra) > 0 || len(missing) > 0 {
				t.Errorf("sweep of %d streams vs tshark's %d (heuristic RTP on): extra %q, missing %q", len(got), len(want), extra, missing)
			}
		})
	}
}
