package lint

import (
	"fmt"
	"testing"
)

// flood builds a dialog of n transactions with unique keys (branch, CSeq,
// tags), each breaking the To-tag, ACK and PRACK rules, and n RTP streams
// with unique SSRCs on undeclared ports with an undeclared payload type.
func flood(t testing.TB, n int) Input {
	bs := []*mb{req("INVITE").withSDP(sdpA(1)), resp(200, "OK", "INVITE").withSDP(sdpB(1))}
	for i := 0; i < n; i++ {
		branch := fmt.Sprintf("SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bKf%d", i)
		cseq := fmt.Sprintf("%d INVITE", i+10)
		bs = append(bs,
			req("INVITE").set("Via", branch).set("CSeq", cseq).set("To", fmt.Sprintf("<sip:bob@example.com>;tag=r%d", i)),
			resp(183, "Session Progress", "INVITE").set("Via", branch).set("CSeq", cseq).set("Require", "100rel").set("RSeq", fmt.Sprint(i+1)),
			resp(486, "Busy Here", "INVITE").set("Via", branch).set("CSeq", cseq).set("To", fmt.Sprintf("<sip:bob@example.com>;tag=n%d", i)),
			req("ACK").set("CSeq", fmt.Sprintf("%d ACK", i+1_000_000)))
	}
	in := Input{Messages: msgs(t, bs...)}
	for i := 0; i < n; i++ {
		s := stream("10.0.0.2:7000", fmt.Sprintf("10.0.0.1:%d", 10000+i%50000), "G729", 18, 10, 20, 20)
		s.SSRC = fmt.Sprintf("0x%08x", i)
		in.Streams = append(in.Streams, s)
	}
	return in
}

// TestFloodStaysCapped lints dialogs of up to 50,000 unique transactions
// and streams: each flooded rule reports at most the cap, counts every
// finding it raised, and withholds the rest as capped.
func TestFloodStaysCapped(t *testing.T) {
	flooded := []string{
		"SIP-3261-8.1.1.2-TO-TAG-IN-INITIAL-REQUEST",
		"SIP-3261-17.1.1.3-ACK-CSEQ-MISMATCH",
		"SIP-3262-4-PRACK-MISSING",
		"OBS-4566-5.14-MEDIA-PORT-MISMATCH",
		"OBS-3264-6.1-PT-UNDECLARED",
	}
	sel, err := Select([]string{"all"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, DefaultCap, DefaultCap + 1, 1000, 50000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			in := flood(t, n)
			res := Lint(in, Options{Selection: sel})
			reported := map[string]int{}
			for _, f := range res.Findings {
				reported[f.RuleID]++
			}
			capped := 0
			for _, id := range IDs() {
				if reported[id] > DefaultCap {
					t.Errorf("%s: got %d reported, want at most %d", id, reported[id], DefaultCap)
				}
				capped += res.Raised[id] - reported[id]
			}
			for _, id := range flooded {
				if res.Raised[id] != n {
					t.Errorf("%s: got %d raised, want %d (one per unique key)", id, res.Raised[id], n)
				}
				if want := min(n, DefaultCap); reported[id] != want {
					t.Errorf("%s: got %d reported, want %d", id, reported[id], want)
				}
			}
			if res.Withheld.Capped != capped {
				t.Errorf("got capped %d, want %d (raised minus reported)", res.Withheld.Capped, capped)
			}
		})
	}
}

// BenchmarkLintFlood measures a 5,000-transaction dialog with 5,000 streams.
func BenchmarkLintFlood(b *testing.B) {
	in := flood(b, 5000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Lint(in, Options{})
	}
}
