package query

import (
	"context"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/internal/testcap"
)

// fromMessages is what a record answered when it parsed the dialog's
// retained messages again for every question: the reference the noted
// extras must equal.
type fromMessages struct {
	ua, srcIP, dstIP, toDomain, nextHop string
	srcPort, dstPort                    float64
}

func referenceOf(t *testing.T, s *dialog.Store, callID string) (fromMessages, bool) {
	t.Helper()
	d, ok := s.Get(callID)
	if !ok {
		t.Fatalf("%q not in the store", callID)
	}
	var r fromMessages
	if len(d.Messages) == 0 {
		return r, false
	}
	// The row's leg (docs/data-model.md): its first retained message, its
	// out-of-dialog requests.
	prim := -2
	for i, l := range d.Legs {
		if l.Primary {
			prim = i
		}
	}
	first := d.Messages[0]
	for _, m := range d.Messages {
		if m.Leg == prim {
			first = m
			break
		}
	}
	r.srcIP, _ = addrText(first.Src.Addr())
	r.dstIP, _ = addrText(first.Dst.Addr())
	if first.Src.IsValid() {
		r.srcPort = float64(first.Src.Port())
	}
	if first.Dst.IsValid() {
		r.dstPort = float64(first.Dst.Port())
	}
	if first.Msg != nil {
		r.toDomain = strings.ToLower(first.Msg.To.Host)
	}
	var hop netip.AddrPort
	for _, m := range d.Messages {
		if m.Msg == nil {
			continue
		}
		if r.ua == "" {
			r.ua = m.Msg.UserAgent
		}
		if m.Leg == prim && m.Msg.IsRequest && m.Msg.Method == d.Method && m.Msg.To.Tag == "" && m.Dst.IsValid() {
			hop = m.Dst
		}
	}
	if hop.IsValid() {
		r.nextHop = netip.AddrPortFrom(hop.Addr().Unmap(), hop.Port()).String()
	}
	return r, true
}

func recordAnswers(r *Record) fromMessages {
	var a fromMessages
	a.ua, _ = r.Str(filter.FieldUA)
	a.srcIP, _ = r.Str(filter.FieldSrcIP)
	a.dstIP, _ = r.Str(filter.FieldDstIP)
	a.srcPort, _ = r.Num(filter.FieldSrcPort)
	a.dstPort, _ = r.Num(filter.FieldDstPort)
	a.toDomain, _ = r.GroupValue(DimToDomain)
	a.nextHop, _ = r.GroupValue(DimNextHop)
	return a
}

// checkAnswers compares, for every dialog of a loaded store, the record's
// answers read from the noted extras (through the snapshot and by Call-ID)
// with the answers parsed from the retained messages, and aggregate_dialogs'
// three ways of counting (from the store, over the snapshot, through a
// filter every dialog matches) for every dimension.
func checkAnswers(t *testing.T, c *engine.Capture) {
	t.Helper()
	q := New(c.Dialogs(), c.Media(), filter.DefaultThresholds())
	snap := q.snapshot(dialog.ByCreated)
	if snap.allExtras(q) == nil && len(snap.rows) > 0 {
		t.Fatal("no extras on a loaded store")
	}
	rec := &Record{q: q}
	for i := range snap.rows {
		row := snap.rows[i]
		want, ok := referenceOf(t, c.Dialogs(), row.CallID)
		if !ok {
			t.Fatalf("%q: no retained message", row.CallID)
		}
		rec.resetAt(snap, i)
		if got := recordAnswers(rec); got != want {
			t.Errorf("%q via the snapshot:\n got %+v\nwant %+v", row.CallID, got, want)
		}
		if got := recordAnswers(q.Record(&row)); got != want {
			t.Errorf("%q by Call-ID:\n got %+v\nwant %+v", row.CallID, got, want)
		}
	}
	all, err := q.Compile("msg_count >= 0")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, d := range Dimensions() {
		q.dropSnapshots()
		fromStore, err := q.Aggregate(ctx, nil, d, 0)
		if err != nil {
			t.Fatal(err)
		}
		q.snapshot(dialog.ByCreated)
		overRows, _ := q.Aggregate(ctx, nil, d, 0)
		filtered, _ := q.Aggregate(ctx, all, d, 0)
		if !reflect.DeepEqual(fromStore, overRows) || !reflect.DeepEqual(overRows, filtered) {
			t.Errorf("%s:\n from the store %+v\n over the rows  %+v\n filtered       %+v", d, fromStore, overRows, filtered)
		}
		if fromStore.TotalMatched != len(snap.rows) {
			t.Errorf("%s: total_matched %d, want %d", d, fromStore.TotalMatched, len(snap.rows))
		}
	}
}

// TestExtrasOnPublicCaptures: on every public capture, the answers read
// from the extras the store notes on arrival equal the answers parsed from
// the retained messages, and every way of aggregating agrees.
func TestExtrasOnPublicCaptures(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatalf("public captures: %v", err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c := engine.New(engine.Config{}, nil)
			if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); err != nil {
				t.Skipf("not a capture sipnab reads: %v", err)
			}
			c.Wait()
			checkAnswers(t, c)
		})
	}
}

// TestExtrasOnGeneratedCapture does the same on the generated carrier
// capture (failed calls, registrations, several gateways).
func TestExtrasOnGeneratedCapture(t *testing.T) {
	c, _ := loadGenerated(t, gen.Small(7))
	checkAnswers(t, c)
}

// TestListFromStoreEqualsSnapshot pages list_dialogs to the end both ways
// (from the store's index after a change, over the sorted snapshot) on the
// synthetic store whose rows share timestamps: the same pages. Every page
// re-sorts the snapshot, so the one-row and seven-row walks run on a
// 300-dialog store (ties still straddle page ends) and the larger limits on
// 3,000 dialogs; BenchmarkListDeepCursorCold times a page read from the
// store at 100,000 dialogs.
func TestListFromStoreEqualsSnapshot(t *testing.T) {
	ctx := context.Background()
	stores := map[int]*dialog.Store{300: synthStore(t, 300, 8), 3000: synthStore(t, 3000, 8)}
	for _, tc := range []struct{ dialogs, limit int }{{300, 1}, {300, 7}, {3000, 50}, {3000, 5000}} {
		q := New(stores[tc.dialogs], nil, filter.DefaultThresholds())
		limit := tc.limit
		var after *Cursor
		for page := 0; ; page++ {
			q.dropSnapshots()
			fromStore, err := q.List(ctx, ListOptions{After: after, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			q.snapshot(dialog.ByCreated)
			overRows, _ := q.List(ctx, ListOptions{After: after, Limit: limit})
			if !reflect.DeepEqual(fromStore, overRows) {
				t.Fatalf("limit %d page %d: from the store %d rows more=%v total=%d, over the rows %d rows more=%v total=%d",
					limit, page, len(fromStore.Rows), fromStore.More, fromStore.TotalMatched, len(overRows.Rows), overRows.More, overRows.TotalMatched)
			}
			if !fromStore.More {
				break
			}
			c, err := ParseDialogCursor(CursorOf(&fromStore.Rows[len(fromStore.Rows)-1], dialog.ByCreated))
			if err != nil {
				t.Fatal(err)
			}
			after = &c
		}
	}
}
