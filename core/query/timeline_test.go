package query

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// timelineQuerier holds one REGISTER dialog at each offset after grpT0.
func timelineQuerier(t *testing.T, offsets ...time.Duration) *Querier {
	b := newGrpBuilder(t)
	for i, o := range offsets {
		b.add(call{id: fmt.Sprintf("r%03d", i), at: o, register: true})
	}
	return b.querier()
}

func TestTimeline(t *testing.T) {
	s := time.Second
	cases := []struct {
		name      string
		offsets   []time.Duration
		bucket    int64
		max       int
		wantWidth int64
		want      []int  // dialogs per bucket
		wantStart string // first bucket's start
	}{
		{name: "empty store", bucket: 60, max: 1000, wantWidth: 60, want: []int{}},
		{name: "empty buckets kept", offsets: []time.Duration{0, 10 * s, 65 * s, 250 * s, 251 * s}, bucket: 60, max: 1000,
			wantWidth: 60, want: []int{2, 1, 0, 0, 2}, wantStart: "2025-03-03T09:00:00Z"},
		// Aligned to the epoch, not to the first dialog: a dialog at 09:00:50
		// with 60 s buckets opens the 09:00:00 bucket.
		{name: "epoch aligned", offsets: []time.Duration{50 * s, 70 * s}, bucket: 60, max: 1000,
			wantWidth: 60, want: []int{1, 1}, wantStart: "2025-03-03T09:00:00Z"},
		{name: "odd width aligned to the epoch", offsets: []time.Duration{0, 6 * s}, bucket: 7, max: 1000,
			// 09:00:00 is 1740992400 s after the epoch = 7·248713200: a boundary.
			wantWidth: 7, want: []int{2}, wantStart: "2025-03-03T09:00:00Z"},
		{name: "one second buckets", offsets: []time.Duration{0, 2 * s}, bucket: 1, max: 1000,
			wantWidth: 1, want: []int{1, 0, 1}, wantStart: "2025-03-03T09:00:00Z"},
		// 10 minutes at 1 s needs 601 buckets; the cap is 100, so the width
		// widens to the smallest multiple of 1 s that fits: 7 s gives 86.
		{name: "widened to fit the cap", offsets: []time.Duration{0, 600 * s}, bucket: 1, max: 100,
			wantWidth: 7, want: append(append([]int{1}, make([]int, 84)...), 1), wantStart: "2025-03-03T09:00:00Z"},
		// An hour at 60 s with a cap of 10: 360 s would need 11 buckets, 420 s
		// needs 9.
		{name: "widened multiple of the request", offsets: []time.Duration{0, 3600 * s}, bucket: 60, max: 10,
			wantWidth: 420, want: append(append([]int{1}, make([]int, 7)...), 1), wantStart: "2025-03-03T09:00:00Z"},
		// A dialog a second before an odd boundary: the first bucket starts
		// before the first dialog.
		{name: "first bucket before the first dialog", offsets: []time.Duration{-time.Second, 5 * s}, bucket: 7, max: 1000,
			wantWidth: 7, want: []int{1, 1}, wantStart: "2025-03-03T08:59:53Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := timelineQuerier(t, tc.offsets...)
			got, err := q.Timeline(context.Background(), tc.bucket, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if got.BucketSeconds != tc.wantWidth || got.RequestedBucketSeconds != tc.bucket {
				t.Errorf("width %d (requested %d), want %d (%d)", got.BucketSeconds, got.RequestedBucketSeconds, tc.wantWidth, tc.bucket)
			}
			counts := make([]int, len(got.Buckets))
			sum := 0
			for i, b := range got.Buckets {
				counts[i] = b.Dialogs
				sum += b.Dialogs
				if b.Start.Unix()%got.BucketSeconds != 0 {
					t.Errorf("bucket %d starts at %v, not a multiple of %d s since the epoch", i, b.Start, got.BucketSeconds)
				}
				if i > 0 && b.Start.Sub(got.Buckets[i-1].Start) != time.Duration(got.BucketSeconds)*time.Second {
					t.Errorf("bucket %d does not follow bucket %d", i, i-1)
				}
			}
			if fmt.Sprint(counts) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", counts, tc.want)
			}
			if sum != len(tc.offsets) || got.Dialogs != len(tc.offsets) {
				t.Errorf("buckets sum to %d (Dialogs %d), want %d", sum, got.Dialogs, len(tc.offsets))
			}
			if len(got.Buckets) > max(tc.max, 2) {
				t.Errorf("%d buckets over the cap %d", len(got.Buckets), tc.max)
			}
			if tc.wantStart != "" && got.Buckets[0].Start.Format(time.RFC3339) != tc.wantStart {
				t.Errorf("first bucket %v, want %s", got.Buckets[0].Start, tc.wantStart)
			}
		})
	}
}

func TestTimelineRefusesWidth(t *testing.T) {
	q := timelineQuerier(t, 0)
	for _, w := range []int64{0, -60, MaxBucketSeconds + 1} {
		if _, err := q.Timeline(context.Background(), w, 1000); !errors.Is(err, ErrBucketSeconds) {
			t.Errorf("width %d: got %v, want ErrBucketSeconds", w, err)
		}
	}
	if _, err := q.Timeline(context.Background(), MaxBucketSeconds, 1000); err != nil {
		t.Errorf("width %d: %v", int64(MaxBucketSeconds), err)
	}
}

func TestFloorDiv(t *testing.T) {
	for _, tc := range []struct{ a, b, want int64 }{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 5, 0}, {-1, 60, -1}} {
		if got := floorDiv(tc.a, tc.b); got != tc.want {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestWindowPagesWithoutLossOrRepetition(t *testing.T) {
	// 40 dialogs, four sharing each second: ties on created_at.
	var offs []time.Duration
	for i := 0; i < 40; i++ {
		offs = append(offs, time.Duration(i/4)*time.Second)
	}
	q := timelineQuerier(t, offs...)
	start, end := grpT0.Add(2*time.Second), grpT0.Add(7*time.Second) // seconds 2..6: 20 dialogs
	for _, limit := range []int{1, 3, 4, 7, 50} {
		t.Run(fmt.Sprintf("limit%d", limit), func(t *testing.T) {
			seen := map[string]bool{}
			var after *Cursor
			pages := 0
			for {
				p, err := q.Window(context.Background(), WindowOptions{Start: start, End: end, After: after, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				if p.TotalMatched != 20 {
					t.Fatalf("total %d, want 20", p.TotalMatched)
				}
				for _, r := range p.Rows {
					if seen[r.CallID] {
						t.Fatalf("%s served twice", r.CallID)
					}
					seen[r.CallID] = true
					if r.CreatedAt.Before(start) || !r.CreatedAt.Before(end) {
						t.Errorf("%s at %v is outside [%v, %v)", r.CallID, r.CreatedAt, start, end)
					}
				}
				pages++
				if !p.More {
					break
				}
				last := p.Rows[len(p.Rows)-1]
				c, err := ParseDialogCursor(DialogCursor(last.CreatedAt, last.CallID))
				if err != nil {
					t.Fatal(err)
				}
				after = &c
			}
			if len(seen) != 20 {
				t.Errorf("served %d distinct dialogs, want 20", len(seen))
			}
			if want := (20 + limit - 1) / limit; pages != want {
				t.Errorf("%d pages, want %d", pages, want)
			}
		})
	}
}

func TestWindowBounds(t *testing.T) {
	q := timelineQuerier(t, 0, time.Second, 2*time.Second)
	cases := []struct {
		name       string
		start, end time.Time
		want       int
		err        error
	}{
		{"start inclusive, end exclusive", grpT0, grpT0.Add(2 * time.Second), 2, nil},
		{"open end", grpT0.Add(time.Second), time.Time{}, 2, nil},
		{"before everything", grpT0.Add(-time.Hour), grpT0, 0, nil},
		{"end equal to start", grpT0, grpT0, 0, ErrWindow},
		{"end before start", grpT0, grpT0.Add(-time.Second), 0, ErrWindow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := q.Window(context.Background(), WindowOptions{Start: tc.start, End: tc.end})
			if !errors.Is(err, tc.err) {
				t.Fatalf("got error %v, want %v", err, tc.err)
			}
			if p.TotalMatched != tc.want || len(p.Rows) != tc.want {
				t.Errorf("got %d (%d rows), want %d", p.TotalMatched, len(p.Rows), tc.want)
			}
		})
	}
}
