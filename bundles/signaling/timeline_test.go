package signaling

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/internal/testgen"
	"github.com/sipnab/sipnab/sdk"
)

// Helpers shared by the dialog-store tool tests (timeline, group_dialogs,
// search_by_time, validate_filter, tail_dialogs, await_condition), prefixed
// "sg" to stay clear of the bundle's other tests.

// sgLoad loads capture files into a new engine and waits for the load.
func sgLoad(t testing.TB, paths ...string) *engine.Capture {
	t.Helper()
	return testengine.Load(t, engine.Config{Node: "test-node"}, paths...)
}

func TestMain(m *testing.M) {
	// The tshark checks run in parallel and mostly wait on tshark.
	testcap.DefaultParallel(4)
	os.Exit(testgen.Run(m))
}

// sgGenerated writes the bench generator's small capture into a temporary
// directory and returns its path and exact answers.
func sgGenerated(t testing.TB) (string, *gen.Answers) {
	t.Helper()
	return testgen.Capture(t, gen.Small(1))
}

// sgTool provisions the bundle on a capture and returns one tool.
func sgTool(t testing.TB, c *engine.Capture, name string) sdk.Tool {
	t.Helper()
	tools, err := Bundle{}.Provision(context.Background(), sdk.NewEnv(sdk.EnvOptions{Services: []any{c}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("%s not provisioned", name)
	return sdk.Tool{}
}

// sgInvoke calls a tool with arguments and limits (zero: the defaults).
func sgInvoke(t testing.TB, c *engine.Capture, name string, args any, l sdk.Limits) (sdk.Reply, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if l == (sdk.Limits{}) {
		l = sdk.DefaultLimits()
	}
	return sgTool(t, c, name).Invoke(context.Background(), b, l)
}

// sgCall calls a tool that must succeed and decodes its first block into
// out (a pointer), returning the reply.
func sgCall(t testing.TB, c *engine.Capture, name string, args any, out any) sdk.Reply {
	t.Helper()
	r, err := sgInvoke(t, c, name, args, sdk.Limits{})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if err := json.Unmarshal([]byte(r.Blocks[0]), out); err != nil {
		t.Fatalf("%s: first block: %v\n%s", name, err, r.Blocks[0])
	}
	return r
}

// sgCode returns the JSON-RPC code of a tool error (0 for none).
func sgCode(err error) int {
	if err == nil {
		return 0
	}
	return sdk.AsError(err).Code
}

// sgKeys decodes the first block's top-level keys.
func sgKeys(t testing.TB, r sdk.Reply) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Blocks[0]), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

type sgTimeline struct {
	Buckets []struct {
		Start         time.Time `json:"start"`
		BucketSeconds int64     `json:"bucket_seconds"`
		Dialogs       int       `json:"dialogs"`
	} `json:"buckets"`
	Returned               int   `json:"returned"`
	BucketSeconds          int64 `json:"bucket_seconds"`
	RequestedBucketSeconds int64 `json:"requested_bucket_seconds"`
	TotalDialogs           int   `json:"total_dialogs"`
	SourceExhausted        bool  `json:"source_exhausted"`
	SchemaVersion          int   `json:"schema_version"`
}

// TestTimelineOnTheGeneratedCapture: every bucket count equals the
// generator's dialogs created in that epoch-aligned bucket, empty buckets
// included, for several widths.
func TestTimelineOnTheGeneratedCapture(t *testing.T) {
	p, ans := sgGenerated(t)
	c := sgLoad(t, p)
	for _, w := range []int64{1, 2, 5, 60, 3600} {
		t.Run(time.Duration(w*int64(time.Second)).String(), func(t *testing.T) {
			var got sgTimeline
			sgCall(t, c, "timeline", map[string]any{"bucket_seconds": w}, &got)
			want := map[int64]int{}
			var lo, hi int64
			for i, d := range ans.Dialogs {
				b := d.FirstTime.Unix() / w * w
				want[b]++
				if i == 0 || b < lo {
					lo = b
				}
				if i == 0 || b > hi {
					hi = b
				}
			}
			if n := int((hi-lo)/w + 1); got.Returned != n || len(got.Buckets) != n {
				t.Fatalf("got %d buckets (returned %d), want %d from %d to %d", len(got.Buckets), got.Returned, n, lo, hi)
			}
			sum := 0
			for i, b := range got.Buckets {
				if b.Start.Unix() != lo+int64(i)*w || b.BucketSeconds != w {
					t.Errorf("bucket %d: start %v width %d, want %v width %d", i, b.Start, b.BucketSeconds, time.Unix(lo+int64(i)*w, 0).UTC(), w)
				}
				if b.Dialogs != want[b.Start.Unix()] {
					t.Errorf("bucket %v: got %d dialogs, want %d", b.Start, b.Dialogs, want[b.Start.Unix()])
				}
				sum += b.Dialogs
			}
			if sum != len(ans.Dialogs) || got.TotalDialogs != len(ans.Dialogs) {
				t.Errorf("buckets sum to %d (total_dialogs %d), want %d", sum, got.TotalDialogs, len(ans.Dialogs))
			}
			if !got.SourceExhausted || got.BucketSeconds != w || got.RequestedBucketSeconds != 0 || got.SchemaVersion != timelineSchemaVersion {
				t.Errorf("envelope %+v", got)
			}
		})
	}
}

// TestTimelineKeepsEmptyBuckets: a capture of two calls 3 minutes apart
// (b2bua-asterisk.pcapng's dialogs span minutes with quiet stretches) keeps
// its zero buckets.
func TestTimelineKeepsEmptyBuckets(t *testing.T) {
	c := sgLoad(t, testcap.Public("b2bua-asterisk.pcapng"))
	var got sgTimeline
	sgCall(t, c, "timeline", map[string]any{"bucket_seconds": 1}, &got)
	zeros, sum := 0, 0
	for _, b := range got.Buckets {
		if b.Dialogs == 0 {
			zeros++
		}
		sum += b.Dialogs
	}
	if sum != 12 {
		t.Errorf("buckets sum to %d, want the 12 Call-IDs tshark counts", sum)
	}
	if zeros == 0 {
		t.Errorf("no empty bucket over %d one-second buckets of 12 dialogs", len(got.Buckets))
	}
	if first, last := got.Buckets[0], got.Buckets[len(got.Buckets)-1]; first.Dialogs == 0 || last.Dialogs == 0 {
		t.Errorf("the series starts or ends on an empty bucket: %d ... %d", first.Dialogs, last.Dialogs)
	}
}

func TestTimelineDefaultsAndRefusals(t *testing.T) {
	c := sgLoad(t, testcap.Public("sipp-branch-scenario.pcapng"))
	var got sgTimeline
	sgCall(t, c, "timeline", map[string]any{}, &got)
	if got.BucketSeconds != defaultBucketSeconds || got.TotalDialogs != 1334 {
		t.Errorf("default: width %d total %d, want 60 and 1334", got.BucketSeconds, got.TotalDialogs)
	}
	for _, w := range []int64{0, -1, 366*24*3600 + 1} {
		if _, err := sgInvoke(t, c, "timeline", map[string]any{"bucket_seconds": w}, sdk.Limits{}); sgCode(err) != sdk.CodeInvalidParams {
			t.Errorf("bucket_seconds %d: got %v, want -32602", w, err)
		}
	}
	// A cap of 10 rows: the span (over two minutes) at 1 s widens to the
	// smallest multiple of 1 s giving at most 10 buckets, and says so.
	r, err := sgInvoke(t, c, "timeline", map[string]any{"bucket_seconds": 1}, sdk.Limits{MaxRows: 10, MaxBodyBytes: 4096, MaxResponseBytes: 1 << 20, MaxWaitSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	var w sgTimeline
	if err := json.Unmarshal([]byte(r.Blocks[0]), &w); err != nil {
		t.Fatal(err)
	}
	if w.Returned > 10 || w.RequestedBucketSeconds != 1 || w.BucketSeconds <= 1 || w.TotalDialogs != 1334 {
		t.Errorf("widened: %d buckets of %d s (requested %d), total %d; want <= 10 buckets, requested 1, total 1334",
			w.Returned, w.BucketSeconds, w.RequestedBucketSeconds, w.TotalDialogs)
	}
	// One second narrower would not fit: the width is the smallest that does.
	var all sgTimeline
	sgCall(t, c, "timeline", map[string]any{"bucket_seconds": 1}, &all)
	first, last := all.Buckets[0].Start.Unix(), all.Buckets[len(all.Buckets)-1].Start.Unix()
	if narrower := w.BucketSeconds - 1; last/narrower-first/narrower+1 <= 10 {
		t.Errorf("%d s buckets were chosen but %d s would give %d buckets", w.BucketSeconds, narrower, last/narrower-first/narrower+1)
	}
}

// TestTimelineOnEmptyCapture: no dialog, no bucket; the answer is still an
// object carrying the source flags.
func TestTimelineOnEmptyCapture(t *testing.T) {
	c := sgLoad(t, testcap.Public("http-example.cap"))
	r, err := sgInvoke(t, c, "timeline", map[string]any{}, sdk.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	k := sgKeys(t, r)
	for _, key := range []string{"buckets", "returned", "bucket_seconds", "source_exhausted", "source_stopped_early", "capture_identity", "schema_version"} {
		if _, ok := k[key]; !ok {
			t.Errorf("answer lacks %s: %s", key, r.Blocks[0])
		}
	}
	if string(k["buckets"]) != "[]" || string(k["returned"]) != "0" {
		t.Errorf("got buckets %s returned %s, want [] 0", k["buckets"], k["returned"])
	}
}

// TestDialogStoreToolsRegister: the six dialog-store tools are provisioned,
// read-only and closed-world, and each answers from the capture with the
// source flags.
func TestDialogStoreToolsRegister(t *testing.T) {
	c := sgLoad(t, testcap.Public("sip-rtp-g711.pcap"))
	args := map[string]map[string]any{
		"timeline":        {},
		"group_dialogs":   {"by": "state"},
		"search_by_time":  {"start": "2000-01-01T00:00:00Z"},
		"validate_filter": {"expr": "method == INVITE"},
		"tail_dialogs":    {},
		"await_condition": {"filter": "method == INVITE"},
	}
	for name, a := range args {
		t.Run(name, func(t *testing.T) {
			tool := sgTool(t, c, name)
			h := tool.Wire(false).Annotations
			if !*h.ReadOnlyHint || *h.OpenWorldHint || *h.DestructiveHint || !*h.IdempotentHint {
				t.Errorf("hints %+v, want read-only, closed world", h)
			}
			r, err := sgInvoke(t, c, name, a, sdk.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			k := sgKeys(t, r)
			for _, key := range []string{"source_exhausted", "source_stopped_early", "capture_identity"} {
				if _, ok := k[key]; !ok {
					t.Errorf("answer lacks %s", key)
				}
			}
		})
	}
}
