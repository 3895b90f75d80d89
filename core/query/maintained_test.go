package query

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testgen"
)

// The filters the maintained and the recomputed answers are compared on:
// no filter, every alias, row fields, Extra fields, media fields, the
// diagnosis, the payload and combinations.
var equivFilters = []string{
	"", "problems", "slow-setup", "short-calls", "one-way", "nat-issues", "codec-asym", "ptime-asym",
	"payload-asym", "duration-asym", "late-media",
	"state == Failed", "method == INVITE and pdd > 1", "final_status_code >= 400",
	"src.port == 5060 or dst.ip == 10.0.0.1", `ua =~ "(?i)a"`, "msg_count > 5 and not retransmits > 0",
	"rtp.mos < 4.2", "rtp.loss > 1 or rtp.jitter > 10", "rtp.codec == PCMU", "rtp.packets > 100",
	"rtp.orphaned == false", "no_media == true", "not no_media == true", `payload =~ "m=audio"`,
	"problems and method == INVITE",
}

// queriers returns a Querier answering from the maintained state and one
// recomputing every answer, over the same stores.
func queriers(c *engine.Capture) (maint, recomp *Querier) {
	var src analysis.MediaSource
	if m := c.Media(); m != nil {
		src = m
	}
	th := filter.DefaultThresholds()
	maint = New(c.Dialogs(), src, th)
	recomp = New(c.Dialogs(), src, th)
	recomp.recompute = true
	return maint, recomp
}

// compareAnswers asks both Queriers every list page (walking the cursor),
// every aggregation and every grouping of each filter, and fails on the
// first difference. The stores must not move meanwhile.
func compareAnswers(t *testing.T, maint, recomp *Querier, filters []string, dims bool) {
	t.Helper()
	if maint.maintained() == nil {
		t.Fatal("the maintained Querier does not use the maintained state")
	}
	ctx := context.Background()
	// a few pages per filter, whatever the store's size (a recomputed
	// page reads every dialog)
	n := maint.dialogs.Len()
	limit := max(7, n/5)
	clauses, err := filter.AliasClauses(nil, maint.Thresholds())
	if err != nil {
		t.Fatal(err)
	}
	for i, expr := range filters {
		f, err := maint.Compile(expr)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		var after *Cursor
		for page := 0; ; page++ {
			o := ListOptions{Filter: f, After: after, Limit: limit}
			a, errA := maint.List(ctx, o)
			b, errB := recomp.List(ctx, o)
			if errA != nil || errB != nil {
				t.Fatalf("%q: %v / %v", expr, errA, errB)
			}
			if !reflect.DeepEqual(emptyNil(a), emptyNil(b)) {
				t.Fatalf("list %q page %d: maintained\n%+v\nrecomputed\n%+v", expr, page, a, b)
			}
			for i := range a.Rows { // find_problems' matched clauses
				if x, y := maint.Explain(&a.Rows[i], clauses), recomp.Explain(&a.Rows[i], clauses); !reflect.DeepEqual(x, y) {
					t.Fatalf("explain %s: maintained %+v, recomputed %+v", a.Rows[i].CallID, x, y)
				}
			}
			if !a.More {
				break
			}
			c, err := ParseDialogCursor(CursorOf(&a.Rows[len(a.Rows)-1], dialog.ByCreated))
			if err != nil {
				t.Fatal(err)
			}
			after = &c
		}
		if !dims || n > 500 && i >= 6 {
			// on a big store, every dimension of the first six filters
			// (a recomputed grouping reads every dialog)
			continue
		}
		for _, d := range Dimensions() {
			a, errA := maint.Aggregate(ctx, f, d, 5)
			b, errB := recomp.Aggregate(ctx, f, d, 5)
			if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("aggregate %q by %s: maintained %+v (%v), recomputed %+v (%v)", expr, d, a, errA, b, errB)
			}
		}
		for _, d := range GroupDimensions() {
			o := GroupOptions{Filter: f, By: d, TopN: 5}
			a, errA := maint.Group(ctx, o)
			b, errB := recomp.Group(ctx, o)
			if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("group %q by %s: maintained %+v (%v), recomputed %+v (%v)", expr, d, a, errA, b, errB)
			}
		}
	}
}

// TestMaintainedEqualsRecomputedOnPublicCaptures: on every public capture,
// loaded whole, every list page, aggregation and grouping answered from
// the maintained state equals the one recomputed from the stores.
func TestMaintainedEqualsRecomputedOnPublicCaptures(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no public capture")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c := engine.New(engine.Config{}, nil)
			defer c.Close()
			if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); errors.Is(err, capture.ErrUnsupportedFormat) {
				return // not pcap or pcapng: no store to compare
			} else if err != nil {
				t.Fatal(err)
			}
			c.Wait()
			maint, recomp := queriers(c)
			compareAnswers(t, maint, recomp, equivFilters, true)
		})
	}
}

// TestMaintainedEqualsRecomputedWhileLoading feeds a generated capture
// (calls of every kind, with RTP) frame by frame and compares the answers
// every few hundred frames: the maintained state, updated only by the
// dialogs and streams that changed since the last query, equals a
// recomputation from scratch at every point. A second run caps the store
// at 10 dialogs, so dialogs are evicted as it goes.
func TestMaintainedEqualsRecomputedWhileLoading(t *testing.T) {
	p, _ := testgen.Capture(t, gen.Small(5))
	for _, tc := range []struct {
		name string
		cfg  engine.Config
	}{
		{"whole store", engine.Config{}},
		{"evicting at 10 dialogs", engine.Config{Dialog: dialog.Config{MaxDialogs: 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := engine.New(tc.cfg, nil)
			defer c.Close()
			r, err := capture.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			maint, recomp := queriers(c)
			checks := 0
			for i := 1; ; i++ {
				f, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				c.HandleFrame(f)
				if i%400 == 0 {
					compareAnswers(t, maint, recomp, []string{"", "problems", "rtp.mos < 4.2", "state == Failed"}, i%1600 == 0)
					checks++
				}
			}
			compareAnswers(t, maint, recomp, equivFilters, true)
			if checks < 10 {
				t.Fatalf("compared at %d points, want at least 10", checks)
			}
			if tc.cfg.Dialog.MaxDialogs > 0 && c.Dialogs().Stats().Evicted == 0 {
				t.Fatal("no dialog was evicted")
			}
		})
	}
}

// emptyNil makes an empty page's slices nil: the recomputing paths differ
// among themselves there, and the tools send [] for both.
func emptyNil(p Page) Page {
	if len(p.Rows) == 0 {
		p.Rows = nil
	}
	if len(p.ByMethod) == 0 {
		p.ByMethod = nil
	}
	return p
}

// TestMaintainedStateStaysBounded: past maxMemos filters the least recently
// used memo goes, and a tally or grouping with more buckets than
// maxKeptBuckets is answered and not kept; the answers stay equal to the
// recomputed ones.
func TestMaintainedStateStaysBounded(t *testing.T) {
	p, _ := testgen.Capture(t, gen.Small(5))
	c := engine.New(engine.Config{}, nil)
	defer c.Close()
	if err := c.LoadFiles(context.Background(), []string{p}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	saved := maxKeptBuckets
	maxKeptBuckets = 3
	defer func() { maxKeptBuckets = saved }()
	maint, recomp := queriers(c)
	var filters []string
	for i := 0; i < maxMemos+4; i++ {
		filters = append(filters, "msg_count > "+strconv.Itoa(i))
	}
	compareAnswers(t, maint, recomp, filters, true)
	m := maint.maintained()
	if len(m.memos) != maxMemos {
		t.Errorf("memos kept: got %d, want %d", len(m.memos), maxMemos)
	}
	for k, mm := range m.memos {
		for d, a := range mm.aggs {
			if n := len(a.t.Text) + len(a.t.Codes) + len(a.t.Addrs); n > maxKeptBuckets {
				t.Errorf("%s: tally by %s kept with %d buckets", k, d, n)
			}
		}
		if _, ok := mm.aggs[DimFromUser]; ok && mm.total > maxKeptBuckets {
			t.Errorf("%s: the tally by from.user (one bucket per caller, %d dialogs) was kept", k, mm.total)
		}
		for d, g := range mm.groups {
			if len(g.accs) > maxKeptBuckets {
				t.Errorf("%s: grouping by %s kept with %d groups", k, d, len(g.accs))
			}
		}
	}
}

// TestMaintainedAnswersWhileTheLoaderWrites queries from two goroutines
// while the engine's loader writes a generated capture in the background
// (run with -race: the change logs are drained while the writer fills
// them), then compares every answer once the load ended.
func TestMaintainedAnswersWhileTheLoaderWrites(t *testing.T) {
	p, _ := testgen.Capture(t, gen.Small(7))
	c := engine.New(engine.Config{}, nil)
	defer c.Close()
	maint, recomp := queriers(c)
	if err := c.LoadFiles(context.Background(), []string{p}); err != nil {
		t.Fatal(err)
	}
	f, err := maint.CompileKinds(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	errs := make(chan error, 2)
	for g := 0; g < 2; g++ {
		go func() {
			for n := 0; ; n++ {
				select {
				case <-c.Done():
					errs <- nil
					return
				default:
				}
				if _, err := maint.List(ctx, ListOptions{Filter: f, Limit: 5}); err != nil {
					errs <- err
					return
				}
				if _, err := maint.Group(ctx, GroupOptions{By: DimNextHop, Metrics: []Metric{MetricCount, MetricASR}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for g := 0; g < 2; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	c.Wait()
	compareAnswers(t, maint, recomp, equivFilters, true)
}

// TestMaintainedOrderWhenDialogsOpenOutOfOrder feeds synthetic dialogs
// whose Call-IDs run backwards within each millisecond (so a batch's first
// dialog sorts before the last one kept), comparing every page after each
// batch of 100: the maintained order merges them into place.
func TestMaintainedOrderWhenDialogsOpenOutOfOrder(t *testing.T) {
	s := dialog.New(dialog.Config{MaxDialogs: 5000})
	th := filter.DefaultThresholds()
	maint, recomp := New(s, nil, th), New(s, nil, th)
	recomp.recompute = true
	for i := 0; i < 1200; i++ {
		synthDialog(t, s, i, 8)
		if i%100 == 99 {
			compareAnswers(t, maint, recomp, []string{"", "state == Failed"}, false)
		}
	}
	for i := 0; i < 8; i++ {
		synthDialog(t, s, 1200+i, 8)
	}
	compareAnswers(t, maint, recomp, []string{"", "state == Failed"}, true)
}

// TestMaintainedFollowsEvidenceThatChangesNoDialog feeds captures frame by
// frame whose evidence reaches a dialog's diagnosis without a SIP message
// or an RTP packet of that dialog: an ICMP error quoting its request
// (icmp_unreachable, testdata/made) and STUN/TURN evidence read by the
// media diagnosis (testdata/stun). After every frame the maintained answers
// equal recomputed ones.
func TestMaintainedFollowsEvidenceThatChangesNoDialog(t *testing.T) {
	for _, name := range []string{"made/icmp-port-unreachable.pcap", "stun/turn-relayed-call.pcapng"} {
		t.Run(name, func(t *testing.T) {
			c := engine.New(engine.Config{}, nil)
			defer c.Close()
			r, err := capture.Open(filepath.Join(testcap.Root(), "testdata", filepath.FromSlash(name)))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			maint, recomp := queriers(c)
			frames := 0
			for {
				f, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				c.HandleFrame(f)
				frames++
				compareAnswers(t, maint, recomp, equivFilters, false)
			}
			compareAnswers(t, maint, recomp, equivFilters, true)
			if frames < 10 {
				t.Fatalf("%d frames read", frames)
			}
		})
	}
}
