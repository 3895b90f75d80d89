package media

import (
	"encoding/json"
	"testing"
	"time"
)

// feedExt sends one 20 ms PCMU stream whose packets carry the given
// extended sequence numbers, in that arrival order (timestamps follow the
// sequence: 160 samples a packet).
func feedExt(t *testing.T, exts []int64) StreamInfo {
	t.Helper()
	st := NewStore(Config{})
	for i, e := range exts {
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		st.Observe(udp(epA, epB, at, rtpPkt(0, false, uint16(e), uint32(e*160), 0x1234, make([]byte, 160))))
	}
	return onlyStream(t, st)
}

// span returns lo..hi inclusive without the listed positions.
func span(lo, hi int64, without ...int64) []int64 {
	skip := map[int64]bool{}
	for _, w := range without {
		skip[w] = true
	}
	var out []int64
	for e := lo; e <= hi; e++ {
		if !skip[e] {
			out = append(out, e)
		}
	}
	return out
}

func rng(lo, hi int64) []int64 {
	var out []int64
	for e := lo; e <= hi; e++ {
		out = append(out, e)
	}
	return out
}

func cat(parts ...[]int64) []int64 {
	var out []int64
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestBurstGapHandComputed checks the RFC 3611 §4.7.2 segmentation (Gmin
// 16, a burst holds two losses or more, a lone loss is a gap loss) on loss
// patterns worked out by hand. Gap and burst lengths count sequence
// positions; at the measured 20 ms ptime a position is 20 ms.
func TestBurstGapHandComputed(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name string
		exts []int64
		want BurstGap
	}{
		{"no loss is one gap of the whole stream", rng(0, 99), BurstGap{
			Gmin: 16, GapPackets: 100, MeanGapMs: f(2000)}},
		{"a lone loss is a gap loss, not a burst", span(0, 99, 50), BurstGap{
			Gmin: 16, GapLost: 1, GapPackets: 100, GapDensityPct: 1, MeanGapMs: f(2000),
			MaxConsecutiveLost: 1}},
		// 40 and 50 lost, 9 received between (< Gmin): one burst 40..50.
		{"two losses fewer than Gmin apart make one burst", span(0, 99, 40, 50), BurstGap{
			Gmin: 16, Bursts: 1, BurstLost: 2, BurstPackets: 11, GapPackets: 89,
			BurstDensityPct: f(18.182), MeanBurstMs: f(220), MeanGapMs: f(890),
			MaxConsecutiveLost: 1}},
		// 40 and 56 lost: 15 received between: still a burst (17 positions).
		{"fifteen received between two losses keep them in one burst", span(0, 99, 40, 56), BurstGap{
			Gmin: 16, Bursts: 1, BurstLost: 2, BurstPackets: 17, GapPackets: 83,
			BurstDensityPct: f(11.765), MeanBurstMs: f(340), MeanGapMs: f(830),
			MaxConsecutiveLost: 1}},
		// 40 and 57 lost: 16 received between (= Gmin): two gap losses.
		{"Gmin received between two losses part them", span(0, 99, 40, 57), BurstGap{
			Gmin: 16, GapLost: 2, GapPackets: 100, GapDensityPct: 2, MeanGapMs: f(2000),
			MaxConsecutiveLost: 1}},
		{"three consecutive losses are a bursty burst", span(0, 99, 40, 41, 42, 80), BurstGap{
			Gmin: 16, Bursts: 1, BurstLost: 3, BurstPackets: 3, GapLost: 1, GapPackets: 97,
			BurstDensityPct: f(100), GapDensityPct: 1.031, MeanBurstMs: f(60), MeanGapMs: f(970),
			MaxConsecutiveLost: 3, IsBursty: true}},
		{"a packet late within the reorder window fills its hole", cat(rng(0, 49), rng(51, 53), []int64{50}, rng(54, 99)), BurstGap{
			Gmin: 16, GapPackets: 100, MeanGapMs: f(2000)}},
		// 300 packets across the 16-bit wrap: 65520..65524 lost (settled
		// long before the end), 100 (ext 65636) lost alone.
		{"losses settled out of the window across the sequence wrap", span(65500, 65799, 65520, 65521, 65522, 65523, 65524, 65636), BurstGap{
			Gmin: 16, Bursts: 1, BurstLost: 5, BurstPackets: 5, GapLost: 1, GapPackets: 295,
			BurstDensityPct: f(100), GapDensityPct: 0.339, MeanBurstMs: f(100), MeanGapMs: f(2950),
			MaxConsecutiveLost: 5, IsBursty: true}},
		// A jump of 491 past a 128-packet window: 490 never received.
		{"a jump wider than the window is one burst", cat(rng(0, 9), rng(500, 509)), BurstGap{
			Gmin: 16, Bursts: 1, BurstLost: 490, BurstPackets: 490, GapPackets: 20,
			BurstDensityPct: f(100), MeanBurstMs: f(9800), MeanGapMs: f(200),
			MaxConsecutiveLost: 490, IsBursty: true}},
		// 10 arrives after 200: 190 behind, out of the window; the pattern
		// had settled it lost, RFC 3550 loss counts it received.
		{"a packet later than the window stays lost in the pattern and is counted", cat(span(0, 200, 10), []int64{10}, rng(201, 299)), BurstGap{
			Gmin: 16, GapLost: 1, GapPackets: 300, GapDensityPct: 0.333, MeanGapMs: f(6000),
			MaxConsecutiveLost: 1, LateAfterSettled: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := feedExt(t, c.exts)
			if s.BurstGap == nil {
				t.Fatal("burst_gap absent")
			}
			got, _ := json.Marshal(s.BurstGap)
			want, _ := json.Marshal(c.want)
			if string(got) != string(want) {
				t.Errorf("burst_gap\n got %s\nwant %s", got, want)
			}
		})
	}
}
