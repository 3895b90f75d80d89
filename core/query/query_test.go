package query

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/sip"
)

// pageAll pages through a listing with the given limit and returns every
// row in order, checking the page invariants on the way.
func pageAll(t *testing.T, q *Querier, f *filter.Filter, o dialog.Order, limit int) ([]dialog.Summary, Page) {
	t.Helper()
	var all []dialog.Summary
	var cur *Cursor
	var firstPage Page
	for n := 0; ; n++ {
		p, err := q.List(context.Background(), ListOptions{Filter: f, Order: o, After: cur, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			firstPage = p
		}
		if p.TotalMatched != firstPage.TotalMatched {
			t.Fatalf("page %d: total_matched %d, first page said %d", n, p.TotalMatched, firstPage.TotalMatched)
		}
		if len(p.Rows) > limit {
			t.Fatalf("page %d: %d rows over the limit %d", n, len(p.Rows), limit)
		}
		all = append(all, p.Rows...)
		if !p.More {
			break
		}
		if len(p.Rows) == 0 {
			t.Fatalf("page %d: no rows but more", n)
		}
		c, err := ParseDialogCursor(CursorOf(&p.Rows[len(p.Rows)-1], o))
		if err != nil {
			t.Fatal(err)
		}
		cur = &c
		if n > 100000 {
			t.Fatal("paging does not end")
		}
	}
	return all, firstPage
}

// TestListPagesEveryRowOnce pages a store where eight dialogs open on each
// millisecond (Call-IDs not in time order) with small limits and filters:
// the concatenated pages are exactly the matching rows in order, each once.
// A filtered page scans the store, so the one-row walks run on 400 dialogs;
// BenchmarkListFilteredRowFields times a page at 100,000.
func TestListPagesEveryRowOnce(t *testing.T) {
	const n = 400
	s := synthStore(t, n, 8)
	q := New(s, nil, filter.DefaultThresholds())
	methods, states := synthWant(n)
	cases := []struct {
		name, expr string
		want       int
	}{
		{"no filter", "", n},
		{"method", "method == INVITE", methods["INVITE"]},
		{"state or pdd", "state == Failed or pdd > 3", states["Failed"] + countSynth(n, func(i int) bool { return kindOf(i) == kCall && 1+i%7 > 3 })},
		{"matches nothing", "msg_count > 99", 0},
	}
	for _, tc := range cases {
		f, err := q.Compile(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		var want []dialog.Summary
		for _, r := range s.Summaries(dialog.ByCreated) {
			if f == nil || f.Match(q.Record(&r)) {
				want = append(want, r)
			}
		}
		if len(want) != tc.want {
			t.Fatalf("%s: %d rows match, want %d", tc.name, len(want), tc.want)
		}
		for _, limit := range []int{1, 3, 7, 8, 50, 5000} {
			t.Run(fmt.Sprintf("%s/limit %d", tc.name, limit), func(t *testing.T) {
				got, first := pageAll(t, q, f, dialog.ByCreated, limit)
				if first.TotalMatched != tc.want {
					t.Errorf("total_matched: got %d, want %d", first.TotalMatched, tc.want)
				}
				sum := 0
				for _, m := range first.ByMethod {
					sum += m.Count
				}
				if sum != tc.want {
					t.Errorf("by_method sums to %d, want %d", sum, tc.want)
				}
				if len(got) != len(want) {
					t.Fatalf("got %d rows, want %d", len(got), len(want))
				}
				seen := map[string]bool{}
				for i := range got {
					if seen[got[i].CallID] {
						t.Fatalf("row %s returned twice", got[i].CallID)
					}
					seen[got[i].CallID] = true
					if got[i].CallID != want[i].CallID {
						t.Fatalf("row %d: got %s, want %s", i, got[i].CallID, want[i].CallID)
					}
				}
			})
		}
	}
}

func countSynth(n int, f func(i int) bool) int {
	c := 0
	for i := 0; i < n; i++ {
		if f(i) {
			c++
		}
	}
	return c
}

// TestByMethodExact checks by_method against the synthetic store's known
// mix, largest first.
func TestByMethodExact(t *testing.T) {
	const n = 2000
	q := New(synthStore(t, n, 4), nil, filter.DefaultThresholds())
	methods, _ := synthWant(n)
	for _, expr := range []string{"", "msg_count >= 1"} { // the unfiltered and the scanning path
		f, _ := q.Compile(expr)
		p, err := q.List(context.Background(), ListOptions{Filter: f, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		want := []MethodCount{{"INVITE", methods["INVITE"]}, {"REGISTER", methods["REGISTER"]}, {"OPTIONS", methods["OPTIONS"]}}
		if !slices.Equal(p.ByMethod, want) {
			t.Errorf("filter %q: by_method got %v, want %v", expr, p.ByMethod, want)
		}
		if len(p.Rows) != 2 || !p.More {
			t.Errorf("filter %q: got %d rows more=%v, want 2 and more", expr, len(p.Rows), p.More)
		}
	}
}

func TestCursors(t *testing.T) {
	at := time.Date(2024, 5, 1, 10, 0, 0, 1500, time.UTC)
	cases := []struct {
		name, in string
		msg      bool
		want     Cursor
		err      bool
	}{
		{"dialog", DialogCursor(at, "abc@pbx"), false, Cursor{Time: at, CallID: "abc@pbx", HasCallID: true}, false},
		{"Call-ID with bars and hashes", DialogCursor(at, "a|b#0000000003"), false, Cursor{Time: at, CallID: "a|b#0000000003", HasCallID: true}, false},
		{"message", MessageCursor(at, "a|b#x", 12), true, Cursor{Time: at, CallID: "a|b#x", HasCallID: true, Index: 12, HasIndex: true}, false},
		{"message without index", DialogCursor(at, "abc"), true, Cursor{Time: at, CallID: "abc", HasCallID: true}, false},
		{"unpadded index refused", DialogCursor(at, "abc#12"), true, Cursor{}, true},
		{"one-digit index refused", DialogCursor(at, "hostile call with spaces@evil#2"), true, Cursor{}, true},
		{"index over the width refused", DialogCursor(at, "abc#99999999999"), true, Cursor{}, true},
		{"a dialog cursor may end in #12", DialogCursor(at, "abc#12"), false, Cursor{Time: at, CallID: "abc#12", HasCallID: true}, false},
		{"a Call-ID ending in # and a sign", DialogCursor(at, "id#-000000001"), true, Cursor{Time: at, CallID: "id#-000000001", HasCallID: true}, false},
		{"bare timestamp", "2024-05-01T10:00:00.0000015Z", false, Cursor{Time: at}, false},
		{"other zone", "2024-05-01T12:00:00.0000015+02:00|x", false, Cursor{Time: at, CallID: "x", HasCallID: true}, false},
		{"garbage", "yesterday|x", false, Cursor{}, true},
		{"integer text", "42", true, Cursor{}, true},
		{"empty", "", false, Cursor{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parse := ParseDialogCursor
			if tc.msg {
				parse = ParseMessageCursor
			}
			got, err := parse(tc.in)
			if tc.err {
				if !errors.Is(err, ErrCursor) {
					t.Fatalf("got %+v, %v; want ErrCursor", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Time.Equal(tc.want.Time) || got.CallID != tc.want.CallID || got.HasCallID != tc.want.HasCallID ||
				got.Index != tc.want.Index || got.HasIndex != tc.want.HasIndex {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got, want := MessageCursor(at, "k", 7), "2024-05-01T10:00:00.000001500Z|k#0000000007"; got != want {
		t.Errorf("MessageCursor: got %s, want %s", got, want)
	}
}

// TestBareTimestampCursor: a bare timestamp pages strictly after its
// instant (the rows sharing it are skipped, as the compatibility form
// documents).
func TestBareTimestampCursor(t *testing.T) {
	q := New(synthStore(t, 40, 8), nil, filter.DefaultThresholds())
	rows := q.Rows(dialog.ByCreated)
	c, err := ParseDialogCursor(rows[3].CreatedAt.Format(time.RFC3339Nano))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := q.List(context.Background(), ListOptions{After: &c})
	if len(p.Rows) != 32 || p.Rows[0].CallID != rows[8].CallID {
		t.Errorf("got %d rows from %s, want 32 from %s", len(p.Rows), p.Rows[0].CallID, rows[8].CallID)
	}
}

// TestRowFields checks the row-backed filter fields and absent values on
// the synthetic store, where every value follows from the dialog's number.
func TestRowFields(t *testing.T) {
	const n = 40
	s := synthStore(t, n, 1)
	q := New(s, nil, filter.DefaultThresholds())
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("c%07d@synth", i)
		row, ok := s.Lookup(id)
		if !ok {
			t.Fatalf("%s missing", id)
		}
		r := q.Record(&row)
		k := kindOf(i)
		pdd, hasPDD := r.Num(filter.FieldPDD)
		setup, hasSetup := r.Num(filter.FieldSetupTime)
		ua, hasUA := r.Str(filter.FieldUA)
		src, _ := r.Str(filter.FieldSrcIP)
		port, _ := r.Num(filter.FieldSrcPort)
		from, _ := r.Str(filter.FieldFromUser)
		wantSrc := fmt.Sprintf("192.0.2.%d", 10+i%200)
		if src != wantSrc || port != 5060 || from != fmt.Sprintf("u%d", i%500) {
			t.Errorf("%s: src %s:%v from %s, want %s:5060 u%d", id, src, port, from, wantSrc, i%500)
		}
		switch k {
		case kCall, kBusy:
			if !hasPDD || pdd != float64(1+i%7) {
				t.Errorf("%s: pdd %v %v, want %d", id, pdd, hasPDD, 1+i%7)
			}
			if wantUA := fmt.Sprintf("synth-ua/%d", i%3); !hasUA || ua != wantUA {
				t.Errorf("%s: ua %q, want %q", id, ua, wantUA)
			}
		case kRegister, kOptions, kDenied:
			if hasPDD {
				t.Errorf("%s: pdd %v present, want absent", id, pdd)
			}
		}
		if hasSetup != (k == kCall) || (hasSetup && setup != 8) {
			t.Errorf("%s: setup_time %v %v", id, setup, hasSetup)
		}
		if k == kOptions && hasUA {
			t.Errorf("%s: ua %q present on a dialog without one", id, ua)
		}
		if k == kDenied && ua != "synth-ua/"+fmt.Sprint(i%3) {
			t.Errorf("%s: ua %q, want the INVITE's before the response's Server", id, ua)
		}
		// No stream store: every media field is absent.
		if v, ok := r.Num(filter.FieldRTPPackets); ok {
			t.Errorf("%s: rtp.packets %v present without media", id, v)
		}
		if v, ok := r.Bool(filter.FieldOneWay); ok {
			t.Errorf("%s: one_way %v present without media", id, v)
		}
	}
	// Absent is not zero: pdd != 5 holds where pdd was never measured, pdd < 100 does not.
	for _, tc := range []struct {
		expr string
		want int
	}{
		{"pdd < 100", countSynth(n, func(i int) bool { k := kindOf(i); return k == kCall || k == kBusy })},
		{"pdd != 5", countSynth(n, func(i int) bool { k := kindOf(i); return !((k == kCall || k == kBusy) && 1+i%7 == 5) })},
		{"not pdd == 5", countSynth(n, func(i int) bool { k := kindOf(i); return !((k == kCall || k == kBusy) && 1+i%7 == 5) })},
		{"ua =~ '^synth'", countSynth(n, func(i int) bool { return kindOf(i) == kCall || kindOf(i) == kBusy || kindOf(i) == kDenied })},
		{"payload =~ 'Server: gw'", countSynth(n, func(i int) bool { return kindOf(i) == kDenied })},
		{"src.ip >= 192.0.2.20 and src.ip < 192.0.2.30", 10},
		{"rtp.orphaned == false", 0},
		{"no_media != true", n},
	} {
		f, err := q.Compile(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		p, _ := q.List(context.Background(), ListOptions{Filter: f})
		if p.TotalMatched != tc.want {
			t.Errorf("%s: got %d, want %d", tc.expr, p.TotalMatched, tc.want)
		}
	}
}

// TestThresholdsFollowTheRun: the aliases expand with the Querier's
// thresholds, not the defaults.
func TestThresholdsFollowTheRun(t *testing.T) {
	const n = 300
	s := synthStore(t, n, 2)
	for _, pdd := range []float64{0.5, 3, 5, 11} {
		th := filter.DefaultThresholds()
		th.PDDSeconds = pdd
		q := New(s, nil, th)
		f, err := q.Compile("slow-setup")
		if err != nil {
			t.Fatal(err)
		}
		p, _ := q.List(context.Background(), ListOptions{Filter: f, Limit: 1})
		want := countSynth(n, func(i int) bool { k := kindOf(i); return (k == kCall || k == kBusy) && float64(1+i%7) > pdd })
		if p.TotalMatched != want {
			t.Errorf("pdd threshold %v: slow-setup matched %d, want %d", pdd, p.TotalMatched, want)
		}
		kf, err := q.CompileKinds([]string{"slow-setup"})
		if err != nil {
			t.Fatal(err)
		}
		if p2, _ := q.List(context.Background(), ListOptions{Filter: kf}); p2.TotalMatched != want {
			t.Errorf("pdd threshold %v: kinds slow-setup matched %d, want %d", pdd, p2.TotalMatched, want)
		}
	}
}

func TestAggregate(t *testing.T) {
	const n = 500
	q := New(synthStore(t, n, 3), nil, filter.DefaultThresholds())
	methods, states := synthWant(n)
	codes := map[string]int{
		"200": countSynth(n, func(i int) bool { return kindOf(i) == kCall }),
		"486": countSynth(n, func(i int) bool { return kindOf(i) == kBusy }),
		"403": countSynth(n, func(i int) bool { return kindOf(i) == kDenied }),
		None:  countSynth(n, func(i int) bool { k := kindOf(i); return k == kRegister || k == kOptions }),
	}
	uas := map[string]int{None: countSynth(n, func(i int) bool { return kindOf(i) == kOptions }),
		"phone": countSynth(n, func(i int) bool { return kindOf(i) == kRegister })}
	for i := 0; i < n; i++ {
		if k := kindOf(i); k == kCall || k == kBusy || k == kDenied {
			uas[fmt.Sprintf("synth-ua/%d", i%3)]++
		}
	}
	cases := []struct {
		dim  Dimension
		want map[string]int
	}{
		{DimMethod, methods},
		{DimState, states},
		{DimResponseCode, codes},
		{DimUA, uas},
		{DimRTPCodec, map[string]int{None: n}},
	}
	for _, tc := range cases {
		t.Run(string(tc.dim), func(t *testing.T) {
			a, err := q.Aggregate(context.Background(), nil, tc.dim, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, b := range a.Buckets {
				if b.Absent != (b.Value == None) {
					t.Errorf("bucket %q absent=%v", b.Value, b.Absent)
				}
				got[b.Value] = b.Count
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if a.TotalMatched != n || a.DistinctValues != len(tc.want) || a.OtherCount != 0 {
				t.Errorf("total %d distinct %d other %d, want %d %d 0", a.TotalMatched, a.DistinctValues, a.OtherCount, n, len(tc.want))
			}
		})
	}
	// Invariant over every dimension, filter and top_n.
	for _, d := range Dimensions() {
		for _, expr := range []string{"", "method == INVITE", "msg_count > 99"} {
			for _, top := range []int{0, 1, 2, 3, 50} {
				f, _ := q.Compile(expr)
				a, err := q.Aggregate(context.Background(), f, d, top)
				if err != nil {
					t.Fatal(err)
				}
				sum := a.OtherCount
				for i, b := range a.Buckets {
					sum += b.Count
					if i > 0 && b.Count > a.Buckets[i-1].Count {
						t.Errorf("%s %q top %d: buckets not largest first", d, expr, top)
					}
				}
				if sum != a.TotalMatched {
					t.Errorf("%s %q top %d: buckets+other %d != total_matched %d", d, expr, top, sum, a.TotalMatched)
				}
				if top > 0 && len(a.Buckets) > top {
					t.Errorf("%s %q top %d: %d buckets", d, expr, top, len(a.Buckets))
				}
				if a.DistinctValues < len(a.Buckets) || (a.OtherCount > 0) != (a.DistinctValues > len(a.Buckets)) {
					t.Errorf("%s %q top %d: distinct %d buckets %d other %d", d, expr, top, a.DistinctValues, len(a.Buckets), a.OtherCount)
				}
			}
		}
	}
	if _, err := ParseDimension("from_user"); err == nil || !strings.Contains(err.Error(), "from.user") {
		t.Errorf("unknown dimension: got %v, want the list of dimensions", err)
	}
}

// TestSearchPagesEveryHitOnce pages search hits with small limits and
// compares them with a brute-force scan of every retained message. Every
// page scans the store, so the walk runs on 120 dialogs (every kind, ties
// of eight, each query with hits).
func TestSearchPagesEveryHitOnce(t *testing.T) {
	const n = 120
	s := synthStore(t, n, 8)
	q := New(s, nil, filter.DefaultThresholds())
	cases := []struct {
		query string
		part  string
		want  int
	}{
		{"SYNTH-UA/1", PartUA, countSynth(n, func(i int) bool { k := kindOf(i); return (k == kCall || k == kBusy || k == kDenied) && i%3 == 1 })},
		{"invite", PartMethod, countSynth(n, func(i int) bool { k := kindOf(i); return k == kCall || k == kBusy || k == kDenied })},
		{"<sip:u7@", PartFrom, countSynth(n, func(i int) bool { return i%500 == 7 }) * 2},
		{"d3@example.net", PartTo, 0}, // not d30@...: counted below
		{"nothing like this", "", 0},
	}
	for i := 0; i < n; i++ {
		if i%50 == 3 {
			switch kindOf(i) {
			case kCall, kBusy:
				cases[3].want += 3
			default:
				cases[3].want += 2
			}
		}
	}
	for _, tc := range cases {
		for _, limit := range []int{1, 2, 5, 1000} {
			t.Run(fmt.Sprintf("%s/%d", tc.query, limit), func(t *testing.T) {
				var all []Hit
				var cur *Cursor
				for pages := 0; ; pages++ {
					p, err := q.Search(context.Background(), SearchOptions{Query: tc.query, After: cur, Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					if p.TotalMatched != tc.want {
						t.Fatalf("total_matched: got %d, want %d", p.TotalMatched, tc.want)
					}
					all = append(all, p.Hits...)
					if !p.More {
						break
					}
					c, err := ParseMessageCursor(p.Hits[len(p.Hits)-1].Cursor())
					if err != nil {
						t.Fatal(err)
					}
					cur = &c
				}
				if len(all) != tc.want {
					t.Fatalf("got %d hits, want %d", len(all), tc.want)
				}
				seen := map[string]bool{}
				for i, h := range all {
					k := h.Cursor()
					if seen[k] {
						t.Fatalf("hit %s twice", k)
					}
					seen[k] = true
					if i > 0 && !cursorLess(all[i-1], h) {
						t.Fatalf("hits out of order at %d", i)
					}
					if h.Part != tc.part {
						t.Errorf("hit %s: part %s, want %s", k, h.Part, tc.part)
					}
					if !strings.Contains(strings.ToLower(h.Snippet), strings.ToLower(tc.query)) {
						t.Errorf("hit %s: snippet %q lacks the query", k, h.Snippet)
					}
				}
			})
		}
	}
	if _, err := q.Search(context.Background(), SearchOptions{}); !errors.Is(err, ErrQuery) {
		t.Errorf("empty query: got %v, want ErrQuery", err)
	}
}

func cursorLess(a, b Hit) bool {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c < 0
	}
	if a.CallID != b.CallID {
		return a.CallID < b.CallID
	}
	return a.Index < b.Index
}

func TestSnippet(t *testing.T) {
	body := "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
	cases := []struct {
		name, query, want string
		max               int
	}{
		{"middle line with context", "c=IN", "s=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0", 4096},
		{"first line", "v=0", "v=0\r\no=- 1 1 IN IP4 10.0.0.1", 4096},
		{"last line", "rtpmap", "m=audio 4000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000", 4096},
		{"window on a long line", "m=audio", "m=audio 4000 RTP/AVP 0\r\na=rtpm", 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := synthBodyMsg(t, body)
			part, at, _ := find(m, foldASCII(nil, tc.query), nil)
			if part != PartBody {
				t.Fatalf("part %q, want body", part)
			}
			if got := snippet(m, part, at, len(tc.query), tc.max); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFloodOfDistinctValues: 5,000 dialogs (a hundred times MaxByMethod,
// more than maxSlice), each opened by its own extension method from its
// own user. by_method stays bounded (the largest MaxByMethod and one Other
// entry) and every count still sums to total_matched; aggregation keeps
// top_n buckets and counts the rest. BenchmarkAggregateFromUser times the
// aggregation at 100,000 dialogs.
func TestFloodOfDistinctValues(t *testing.T) {
	const n = 5000
	s := dialog.New(dialog.Config{MaxDialogs: n})
	src, dst := netip.MustParseAddrPort("192.0.2.1:5060"), netip.MustParseAddrPort("192.0.2.2:5060")
	for i := 0; i < n; i++ {
		text := fmt.Sprintf("X%d sip:a@b SIP/2.0\r\nFrom: <sip:user%d@b>;tag=f\r\nTo: <sip:a@b>\r\nCall-ID: flood-%d\r\nCSeq: 1 X%d\r\nContent-Length: 0\r\n\r\n", i, i, i, i)
		m, err := sip.Parse([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		s.Apply(dialog.Observation{Msg: m, TS: synthT0.Add(time.Duration(i) * time.Microsecond), Src: src, Dst: dst})
		if i%1000 == 999 || i == n-1 {
			// Checked as the flood grows.
			q := New(s, nil, filter.DefaultThresholds())
			for _, expr := range []string{"", "msg_count == 1"} {
				f, _ := q.Compile(expr)
				p, err := q.List(context.Background(), ListOptions{Filter: f, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				sum := 0
				for _, m := range p.ByMethod {
					sum += m.Count
				}
				if len(p.ByMethod) != MaxByMethod+1 || p.ByMethod[MaxByMethod].Method != Other || sum != i+1 || p.TotalMatched != i+1 {
					t.Fatalf("%d dialogs, filter %q: %d by_method entries summing to %d (total %d), want %d ending in %s",
						i+1, expr, len(p.ByMethod), sum, p.TotalMatched, MaxByMethod+1, Other)
				}
			}
			a, err := q.Aggregate(context.Background(), nil, DimFromUser, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Buckets) != 10 || a.DistinctValues != i+1 || a.OtherCount != i+1-10 || a.TotalMatched != i+1 {
				t.Fatalf("%d dialogs: %d buckets, distinct %d, other %d", i+1, len(a.Buckets), a.DistinctValues, a.OtherCount)
			}
		}
	}
}

func TestForShares(t *testing.T) {
	s1, s2 := dialog.New(dialog.Config{}), dialog.New(dialog.Config{})
	th := filter.DefaultThresholds()
	other := th
	other.PDDSeconds = 5
	a, b, c := For(s1, nil, th), For(s1, fixedMedia{}, other), For(s2, nil, th)
	if a.cache != b.cache || b.Thresholds() != other || b.media == nil {
		t.Error("two queriers over one store do not share its cache, or lost their own settings")
	}
	if c.cache == a.cache || New(s1, nil, th).cache == a.cache {
		t.Error("another store, or New, shared the cache")
	}
	// The shared cache does not keep a dropped store alive.
	s3 := dialog.New(dialog.Config{})
	For(s3, nil, th)
	key := weak.Make(s3)
	s3 = nil
	for i := 0; i < 20; i++ {
		runtime.GC()
		if _, ok := caches.Load(key); !ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("the cache entry of a dropped store was never removed")
}
