package tests

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestRTPSweepIsTsharksStreamSetE2E: TestCoreToolsAgreeWithTsharkE2E
// checks that every stream tshark ties to SDP (rtp.default) is in the
// rtp_stats sweep; it would not notice a stream sipnab made up. sipnab also
// finds RTP no SDP announced (orphaned streams), which is what tshark reports
// with its RTP heuristic on (rtp.heuristic). So the sweep, paged to its end
// through the binary, must be exactly tshark's heuristic stream set on every
// public capture, each stream with tshark's packets and lost, and max jitter
// within max(0.05 ms, 2 %); and the default set must be inside it.
func TestRTPSweepIsTsharksStreamSetE2E(t *testing.T) {
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
			tr := testcap.LoadTruth[struct {
				RTP struct {
					Default, Heuristic struct {
						Streams []e2eTruthStream `json:"streams"`
					}
				} `json:"rtp"`
			}](t, name)
			s := startRaw(t, "-N", "--mcp", "--portrange", "1-65535", "-I", testcap.Public(name)) // tshark reads SIP on every port
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

// TestCoreCursorsThroughTiesE2E pages list_dialogs and
// search_messages by 3 through the binary over sigTiesCapture (40 REGISTER
// dialogs opening eight to an instant, Call-IDs in reverse order within
// each instant): every dialog (and every hit) exactly once, the last page
// with truncated false, whatever row the cursor cuts after.
func TestCoreCursorsThroughTiesE2E(t *testing.T) {
	s := startRaw(t, "-N", "--mcp", "-I", sigTiesCapture(t))
	s.waitLoaded()
	pageAll := func(t *testing.T, tool, rowsKey string, args map[string]any, key func(map[string]any) string) map[string]int {
		t.Helper()
		seen := map[string]int{}
		for pages := 0; ; pages++ {
			if pages > 1000 {
				t.Fatal("paging does not end")
			}
			m, _ := s.on(t).ok(tool, args)
			rows, _ := m[rowsKey].([]any)
			for _, r := range rows {
				seen[key(r.(map[string]any))]++
			}
			next, _ := m["next_cursor"].(string)
			if next == "" {
				if m["truncated"] != false || int(m["total_matched"].(float64)) != len(seen) {
					t.Errorf("last page: truncated %v total_matched %v, want false and %d", m["truncated"], m["total_matched"], len(seen))
				}
				return seen
			}
			args["cursor"] = next
		}
	}
	t.Run("list_dialogs", func(t *testing.T) {
		seen := pageAll(t, "list_dialogs", "dialogs", map[string]any{"limit": 3}, func(r map[string]any) string { return r["call_id"].(string) })
		for i := 0; i < 40; i++ {
			if id := fmt.Sprintf("tie-%02d", i); seen[id] != 1 {
				t.Errorf("%s listed %d times, want once", id, seen[id])
			}
		}
		if len(seen) != 40 {
			t.Errorf("%d distinct dialogs, want 40", len(seen))
		}
	})
	t.Run("search_messages", func(t *testing.T) {
		seen := pageAll(t, "search_messages", "hits", map[string]any{"query": "REGISTER", "limit": 3}, func(r map[string]any) string {
			return fmt.Sprint(r["call_id"], "#", r["message_index"], "/", r["part"])
		})
		perMessage := map[string]bool{}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("hit %s returned %d times", k, n)
			}
			perMessage[k[:strings.Index(k, "/")]] = true
		}
		// The parts searched are method, from, to, ua and body: each
		// dialog's REGISTER request (message 0) matches on its method; its
		// 200 carries REGISTER only in CSeq, which is not searched.
		for i := 0; i < 40; i++ {
			if k := fmt.Sprintf("tie-%02d#0", i); !perMessage[k] {
				t.Errorf("no hit in message %s", k)
			}
		}
		if len(perMessage) != 40 {
			t.Errorf("hits in %d messages, want 40", len(perMessage))
		}
	})
}
