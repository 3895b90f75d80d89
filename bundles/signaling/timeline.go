package signaling

import (
	"context"
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/sdk"
)

// timelineSchemaVersion is timeline's response schema version.
const timelineSchemaVersion = 1

// defaultBucketSeconds is timeline's bucket width when none is given.
const defaultBucketSeconds = 60

type timelineIn struct {
	BucketSeconds *int64 `json:"bucket_seconds,omitempty" default:"60" min:"1" max:"31622400" desc:"bucket width in seconds"`
}

// TimelineBucket is one bucket of the histogram.
type TimelineBucket struct {
	// Start is the bucket's first instant: a multiple of bucket_seconds
	// since the Unix epoch, UTC.
	Start time.Time `json:"start" desc:"first instant of the bucket (UTC), a multiple of bucket_seconds since the epoch"`
	// BucketSeconds is the bucket's width.
	BucketSeconds int64 `json:"bucket_seconds" desc:"bucket width, seconds"`
	// Dialogs counts the dialogs whose first message falls in the bucket.
	Dialogs int `json:"dialogs" desc:"dialogs created (first message) in the bucket"`
}

// Timeline is timeline's answer: the number of dialogs created per
// epoch-aligned bucket, from the bucket of the first dialog to the bucket
// of the last, empty buckets kept (a gap is a finding).
type Timeline struct {
	// Buckets run oldest first, with no gaps.
	Buckets []TimelineBucket `json:"buckets" nonnull:"true" desc:"buckets oldest first, empty ones kept"`
	// Returned counts the buckets.
	Returned int `json:"returned" desc:"buckets in the answer"`
	// BucketSeconds is the width used.
	BucketSeconds int64 `json:"bucket_seconds" desc:"bucket width used, seconds"`
	// RequestedBucketSeconds appears only when the width was widened: the
	// capture's span needed more buckets than --mcp-max-rows at the width
	// asked for, so the width became the smallest multiple of it that fits.
	RequestedBucketSeconds int64 `json:"requested_bucket_seconds,omitempty" desc:"width asked for; present only when widened to fit --mcp-max-rows buckets or the byte cap"`
	// TotalDialogs is the sum of the buckets: every dialog held.
	TotalDialogs int `json:"total_dialogs" desc:"dialogs counted: the sum of the buckets"`
	sdk.SourceFlags
	// CaptureIdentity names the capture counted.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

func timelineTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "timeline",
		Title: "Call-volume timeline",
		Description: "Dialogs created per time bucket, aligned to the Unix epoch, empty buckets kept (a gap is a finding). " +
			"At most --mcp-max-rows buckets: a wider span widens bucket_seconds and says so.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Dialogs created per 10 s bucket", Args: map[string]any{"bucket_seconds": 10}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "bucket_seconds outside 1 to 31622400"},
		},
	}, func(ctx context.Context, c *sdk.Call, in timelineIn) (Timeline, error) {
		return timeline(ctx, d, c, in)
	})
}

func timeline(ctx context.Context, d *deps, c *sdk.Call, in timelineIn) (Timeline, error) {
	w := int64(defaultBucketSeconds)
	if in.BucketSeconds != nil {
		w = *in.BucketSeconds
	}
	if w < 1 || w > query.MaxBucketSeconds {
		return Timeline{}, sdk.InvalidParams("bucket_seconds %d: want 1 to %d (366 days); omit it for %d", w, query.MaxBucketSeconds, defaultBucketSeconds)
	}
	// The source state is read before the store: an exhausted source seen
	// here means the count below is over the whole capture.
	src := answer.SourceState(d.capture.Status())
	build := func(tl query.Timeline, k int) Timeline {
		out := Timeline{
			Buckets:         make([]TimelineBucket, k),
			Returned:        k,
			BucketSeconds:   tl.BucketSeconds,
			TotalDialogs:    tl.Dialogs,
			SourceFlags:     src.Flags(),
			CaptureIdentity: src.Identity,
			SchemaVersion:   timelineSchemaVersion,
		}
		if tl.BucketSeconds != tl.RequestedBucketSeconds {
			out.RequestedBucketSeconds = tl.RequestedBucketSeconds
		}
		for i, b := range tl.Buckets[:k] {
			out.Buckets[i] = TimelineBucket{Start: b.Start, BucketSeconds: tl.BucketSeconds, Dialogs: b.Dialogs}
		}
		return out
	}
	budget, _ := c.ResponseBudget(0)
	// At most --mcp-max-rows buckets, and no more than fit the byte
	// budget: past either the width widens (requested_bucket_seconds says
	// so), so every dialog is still counted and no bucket is left out.
	maxBuckets := maxRows(c)
	for {
		tl, err := storeQuerier(d).Timeline(ctx, w, maxBuckets)
		if err != nil {
			return Timeline{}, err
		}
		n := len(tl.Buckets)
		k, err := c.FitRows(n, budget, func(k int) any { return build(tl, k) })
		if err != nil {
			return Timeline{}, sdk.Internal("sizing timeline: %v", err)
		}
		if k == n {
			return build(tl, n), nil
		}
		if k < 1 || maxBuckets <= 2 {
			need, _ := c.WireBytes(build(tl, min(1, n)))
			return Timeline{}, sdk.Refuse(sdk.KindTooLarge, "", "one bucket needs %d bytes on the wire, over --mcp-max-response-bytes (%d)", need, budget)
		}
		// Widening merges buckets, so k of them fit next time; a
		// widened answer only gains requested_bucket_seconds.
		maxBuckets = min(k, maxBuckets-1)
	}
}

// --- shared by the dialog-store tools (timeline, group_dialogs,
// search_by_time, validate_filter, tail_dialogs, await_condition) ---

// storeQueriers holds one dialog query layer per provisioned bundle (deps),
// so the sorted rows one call builds serve the next while the store does
// not move (paging through a loaded capture sorts once). Entries go when
// their deps is collected.
var storeQueriers sync.Map // weak.Pointer[deps] -> *query.Querier

// storeQuerier returns the bundle's dialog query layer. Filters expand
// their aliases with the run's thresholds (--pdd-threshold and its
// siblings, the host's filter.Thresholds service).
func storeQuerier(d *deps) *query.Querier {
	key := weak.Make(d)
	if q, ok := storeQueriers.Load(key); ok {
		return q.(*query.Querier)
	}
	var src analysis.MediaSource
	if m := d.capture.Media(); m != nil {
		src = m
	}
	q, loaded := storeQueriers.LoadOrStore(key, query.New(d.capture.Dialogs(), src, d.thresholds()))
	if !loaded {
		runtime.AddCleanup(d, func(k weak.Pointer[deps]) { storeQueriers.Delete(k) }, key)
	}
	return q.(*query.Querier)
}

// maxRows is the server's row ceiling (--mcp-max-rows), the default when a
// caller's limits leave it unset.
func maxRows(c *sdk.Call) int {
	if n := c.Limits().MaxRows; n > 0 {
		return n
	}
	return sdk.DefaultMaxRows
}
