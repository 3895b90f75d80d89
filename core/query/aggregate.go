package query

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
)

// Dimension is what aggregate_dialogs counts by.
type Dimension string

// The dimensions, in documentation order.
const (
	DimState        Dimension = "state"
	DimResponseCode Dimension = "response_code"
	DimMethod       Dimension = "method"
	DimFromUser     Dimension = "from.user"
	DimToUser       Dimension = "to.user"
	DimUA           Dimension = "ua"
	DimSrcIP        Dimension = "src.ip"
	DimDstIP        Dimension = "dst.ip"
	DimRTPCodec     Dimension = "rtp.codec"
)

// Dimensions lists the nine dimensions in documentation order.
func Dimensions() []Dimension {
	return []Dimension{DimState, DimResponseCode, DimMethod, DimFromUser, DimToUser, DimUA, DimSrcIP, DimDstIP, DimRTPCodec}
}

// ParseDimension reads a dimension name (exact, lowercase).
func ParseDimension(s string) (Dimension, error) {
	for _, d := range Dimensions() {
		if string(d) == s {
			return d, nil
		}
	}
	names := make([]string, 0, 9)
	for _, d := range Dimensions() {
		names = append(names, string(d))
	}
	return "", fmt.Errorf("unknown group_by %q; valid dimensions: %s", clip(s), strings.Join(names, ", "))
}

// SenderWritten reports whether the dimension's values come from the
// captured packets as their sender wrote them (from.user, to.user, ua and
// rtp.codec, which the SDP names), as opposed to sipnab's own derivations
// (state, response_code) or addresses and method tokens.
func (d Dimension) SenderWritten() bool {
	switch d {
	case DimFromUser, DimToUser, DimUA, DimRTPCodec:
		return true
	}
	return false
}

// Value returns a dialog's value in the dimension; ok is false when the
// value is absent (it then counts in the None bucket).
//
//   - state: the dialog state;
//   - response_code: final_status_code, the final response to the INVITE
//     that opened (or retried) the call, as decimal text; absent on dialogs
//     without an answered INVITE transaction;
//   - method: the method that opened the dialog's primary leg (the row's
//     method);
//   - from.user, to.user: the row's users;
//   - ua: the first non-empty User-Agent (Server on a response);
//   - src.ip, dst.ip: the addresses of the first retained message;
//   - rtp.codec: the distinct codec names of the linked RTP streams, sorted
//     and joined with "+", so a call that changed codec counts once, in
//     its own bucket ("G722+PCMU").
func (r *Record) Value(d Dimension) (string, bool) {
	s := r.Row
	switch d {
	case DimState:
		return s.State, s.State != ""
	case DimResponseCode:
		if s.FinalStatusCode == 0 {
			return "", false
		}
		return strconv.Itoa(s.FinalStatusCode), true
	case DimMethod:
		return s.Method, s.Method != ""
	case DimFromUser:
		return s.FromUser, s.FromUser != ""
	case DimToUser:
		return s.ToUser, s.ToUser != ""
	case DimUA:
		return r.UA()
	case DimSrcIP:
		return r.Str(filter.FieldSrcIP)
	case DimDstIP:
		return r.Str(filter.FieldDstIP)
	case DimRTPCodec:
		c := r.Codecs()
		if len(c) == 0 {
			return "", false
		}
		slices.Sort(c)
		return strings.Join(c, "+"), true
	}
	return "", false
}

// Bucket is one value and how many matching dialogs hold it.
type Bucket struct {
	// Value is the dimension's value, or None when Absent.
	Value string
	// Absent: the bucket of the dialogs without a value. A sender may write
	// the text "(none)" itself; Absent tells the two apart.
	Absent bool
	// Count counts the dialogs in the bucket.
	Count int
}

type bucketKey struct {
	v      string
	absent bool
}

// Aggregate is a count of the matching dialogs by one dimension.
type Aggregate struct {
	Dimension Dimension
	// Buckets are the TopN largest buckets, largest first (ties by value).
	Buckets []Bucket
	// OtherCount counts the dialogs in the buckets past TopN.
	OtherCount int
	// DistinctValues counts every bucket, None included.
	DistinctValues int
	// TotalMatched counts the matching dialogs: the buckets plus
	// OtherCount, always.
	TotalMatched int
}

// Aggregate counts the dialogs matching f (nil: all) by one dimension,
// keeping the topN largest buckets (topN <= 0 keeps all). Every matching
// dialog lands in exactly one bucket.
func (q *Querier) Aggregate(ctx context.Context, f *filter.Filter, d Dimension, topN int) (Aggregate, error) {
	out := Aggregate{Dimension: d}
	var t dialog.Tallies
	if m := q.maintained(); m != nil {
		var err error
		if t, err = m.aggregate(ctx, f, d); err != nil {
			return Aggregate{}, err
		}
	} else if tf, ok := tallyField(d); ok && f == nil && q.current(dialog.ByCreated) == nil {
		// Every dialog, and the store changed since its rows were last
		// read: count the one field straight from the store rather than
		// building every row first.
		if ctx.Err() != nil {
			return Aggregate{}, ctx.Err()
		}
		t = q.dialogs.Tally(tf)
	} else {
		var err error
		if t, err = q.tally(ctx, f, d); err != nil {
			return Aggregate{}, err
		}
	}
	out.TotalMatched = t.Total
	// Counted by the value's own type, turned into text once per bucket:
	// equal text is an equal value (an address unmapped, a status code in
	// decimal).
	byText := t.Text
	for c, n := range t.Codes {
		byText[strconv.Itoa(c)] += n
	}
	for a, n := range t.Addrs {
		byText[a.Unmap().String()] += n
	}
	all := make([]Bucket, 0, len(byText)+1)
	for v, n := range byText {
		all = append(all, Bucket{Value: v, Count: n})
	}
	if t.Absent > 0 {
		all = append(all, Bucket{Value: None, Absent: true, Count: t.Absent})
	}
	slices.SortFunc(all, func(a, b Bucket) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Value, b.Value); c != 0 {
			return c
		}
		if a.Absent == b.Absent {
			return 0
		}
		if a.Absent {
			return -1
		}
		return 1
	})
	out.DistinctValues = len(all)
	if topN > 0 && len(all) > topN {
		for _, b := range all[topN:] {
			out.OtherCount += b.Count
		}
		all = all[:topN]
	}
	out.Buckets = all
	return out, nil
}

// tallyField is the store field a dimension counts, when the store can
// count it alone (every dimension but rtp.codec, which the RTP streams
// name).
func tallyField(d Dimension) (dialog.TallyField, bool) {
	switch d {
	case DimState:
		return dialog.TallyState, true
	case DimResponseCode:
		return dialog.TallyFinalStatus, true
	case DimMethod:
		return dialog.TallyMethod, true
	case DimFromUser:
		return dialog.TallyFromUser, true
	case DimToUser:
		return dialog.TallyToUser, true
	case DimUA:
		return dialog.TallyUA, true
	case DimSrcIP:
		return dialog.TallySrcAddr, true
	case DimDstIP:
		return dialog.TallyDstAddr, true
	}
	return 0, false
}

// tally counts the rows of the created_at snapshot matching f by their
// value in d, as Store.Tally counts the store.
func (q *Querier) tally(ctx context.Context, f *filter.Filter, d Dimension) (dialog.Tallies, error) {
	snap := q.snapshot(dialog.ByCreated)
	rows := snap.rows
	t := newTallies()
	rec := &Record{q: q}
	for i := range rows {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return dialog.Tallies{}, ctx.Err()
		}
		rec.resetAt(snap, i)
		if f != nil && !f.Match(rec) {
			continue
		}
		tallyRec(&t, rec, d, 1)
	}
	return t, nil
}

func newTallies() dialog.Tallies {
	return dialog.Tallies{Text: map[string]int{}, Codes: map[int]int{}, Addrs: map[netip.Addr]int{}}
}

// tallyRec counts (delta 1) or uncounts (delta -1) one record's value in
// d: a status code by its number, an address by its address, the rest by
// text, an absent value in Absent.
func tallyRec(t *dialog.Tallies, rec *Record, d Dimension, delta int) {
	t.Total += delta
	switch d {
	case DimResponseCode:
		if c := rec.Row.FinalStatusCode; c != 0 {
			hist(t.Codes, c, delta)
			return
		}
	case DimSrcIP, DimDstIP:
		if src, dst, ok := rec.firstAddrs(); ok {
			a := src.Addr()
			if d == DimDstIP {
				a = dst.Addr()
			}
			if a.IsValid() {
				hist(t.Addrs, a.Unmap(), delta)
				return
			}
		}
	default:
		if v, ok := rec.Value(d); ok {
			hist(t.Text, v, delta)
			return
		}
	}
	t.Absent += delta
}
