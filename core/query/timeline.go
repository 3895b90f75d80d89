package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
)

// MaxBucketSeconds is the widest timeline bucket accepted: 366 days.
const MaxBucketSeconds = 366 * 24 * 3600

// ErrBucketSeconds is returned for a bucket width outside 1..MaxBucketSeconds.
var ErrBucketSeconds = fmt.Errorf("bucket_seconds must be 1 to %d (366 days)", MaxBucketSeconds)

// TimelineBucket is one bucket of a timeline.
type TimelineBucket struct {
	// Start is the bucket's first instant, a multiple of the width since
	// the Unix epoch (UTC).
	Start time.Time
	// Dialogs counts the dialogs created (first message) in [Start,
	// Start+width).
	Dialogs int
}

// Timeline is a call-volume histogram.
type Timeline struct {
	// BucketSeconds is the width used.
	BucketSeconds int64
	// RequestedBucketSeconds is the width asked for; it differs from
	// BucketSeconds only when the span needed more than the bucket cap and
	// the width was widened (to the smallest multiple of the requested
	// width that fits, so every bucket is a union of whole requested
	// buckets and stays epoch-aligned).
	RequestedBucketSeconds int64
	// Buckets run from the bucket of the first dialog to the bucket of the
	// last, oldest first, empty buckets included (a gap is a finding).
	Buckets []TimelineBucket
	// Dialogs is the number of dialogs counted: the sum of the buckets.
	Dialogs int
}

// floorDiv divides rounding towards negative infinity (a hostile capture
// may carry timestamps before 1970).
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// Timeline counts every dialog by the epoch-aligned bucket of its
// created_at. maxBuckets (at least 2) bounds the number of buckets: when
// the capture's span needs more at bucketSeconds, the width is widened to
// the smallest multiple of bucketSeconds that fits (see
// Timeline.RequestedBucketSeconds).
func (q *Querier) Timeline(ctx context.Context, bucketSeconds int64, maxBuckets int) (Timeline, error) {
	if bucketSeconds < 1 || bucketSeconds > MaxBucketSeconds {
		return Timeline{}, ErrBucketSeconds
	}
	maxBuckets = max(maxBuckets, 2)
	out := Timeline{BucketSeconds: bucketSeconds, RequestedBucketSeconds: bucketSeconds, Buckets: []TimelineBucket{}}
	rows := q.Rows(dialog.ByCreated)
	if len(rows) == 0 {
		return out, nil
	}
	first, last := rows[0].CreatedAt.Unix(), rows[len(rows)-1].CreatedAt.Unix()
	span := func(w int64) int64 { return floorDiv(last, w) - floorDiv(first, w) + 1 }
	w := bucketSeconds
	if n := span(w); n > int64(maxBuckets) {
		// (last-first)/w' + 2 buckets at most: start from the multiple that
		// makes that fit, then step until it does.
		m := max((last-first)/(bucketSeconds*int64(maxBuckets-1)), 1)
		for span(bucketSeconds*m) > int64(maxBuckets) {
			m++
		}
		w = bucketSeconds * m
	}
	out.BucketSeconds = w
	base := floorDiv(first, w)
	n := floorDiv(last, w) - base + 1
	out.Buckets = make([]TimelineBucket, n)
	for i := range out.Buckets {
		out.Buckets[i].Start = time.Unix((base+int64(i))*w, 0).UTC()
	}
	for i := range rows {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return Timeline{}, ctx.Err()
		}
		out.Buckets[floorDiv(rows[i].CreatedAt.Unix(), w)-base].Dialogs++
		out.Dialogs++
	}
	return out, nil
}

// ErrWindow is returned for a time window whose end is not after its start.
var ErrWindow = errors.New("end must be after start")

// WindowOptions select a page of dialogs created in a time window.
type WindowOptions struct {
	// Start is the window's first instant (inclusive).
	Start time.Time
	// End, when not zero, is the instant after the window (exclusive); it
	// must be after Start. Zero means no end.
	End time.Time
	// Filter keeps the matching dialogs; nil keeps all.
	Filter *filter.Filter
	// After, when set, starts the page strictly after this position
	// (created_at, Call-ID).
	After *Cursor
	// Limit caps the rows returned; <= 0 returns every match.
	Limit int
}

// Window returns the dialogs created in [Start, End) that match the
// filter, in (created_at, Call-ID) order, after the cursor. TotalMatched
// counts every match in the window, whatever the cursor; ByMethod is not
// filled. Rows are completed for the capture's end as List's are.
func (q *Querier) Window(ctx context.Context, o WindowOptions) (Page, error) {
	p, err := q.window(ctx, o)
	q.MarkInProgress(p.Rows)
	return p, err
}

func (q *Querier) window(ctx context.Context, o WindowOptions) (Page, error) {
	if !o.End.IsZero() && !o.End.After(o.Start) {
		return Page{}, ErrWindow
	}
	snap := q.snapshot(dialog.ByCreated)
	rows := snap.rows
	lo, _ := slices.BinarySearchFunc(rows, o.Start, func(r dialog.Summary, t time.Time) int {
		return r.CreatedAt.Compare(t)
	})
	// The first row at lo is the first created at or after Start (equal
	// keys: BinarySearchFunc returns the first of them).
	hi := len(rows)
	if !o.End.IsZero() {
		hi, _ = slices.BinarySearchFunc(rows, o.End, func(r dialog.Summary, t time.Time) int {
			return r.CreatedAt.Compare(t)
		})
	}
	var p Page
	rec := &Record{q: q}
	for i := lo; i < hi; i++ {
		if (i-lo)%checkEvery == 0 && ctx.Err() != nil {
			return Page{}, ctx.Err()
		}
		row := &rows[i]
		if o.Filter != nil {
			rec.resetAt(snap, i)
			if !o.Filter.Match(rec) {
				continue
			}
		}
		p.TotalMatched++
		if o.After != nil && !o.After.afterRow(row.CreatedAt, row.CallID) {
			continue
		}
		if o.Limit > 0 && len(p.Rows) >= o.Limit {
			p.More = true
			continue
		}
		p.Rows = append(p.Rows, *row)
	}
	return p, nil
}
