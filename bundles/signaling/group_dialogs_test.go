package signaling

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

type sgGroups struct {
	GroupBy string            `json:"group_by"`
	Metrics []string          `json:"metrics"`
	Units   map[string]string `json:"units"`
	Groups  []struct {
		Value       string              `json:"value"`
		Count       int                 `json:"count"`
		Metrics     map[string]*float64 `json:"metrics"`
		NotGrounded map[string]string   `json:"not_grounded"`
		Population  map[string]int      `json:"population"`
	} `json:"groups"`
	OtherCount      int  `json:"other_count"`
	DistinctValues  int  `json:"distinct_values"`
	TotalMatched    int  `json:"total_matched"`
	SourceExhausted bool `json:"source_exhausted"`
}

func (g *sgGroups) counts() map[string]int {
	m := map[string]int{}
	for _, gr := range g.Groups {
		m[gr.Value] = gr.Count
	}
	return m
}

// TestGroupDialogsMatchesTheGenerator: by method, the generated capture's
// INVITE group carries the generator's exact ASR and NER (percent), its
// seizure/answer/delivery populations, ACD and nearest-rank PDD; the
// REGISTER group has null call metrics with reasons, never 0.
func TestGroupDialogsMatchesTheGenerator(t *testing.T) {
	p, ans := sgGenerated(t)
	c := sgLoad(t, p)
	var got sgGroups
	sgCall(t, c, "group_dialogs", map[string]any{"by": "method"}, &got)
	if got.Units["asr"] != "percent" || got.Units["ner"] != "percent" || len(got.Metrics) != 8 || len(got.Units) != 8 {
		t.Errorf("metrics %v units %v, want all 8 with asr/ner in percent", got.Metrics, got.Units)
	}
	byValue := map[string]int{}
	for i, g := range got.Groups {
		byValue[g.Value] = i
	}
	inv, ok := byValue["INVITE"]
	if !ok {
		t.Fatalf("no INVITE group: %+v", got.Groups)
	}
	g := got.Groups[inv]
	w := ans.ByMethod["INVITE"]
	for _, tc := range []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"asr", val(g.Metrics["asr"]), *w.ASR, 0},
		{"ner", val(g.Metrics["ner"]), *w.NER, 0},
		{"count", val(g.Metrics["count"]), float64(w.Dialogs), 0},
		// The store keeps whole milliseconds; the generator measures
		// microseconds.
		{"acd (s)", val(g.Metrics["acd"]), *w.ACDMs / 1000, 0.01},
		{"pdd_p50 (ms)", val(g.Metrics["pdd_p50"]), *w.PDDP50Ms, 1},
		{"pdd_p95 (ms)", val(g.Metrics["pdd_p95"]), *w.PDDP95Ms, 1},
		{"seizures", float64(g.Population["seizures"]), float64(w.Seizures), 0},
		{"answered", float64(g.Population["answered"]), float64(w.Answered), 0},
		{"delivered", float64(g.Population["delivered"]), float64(w.Delivered), 0},
		{"completed_calls", float64(g.Population["completed_calls"]), float64(w.CompletedCalls), 0},
		{"pdd_measured", float64(g.Population["pdd_measured"]), float64(w.PDDMeasured), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if math.Abs(tc.got-tc.want) > tc.tol {
				t.Errorf("got %v, want %v (±%v)", tc.got, tc.want, tc.tol)
			}
		})
	}
	if g.Metrics["mos_p10"] == nil || g.Population["mos_grounded_dialogs"] == 0 {
		t.Errorf("mos_p10 %v over %d grounded dialogs: G.711 calls score a grounded MOS", g.Metrics["mos_p10"], g.Population["mos_grounded_dialogs"])
	}
	reg := got.Groups[byValue["REGISTER"]]
	if reg.Value != "REGISTER" || reg.Count != ans.ByMethod["REGISTER"].Dialogs {
		t.Fatalf("REGISTER group %+v, want %d dialogs", reg, ans.ByMethod["REGISTER"].Dialogs)
	}
	for _, m := range []string{"asr", "ner", "acd", "pdd_p50", "pdd_p95", "mos_p10"} {
		v, present := reg.Metrics[m]
		if !present || v != nil || reg.NotGrounded[m] == "" {
			t.Errorf("REGISTER %s: present %v value %v reason %q, want null with a reason", m, present, v, reg.NotGrounded[m])
		}
	}
	// The raw JSON says null, not 0 and not absent.
	r, _ := sgInvoke(t, c, "group_dialogs", map[string]any{"by": "method", "metrics": []string{"asr"}, "filter": "method == REGISTER"}, sdk.Limits{})
	if !strings.Contains(r.Blocks[0], `"metrics":{"asr":null}`) {
		t.Errorf("REGISTER asr is not a JSON null: %s", r.Blocks[0])
	}
}

func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestGroupDialogsDimensions checks the three dimensions group_dialogs adds
// against tshark-verified facts.
func TestGroupDialogsDimensions(t *testing.T) {
	p, ans := sgGenerated(t)
	cases := []struct {
		name    string
		capture string
		by      string
		want    map[string]int
		fenced  bool
	}{
		// tshark -r sip-proxy.pcap -Y 'sip.Method==INVITE': the caller's
		// INVITE goes to the proxy 10.33.6.102:5080, which forwards it to
		// 10.33.6.100:5060: the next hop.
		{"next_hop through a proxy", testcap.Public("sip-proxy.pcap"), "next_hop", map[string]int{"10.33.6.100:5060": 1}, false},
		{"dst.ip through a proxy", testcap.Public("sip-proxy.pcap"), "dst.ip", map[string]int{"10.33.6.102": 1}, false},
		// tshark -Y sip -T fields -e sip.Call-ID -e sip.to.host, first
		// message of each Call-ID: 10 x 172.16.98.101, 1 x 172.16.98.145,
		// 1 x domain.xyz.
		{"to_domain", testcap.Public("b2bua-asterisk.pcapng"), "to_domain",
			map[string]int{sgFence("172.16.98.101"): 10, sgFence("172.16.98.145"): 1, sgFence("domain.xyz"): 1}, true},
		{"hour", p, "hour", map[string]int{"2025-03-03T09:00:00Z": len(ans.Dialogs)}, false},
		{"state is unfenced", testcap.Public("b2bua-asterisk.pcapng"), "state",
			map[string]int{"Completed": 2, "Failed": 8, "Registered": 2}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := sgLoad(t, tc.capture)
			var got sgGroups
			r := sgCall(t, c, "group_dialogs", map[string]any{"by": tc.by, "metrics": []string{"count"}}, &got)
			if fmt.Sprint(got.counts()) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got.counts(), tc.want)
			}
			if r.Fenced != tc.fenced {
				t.Errorf("provenance note %v, want %v", r.Fenced, tc.fenced)
			}
			if got.GroupBy != tc.by {
				t.Errorf("group_by %q, want %q", got.GroupBy, tc.by)
			}
		})
	}
}

func sgFence(s string) string { return sdk.FenceOpen + s + sdk.FenceClose }

func TestGroupDialogsTopNAndSubsets(t *testing.T) {
	c := sgLoad(t, testcap.Public("b2bua-asterisk.pcapng"))
	var got sgGroups
	sgCall(t, c, "group_dialogs", map[string]any{"by": "method", "top_n": 1, "metrics": []string{"ner", "asr", "ner"}}, &got)
	// tshark: 12 Call-IDs opened by SUBSCRIBE 5, PUBLISH 3, INVITE 2, REGISTER 2.
	if got.TotalMatched != 12 || got.DistinctValues != 4 || len(got.Groups) != 1 || got.Groups[0].Value != "SUBSCRIBE" || got.OtherCount != 7 {
		t.Errorf("top_n 1: total %d distinct %d groups %v other %d, want 12 4 [SUBSCRIBE:5] 7",
			got.TotalMatched, got.DistinctValues, got.counts(), got.OtherCount)
	}
	if fmt.Sprint(got.Metrics) != "[ner asr]" || len(got.Units) != 2 || len(got.Groups[0].Metrics) != 2 {
		t.Errorf("metrics %v units %v group metrics %v, want only ner and asr", got.Metrics, got.Units, got.Groups[0].Metrics)
	}
	if _, ok := got.Groups[0].Population["mos_grounded_dialogs"]; ok {
		t.Errorf("mos_grounded_dialogs present although mos_p10 was not asked for: %v", got.Groups[0].Population)
	}
	// The INVITE calls of b2bua-asterisk.pcapng: 2 answered of 2.
	var inv sgGroups
	sgCall(t, c, "group_dialogs", map[string]any{"by": "method", "filter": "method == INVITE"}, &inv)
	if len(inv.Groups) != 1 || val(inv.Groups[0].Metrics["asr"]) != 100 || inv.Groups[0].Population["seizures"] != 2 {
		t.Errorf("INVITE group %+v, want ASR 100 over 2 seizures", inv.Groups)
	}
}

func TestGroupDialogsRefusals(t *testing.T) {
	c := sgLoad(t, testcap.Public("sip-rtp-g711.pcap"))
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing by", map[string]any{}, "by"},
		{"unknown dimension", map[string]any{"by": "carrier"}, "next_hop"},
		{"unknown metric", map[string]any{"by": "method", "metrics": []string{"asr", "mos"}}, "mos_p10"},
		{"bad filter", map[string]any{"by": "method", "filter": "state == failed"}, "Failed"},
		{"negative top_n", map[string]any{"by": "method", "top_n": -1}, "top_n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sgInvoke(t, c, "group_dialogs", tc.args, sdk.Limits{})
			if sgCode(err) != sdk.CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want -32602 mentioning %q", err, tc.want)
			}
		})
	}
}

// TestGroupDialogsGroupsPlusOtherIsTotal on every public capture and
// dimension: the groups plus other_count are total_matched, and a null
// metric always has a reason.
func TestGroupDialogsGroupsPlusOtherIsTotal(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if name == "c07-sip-r2.cap" || name == "rtsp-packets.cap" {
			continue // not pcap: refused at load
		}
		t.Run(name, func(t *testing.T) {
			c := sgLoad(t, testcap.Public(name))
			for _, by := range []string{"state", "response_code", "method", "ua", "rtp.codec", "to_domain", "hour", "next_hop"} {
				var got sgGroups
				r := sgCall(t, c, "group_dialogs", map[string]any{"by": by, "top_n": 2}, &got)
				sum := got.OtherCount
				for _, g := range got.Groups {
					sum += g.Count
					for m, v := range g.Metrics {
						if v == nil && g.NotGrounded[m] == "" {
							t.Errorf("%s %q: %s null without a reason", by, g.Value, m)
						}
						if v != nil && g.NotGrounded[m] != "" {
							t.Errorf("%s %q: %s = %v with a reason %q", by, g.Value, m, *v, g.NotGrounded[m])
						}
					}
				}
				if sum != got.TotalMatched {
					t.Errorf("%s: groups + other = %d, total_matched %d", by, sum, got.TotalMatched)
				}
				var raw map[string]json.RawMessage
				_ = json.Unmarshal([]byte(r.Blocks[0]), &raw)
				if _, ok := raw["capture_identity"]; !ok {
					t.Errorf("%s: no capture_identity", by)
				}
			}
		})
	}
}

// TestGroupDialogsTopNCeiling: top_n above --mcp-max-rows is clamped to it.
func TestGroupDialogsTopNCeiling(t *testing.T) {
	c := sgLoad(t, testcap.Public("b2bua-asterisk.pcapng"))
	l := sdk.DefaultLimits()
	l.MaxRows = 2
	r, err := sgInvoke(t, c, "group_dialogs", map[string]any{"by": "method", "top_n": 1000}, l)
	if err != nil {
		t.Fatal(err)
	}
	var got sgGroups
	if err := json.Unmarshal([]byte(r.Blocks[0]), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Groups) != 2 || got.OtherCount != 4 || got.DistinctValues != 4 {
		t.Errorf("groups %v other %d distinct %d, want 2 groups (SUBSCRIBE 5, PUBLISH 3), other 4, distinct 4", got.counts(), got.OtherCount, got.DistinctValues)
	}
}

// TestGroupDialogsFitsTheResponseCeiling: with a small response ceiling
// the smallest groups move into other_count (counted in trimmed_groups)
// and the answer still sums to total_matched.
func TestGroupDialogsFitsTheResponseCeiling(t *testing.T) {
	c := sgLoad(t, testcap.Public("b2bua-asterisk.pcapng"))
	l := sdk.DefaultLimits()
	l.MaxResponseBytes = 4096
	r, err := sgInvoke(t, c, "group_dialogs", map[string]any{"by": "method"}, l)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		sgGroups
		TrimmedGroups int `json:"trimmed_groups"`
	}
	if err := json.Unmarshal([]byte(r.Blocks[0]), &got); err != nil {
		t.Fatal(err)
	}
	if len(r.Blocks[0]) > 4096-1024 || got.TrimmedGroups == 0 || len(got.Groups)+got.TrimmedGroups != 4 {
		t.Fatalf("%d bytes, %d groups, %d trimmed: want under 3072 bytes with groups + trimmed = 4", len(r.Blocks[0]), len(got.Groups), got.TrimmedGroups)
	}
	sum := got.OtherCount
	for _, g := range got.Groups {
		sum += g.Count
	}
	if sum != 12 || got.TotalMatched != 12 {
		t.Errorf("groups + other = %d, total %d, want 12", sum, got.TotalMatched)
	}
	// The default ceiling trims nothing.
	r, _ = sgInvoke(t, c, "group_dialogs", map[string]any{"by": "method"}, sdk.Limits{})
	if strings.Contains(r.Blocks[0], "trimmed_groups") {
		t.Errorf("trimmed under the default ceiling")
	}
}
