package correlate

import (
	"strings"
	"testing"
	"time"
)

// FuzzCorrelate ties two crafted legs through fuzzed identifier headers
// and SDP: nothing panics, and the relation is symmetric (a leg that finds
// the other by a strategy is found by it with the same strategy).
func FuzzCorrelate(f *testing.F) {
	f.Add("ab30317f1a784dc48ff824d0d3715d86;remote=47755a9de7794ba387653f2099600ef2", "47755a9de7794ba387653f2099600ef2", "A", "icid-value=1;related-icid=2", "icid-value=2", "GW 1 1 IN IP4 10.0.0.1", "z9hG4bK-12345678", int64(100))
	f.Add("00000000000000000000000000000000", "00000000000000000000000000000000", "", "", "", "Z 0 0 IN IP4 1.2.3.4", "1", int64(3000))
	f.Add(strings.Repeat("a", 32), strings.Repeat("A", 32)+";remote="+strings.Repeat("a", 32), "B", "icid-value=\"x;y\"", "related-icid=x;y", "- - - - - -", "z9hG4bK", int64(-2000))
	f.Fuzz(func(t *testing.T, sidA, sidB, xcall, pcvA, pcvB, origin, branch string, gapMs int64) {
		for _, s := range []string{sidA, sidB, xcall, pcvA, pcvB, origin, branch} {
			if strings.ContainsAny(s, "\r\n") {
				return
			}
		}
		gap := time.Duration(gapMs%10000) * time.Millisecond
		l1 := leg{callID: "A", a: "10.0.0.1:5060", b: "10.0.0.100:5060",
			invite: []string{"Session-ID: " + sidA, "P-Charging-Vector: " + pcvA}, vias: []string{branch},
			offer: sdpBody(origin, "10.0.0.1", 4000)}
		l2 := leg{callID: "B", a: "10.0.0.100:5060", b: "10.0.0.2:5060", at: 5*time.Second + gap,
			invite: []string{"Session-ID: " + sidB, "X-Call-ID: " + xcall, "P-Charging-Vector: " + pcvB}, vias: []string{"z9hG4bK-own", branch},
			offer: sdpBody(origin, "10.0.0.2", 4000)}
		if gapMs%2 == 0 {
			l1.at = 5 * time.Second
		}
		c := New(storeOf(t, l1, l2), Config{})
		ra, okA := c.Find("A")
		rb, okB := c.Find("B")
		if !okA || !okB {
			t.Fatalf("both legs are stored: got %v %v", okA, okB)
		}
		if len(ra.Legs) != len(rb.Legs) || (len(ra.Legs) == 1 && ra.Legs[0].Strategy != rb.Legs[0].Strategy) {
			t.Fatalf("asymmetric: A finds %v, B finds %v", got(ra), got(rb))
		}
		if tr, ok := c.Tree("A", 10); !ok || len(tr.Nodes) != 1+len(ra.Legs) {
			t.Fatalf("tree from A: %+v, want the root and %d legs", tr, len(ra.Legs))
		}
	})
}
