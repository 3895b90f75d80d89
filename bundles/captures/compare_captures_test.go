package captures

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/sdk"
)

// cpAggregate counts a public capture's dialogs by one dimension the way
// aggregate_dialogs does, over the capture loaded by path (not through the
// file root): value → count.
func cpAggregate(t *testing.T, name string, dim query.Dimension) map[string]int {
	t.Helper()
	c := cpLoad(t, name)
	var ms analysis.MediaSource
	if m := c.Media(); m != nil {
		ms = m
	}
	a, err := query.For(c.Dialogs(), ms, filter.DefaultThresholds()).Aggregate(context.Background(), nil, dim, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, b := range a.Buckets {
		out[b.Value] = b.Count
	}
	return out
}

// TestCompareCapturesCountsAsAggregateDialogs: for two pairs of public
// captures and every one of the nine dimensions, each bucket's a and b are
// aggregate_dialogs' counts of that value over each capture loaded by path
// (a value missing on one side is 0 there), delta is b - a, and the buckets
// rank by |delta|. sip-auth-failure.pcapng holds 2 dialogs, both Failed;
// register-invite-reinvite-bye.pcap one Completed call and one Registered
// REGISTER (tshark -Y sip: 8 and 12 messages).
func TestCompareCapturesCountsAsAggregateDialogs(t *testing.T) {
	pairs := [][2]string{{"sip-auth-failure.pcapng", "register-invite-reinvite-bye.pcap"}, {"sip-proxy.pcap", "sip-over-tcp.pcap"}}
	var dims []string
	for _, d := range query.Dimensions() {
		dims = append(dims, string(d))
	}
	for _, p := range pairs {
		t.Run(p[0]+"_vs_"+p[1], func(t *testing.T) {
			tools := cpTools(t, cpLoad(t, sampleCapture), cpRoot(t, p[0], p[1]), sdk.EnvOptions{})
			var got CompareCaptures
			cpCall(t, tools["compare_captures"], `{"a":"`+p[0]+`","b":"`+p[1]+`","dimensions":`+cpJSON(dims)+`}`, &got)
			if len(got.Dimensions) != 9 || got.A.Filename != p[0] || got.B.Filename != p[1] || got.A.ReadError != "" || got.B.ReadError != "" {
				t.Fatalf("answer: %+v", got)
			}
			for i, cd := range got.Dimensions {
				dim := query.Dimensions()[i]
				wa, wb := cpAggregate(t, p[0], dim), cpAggregate(t, p[1], dim)
				seen := map[string]bool{}
				sumA, sumB := 0, 0
				for j, b := range cd.Buckets {
					v := strings.TrimSuffix(strings.TrimPrefix(b.Value, sdk.FenceOpen), sdk.FenceClose)
					seen[v] = true
					if b.A != wa[v] || b.B != wb[v] || b.Delta != b.B-b.A {
						t.Errorf("%s %q: a %d b %d delta %d, aggregate_dialogs a %d b %d", dim, v, b.A, b.B, b.Delta, wa[v], wb[v])
					}
					if j > 0 && abs(b.Delta) > abs(cd.Buckets[j-1].Delta) {
						t.Errorf("%s: bucket %d moved more than the one before it", dim, j)
					}
					sumA, sumB = sumA+b.A, sumB+b.B
				}
				for _, w := range []map[string]int{wa, wb} {
					for v := range w {
						if !seen[v] {
							t.Errorf("%s: value %q of aggregate_dialogs is not compared", dim, v)
						}
					}
				}
				if sumA != got.A.Dialogs || sumB != got.B.Dialogs || cd.DistinctValues != len(cd.Buckets) {
					t.Errorf("%s: buckets sum to %d / %d, dialogs %d / %d", dim, sumA, sumB, got.A.Dialogs, got.B.Dialogs)
				}
			}
		})
	}
	tools := cpTools(t, cpLoad(t, sampleCapture), cpRoot(t, pairs[0][0], pairs[0][1]), sdk.EnvOptions{})
	var got CompareCaptures
	cpCall(t, tools["compare_captures"], `{"a":"sip-auth-failure.pcapng","b":"register-invite-reinvite-bye.pcap"}`, &got)
	st := got.Dimensions[0]
	if got.A.Dialogs != 2 || got.B.Dialogs != 2 || st.Dimension != "state" || st.Buckets[0] != (CompareBucket{Value: "Failed", A: 2, B: 0, Delta: -2}) ||
		got.Dimensions[1].Dimension != "response_code" || !strings.Contains(got.Summary, "largest movement: state Failed -2 (2 → 0)") {
		t.Errorf("default dimensions: %+v", got)
	}
}

// TestCompareCapturesOfAnExport: the sample against the pcap export_capture
// wrote from it holds the same dialogs (states Completed and InCall, both
// INVITE): no bucket moves; the export has the SIP alone (10 frames, no
// RTP stream; the sample: 852 frames, 2 streams). top_n 1 keeps one
// bucket and sums the other.
func TestCompareCapturesOfAnExport(t *testing.T) {
	tools := cpTools(t, cpLoad(t, sampleCapture), cpRoot(t, sampleCapture), sdk.EnvOptions{})
	cpCall(t, tools["export_capture"], `{"filename":"exported-sip.pcap"}`, nil)
	var got CompareCaptures
	cpCall(t, tools["compare_captures"], `{"a":"`+sampleCapture+`","b":"exported-sip.pcap","top_n":1}`, &got)
	if got.A != (CaptureSide{Filename: sampleCapture, Packets: 852, Dialogs: 2, Streams: 2}) ||
		got.B != (CaptureSide{Filename: "exported-sip.pcap", Packets: 10, Dialogs: 2}) {
		t.Errorf("sides: %+v / %+v", got.A, got.B)
	}
	st := got.Dimensions[0]
	if len(st.Buckets) != 1 || st.Buckets[0] != (CompareBucket{Value: "Completed", A: 1, B: 1}) ||
		st.Other != (CompareOther{Buckets: 1, A: 1, B: 1}) || st.DistinctValues != 2 || !strings.HasSuffix(got.Summary, "no bucket moved") {
		t.Errorf("state: %+v, summary %q", st, got.Summary)
	}
}

// TestCompareCapturesRefusals: an unknown dimension is refused before any
// file is opened (the files named do not exist); the same name twice, one
// file under two names (a hard link), a name with a directory, a missing
// file and a server without a root are refused; a side holding no dialog
// whose read failed is an internal error.
func TestCompareCapturesRefusals(t *testing.T) {
	root := cpRoot(t, sampleCapture, "sip-proxy.pcap")
	if err := os.Link(filepath.Join(root, sampleCapture), filepath.Join(root, "same.pcap")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bogus.pcap"), []byte("not a capture"), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := cpTools(t, cpLoad(t, sampleCapture), root, sdk.EnvOptions{})
	for _, tc := range []struct {
		args string
		kind sdk.Kind
		want string
	}{
		{`{"a":"nope-a.pcap","b":"nope-b.pcap","dimensions":["status"]}`, sdk.KindInvalidArgument, "valid dimensions: state, response_code"},
		{`{"a":"sip-proxy.pcap","b":"sip-proxy.pcap"}`, sdk.KindInvalidArgument, "the same file"},
		{`{"a":"` + sampleCapture + `","b":"same.pcap"}`, sdk.KindInvalidArgument, "are one file"},
		{`{"a":"../sip-proxy.pcap","b":"same.pcap"}`, sdk.KindFileRefused, "without a directory"},
		{`{"a":"sip-proxy.pcap","b":"gone.pcap"}`, sdk.KindFileRefused, "no such file"},
	} {
		e := cpRefused(t, tools["compare_captures"], tc.args)
		if e.Code != sdk.CodeInvalidParams || e.Kind != tc.kind || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: %+v, want %s naming %q", tc.args, e, tc.kind, tc.want)
		}
	}
	if e := cpRefused(t, tools["compare_captures"], `{"a":"sip-proxy.pcap","b":"bogus.pcap"}`); e.Code != sdk.CodeInternal || !strings.Contains(e.Message, "holds no dialog") {
		t.Errorf("an unreadable side: %+v", e)
	}
	none := cpTools(t, cpLoad(t, sampleCapture), "", sdk.EnvOptions{})
	if e := cpRefused(t, none["compare_captures"], `{"a":"x.pcap","b":"y.pcap"}`); e.Kind != sdk.KindNotEnabled {
		t.Errorf("no root: %+v", e)
	}
}

// TestCompareCapturesReportsAReadCutShort: a copy of the sample cut in the
// middle of a record (at 100,000 of its 198,831 bytes) still answers, with
// what was read before the cut and the reason the read stopped.
func TestCompareCapturesReportsAReadCutShort(t *testing.T) {
	root := cpRoot(t, sampleCapture, "sip-proxy.pcap")
	b, err := os.ReadFile(filepath.Join(root, sampleCapture))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "cut.pcap"), b[:100000], 0o644); err != nil {
		t.Fatal(err)
	}
	tools := cpTools(t, cpLoad(t, sampleCapture), root, sdk.EnvOptions{})
	var got CompareCaptures
	cpCall(t, tools["compare_captures"], `{"a":"sip-proxy.pcap","b":"cut.pcap"}`, &got)
	if got.B.ReadError == "" || !strings.Contains(got.B.ReadError, "cut.pcap") || strings.Contains(got.B.ReadError, "stdin") ||
		got.B.Dialogs == 0 || got.B.Packets == 0 || got.B.Packets >= 852 || got.A.ReadError != "" {
		t.Errorf("sides: %+v / %+v", got.A, got.B)
	}
}
