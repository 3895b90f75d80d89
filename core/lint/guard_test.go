package lint

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
)

var update = flag.Bool("update", false, "rewrite testdata/guard.golden.json")

// guardMinDialogs and guardMaxShare: on a capture of at least 20 dialogs, a
// rule firing on more than 95 % of them is treated as a bug in the rule, not
// a discovery about the traffic (engine.md §14).
const (
	guardMinDialogs = 20
	guardMaxShare   = 0.95
)

// verified lists the rules allowed past the guard on one capture, each
// checked by hand against tshark. A load generator repeats one scenario, so
// a real defect of that scenario is in every dialog: the SIPp scenario of
// sipp-branch-scenario.pcapng sends every REGISTER without Max-Forwards.
// The exemption pins the exact count, so the rule changing fails the test.
var verified = map[string]map[string]struct {
	findings int
	how      string
}{
	"sipp-branch-scenario.pcapng": {
		"SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING": {1334,
			"tshark -Y 'sip.Request-Line and !sip.Max-Forwards' selects 1334 frames, all REGISTER, one per Call-ID"},
	},
}

// captureCounts is one capture's line of the golden file.
type captureCounts struct {
	Dialogs int `json:"dialogs"`
	// DialogsWithRTP counts the dialogs the observation rules could read.
	DialogsWithRTP int `json:"dialogs_with_rtp"`
	// Findings per rule: every finding raised (before the cap).
	Findings map[string]int `json:"findings"`
	// Dialogs per rule that raised at least one finding.
	DialogsHit map[string]int `json:"dialogs_hit"`
}

// lintCapture loads a capture through the engine and lints every dialog
// with every rule.
func lintCapture(t *testing.T, name string) (captureCounts, bool) {
	t.Helper()
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); err != nil {
		return captureCounts{}, false // not a pcap/pcapng (NetMon files)
	}
	c.Wait()
	out := captureCounts{Findings: map[string]int{}, DialogsHit: map[string]int{}}
	iv := c.Media().Config().QualityInterval
	for _, id := range c.Dialogs().CallIDs() {
		d, ok := c.Dialogs().Get(id)
		if !ok {
			continue
		}
		out.Dialogs++
		streams := c.Media().StreamsFor(id)
		if len(streams) > 0 {
			out.DialogsWithRTP++
		}
		res := Lint(Input{Messages: d.Messages, Streams: streams, QualityInterval: iv}, Options{})
		for rule, n := range res.Raised {
			out.Findings[rule] += n
			out.DialogsHit[rule]++
		}
	}
	return out, true
}

// guardViolations applies the guard to one capture's counts.
func guardViolations(name string, cc captureCounts) []string {
	if cc.Dialogs < guardMinDialogs {
		return nil
	}
	rules := make([]string, 0, len(cc.DialogsHit))
	for r := range cc.DialogsHit {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	var out []string
	for _, r := range rules {
		share := float64(cc.DialogsHit[r]) / float64(cc.Dialogs)
		if v, ok := verified[name][r]; ok {
			if cc.Findings[r] != v.findings {
				out = append(out, fmt.Sprintf("%s: %s raised %d findings, hand-verified %d (%s)", name, r, cc.Findings[r], v.findings, v.how))
			}
			continue
		}
		if share > guardMaxShare {
			out = append(out, fmt.Sprintf("%s: %s fires on %d of %d dialogs (%.1f %%): a rule bug, not a finding",
				name, r, cc.DialogsHit[r], cc.Dialogs, 100*share))
		}
	}
	return out
}

// TestGuardCatchesARuleFiringEverywhere feeds the guard counts it must
// refuse and counts it must accept.
func TestGuardCatchesARuleFiringEverywhere(t *testing.T) {
	for _, tc := range []struct {
		name    string
		capture string
		cc      captureCounts
		want    int
	}{
		{"96 of 100 dialogs", "x.pcap", captureCounts{Dialogs: 100, Findings: map[string]int{"R": 96}, DialogsHit: map[string]int{"R": 96}}, 1},
		{"95 of 100 dialogs", "x.pcap", captureCounts{Dialogs: 100, Findings: map[string]int{"R": 95}, DialogsHit: map[string]int{"R": 95}}, 0},
		{"19 dialogs, all hit", "x.pcap", captureCounts{Dialogs: 19, Findings: map[string]int{"R": 19}, DialogsHit: map[string]int{"R": 19}}, 0},
		{"verified count holds", "sipp-branch-scenario.pcapng", captureCounts{Dialogs: 1334,
			Findings:   map[string]int{"SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING": 1334},
			DialogsHit: map[string]int{"SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING": 1334}}, 0},
		{"verified count moved", "sipp-branch-scenario.pcapng", captureCounts{Dialogs: 1334,
			Findings:   map[string]int{"SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING": 2668},
			DialogsHit: map[string]int{"SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING": 1334}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := guardViolations(tc.capture, tc.cc); len(got) != tc.want {
				t.Errorf("got %d violations %q, want %d", len(got), got, tc.want)
			}
		})
	}
}

// TestQualityGuard runs the whole catalogue over every public capture. A
// rule firing on more than 95 % of the dialogs of a capture with at least
// 20 dialogs fails the test; the per-capture counts are pinned in
// testdata/guard.golden.json (go test ./core/lint -run TestQualityGuard -update).
func TestQualityGuard(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatalf("public captures: %v", err)
	}
	got := map[string]captureCounts{}
	for _, name := range names {
		cc, ok := lintCapture(t, name)
		if !ok {
			continue
		}
		got[name] = cc
		for _, v := range guardViolations(name, cc) {
			t.Error(v)
		}
	}
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	golden := filepath.Join("testdata", "guard.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden: %v (run with -update)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("per-capture finding counts differ from %s; if the change is intended run go test ./core/lint -run TestQualityGuard -update\ngot:\n%s", golden, b)
	}
}
