package tests

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// TestListDialogsDuringLoadE2E calls list_dialogs again and again
// through the built binary while the bench generator's carrier capture
// (written gzip-compressed, so the load takes a few seconds) loads, and
// checks the honesty rules at every step: an answer taken before the
// source is exhausted says source_exhausted false, never truncated false
// and never complete true; its rows are the generator's Call-IDs, each
// once; by_method and aggregate_dialogs' buckets add up to total_matched;
// total_matched never shrinks. A cursor walk started at the first step is
// continued one page per step across the load and finished afterwards: it
// yields every one of the generator's dialogs exactly once (asking again
// from the same cursor when a mid-load page comes back with next_cursor
// null, see TestTailAndSearchByTimeDuringLoadE2E). The Call-ID
// completion is read at every step too: never cached, its total follows the
// store and ends at the generator's count. A subscription to the dialog
// list, taken before the load, gets one notification per one-second window
// while the store grows and none once the source is exhausted.
func TestListDialogsDuringLoadE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and loads a large capture")
	}
	t.Parallel() // shares only the generated capture, read-only
	path, ans := loadingCapture(t)
	want := map[string]bool{}
	for _, d := range ans.Dialogs {
		want[d.CallID] = true
	}

	s, notes := startLive(t, "-N", "--mcp", "-I", path)
	const liveURI = "sipnab://live/dialogs"
	if a := s.rpc("resources/subscribe", map[string]any{"uri": liveURI}); a.Error != nil {
		t.Fatalf("subscribe: %+v", a.Error)
	}
	subscribed := time.Now()
	var exhaustedAt time.Time
	ref := resourceRef("sipnab://live/dialogs/{call_id}")
	walk := map[string]int{} // Call-ID -> times the cursor walk returned it
	cursor := ""
	walkDone := false
	step := func(t *testing.T, args map[string]any) (page map[string]any, exhausted bool) {
		t.Helper()
		m, _ := s.on(t).ok("list_dialogs", args)
		ex, ok := m["source_exhausted"].(bool)
		if !ok {
			t.Fatalf("no source_exhausted in %v", m)
		}
		if !ex {
			if m["truncated"] == false {
				t.Fatalf("truncated false while the source is not exhausted: %v", m)
			}
			if m["complete"] == true {
				t.Fatalf("complete true while the source is not exhausted")
			}
		}
		return m, ex
	}
	checkPage := func(t *testing.T, m map[string]any) []string {
		t.Helper()
		rows, _ := m["dialogs"].([]any)
		var ids []string
		inPage := map[string]bool{}
		for _, r := range rows {
			id, _ := r.(map[string]any)["call_id"].(string)
			if !want[id] {
				t.Errorf("row %q: not a generated Call-ID", id)
			}
			if inPage[id] {
				t.Errorf("row %q twice in one page", id)
			}
			inPage[id] = true
			ids = append(ids, id)
		}
		total, _ := m["total_matched"].(float64)
		if ret, _ := m["returned"].(float64); int(ret) != len(rows) || len(rows) > int(total) {
			t.Errorf("returned %v, %d rows, total_matched %v", m["returned"], len(rows), total)
		}
		sum := 0
		bm, _ := m["by_method"].([]any)
		for _, b := range bm {
			n, _ := b.(map[string]any)["count"].(float64)
			sum += int(n)
		}
		if sum != int(total) {
			t.Errorf("by_method adds up to %d, total_matched %v", sum, total)
		}
		return ids
	}

	// walkPage takes one page of the 7-row cursor walk. A page that
	// reaches the current end of the store during the load comes with
	// next_cursor null; the walk then asks again from the same cursor and
	// expects that page's rows first (pending), then what arrived since.
	var pending []string
	caughtUp := 0
	walkPage := func(t *testing.T) {
		t.Helper()
		args := map[string]any{"limit": 7}
		if cursor != "" {
			args["cursor"] = cursor
		}
		wm, wex := step(t, args)
		ids := checkPage(t, wm)
		if len(ids) < len(pending) {
			t.Fatalf("asked again from the same cursor: %d rows where %d were", len(ids), len(pending))
		}
		for i, id := range ids {
			if i < len(pending) {
				if id != pending[i] {
					t.Fatalf("asked again from the same cursor: row %d is %s, was %s", i, id, pending[i])
				}
				continue
			}
			walk[id]++
		}
		pending = nil
		next, _ := wm["next_cursor"].(string)
		switch {
		case next != "":
			cursor = next
		case wex:
			if wm["truncated"] != false {
				t.Errorf("last page of the walk: truncated %v, want false", wm["truncated"])
			}
			walkDone = true
		default:
			// Mid-load, the last page of what is loaded carries the cursor
			// to continue from (sdk Page.ResumeAt): null only when there is
			// nothing to resume from (no row yet, no cursor given).
			if len(ids) > 0 || cursor != "" {
				t.Errorf("mid-load page at the end of what is loaded: next_cursor null (rows %d, cursor %q), want the cursor to continue from", len(ids), cursor)
			}
			pending = ids
			caughtUp++
		}
	}

	lastTotal, lastCompletion := 0, 0
	midLoad, midLoadCompletions := 0, 0
	for steps := 0; ; steps++ {
		if steps > 100000 {
			t.Fatal("the load does not end")
		}
		m, exhausted := step(t, map[string]any{"limit": 50})
		checkPage(t, m)
		total := int(m["total_matched"].(float64))
		if total < lastTotal {
			t.Errorf("step %d: total_matched %d after %d", steps, total, lastTotal)
		}
		lastTotal = total

		agg, _ := s.ok("aggregate_dialogs", map[string]any{"group_by": "method"})
		if agg["source_exhausted"] == false && (agg["truncated"] == false || agg["complete"] == true) {
			t.Errorf("step %d: aggregate_dialogs claims a whole answer mid-load: %v", steps, agg)
		}
		sum := 0
		buckets, _ := agg["buckets"].([]any)
		for _, b := range buckets {
			sum += int(b.(map[string]any)["count"].(float64))
		}
		if other, _ := agg["other_count"].(float64); sum+int(other) != int(agg["total_matched"].(float64)) {
			t.Errorf("step %d: aggregate buckets %d + other %v != total_matched %v", steps, sum, other, agg["total_matched"])
		}

		c := s.complete(ref, "call_id", "")
		if c.Total < lastCompletion {
			t.Errorf("step %d: completion total %d after %d", steps, c.Total, lastCompletion)
		}
		lastCompletion = c.Total
		if len(c.Values) > 100 {
			t.Errorf("step %d: %d completion values, want at most 100", steps, len(c.Values))
		}

		// One page of the cursor walk per step.
		if !walkDone {
			walkPage(t)
		}

		if !exhausted {
			midLoad++
			if c.Total < len(ans.Dialogs) {
				midLoadCompletions++
			}
			continue
		}
		exhaustedAt = time.Now()
		if m["truncated"] != true || total != len(ans.Dialogs) {
			t.Errorf("after the load: truncated %v total_matched %d, want true (50 of %d) and %d", m["truncated"], total, len(ans.Dialogs), len(ans.Dialogs))
		}
		break
	}
	t.Logf("%d steps mid-load (%d completions below the final count)", midLoad, midLoadCompletions)
	if midLoad < 3 {
		t.Fatalf("only %d answers were taken mid-load: the test proved too little; load a bigger capture", midLoad)
	}
	if midLoadCompletions == 0 {
		t.Error("no completion taken mid-load was short of the final count: cannot tell never-cached from cached")
	}
	if c := s.complete(ref, "call_id", ""); c.Total != len(ans.Dialogs) {
		t.Errorf("completion after the load: total %d, want the generator's %d (cached?)", c.Total, len(ans.Dialogs))
	}

	// The subscription to the dialog list: one notification per one-second
	// window while the store grew (a window starts when the previous
	// notification left; polls are 100 ms apart, so a window lasts at most
	// about 1.1 s), at most the one held change after the source was
	// exhausted, then silence.
	quietFrom := exhaustedAt.Add(2500 * time.Millisecond)
	time.Sleep(time.Until(quietFrom.Add(3 * time.Second)))
	got := notes()
	var during, after int
	for i, n := range got {
		if !bytes.Contains(n.line, []byte(`"method":"notifications/resources/updated"`)) || !bytes.Contains(n.line, []byte(liveURI)) {
			t.Errorf("notification %d: %s, want resources/updated for %s", i, n.line, liveURI)
		}
		if i > 0 && n.at.Sub(got[i-1].at) < 900*time.Millisecond {
			t.Errorf("notifications %d and %d only %v apart: more than one per window", i-1, i, n.at.Sub(got[i-1].at))
		}
		switch {
		case n.at.After(quietFrom):
			t.Errorf("notification %v after the source was exhausted", n.at.Sub(exhaustedAt))
		case n.at.After(exhaustedAt):
			after++
		default:
			during++
		}
	}
	load := exhaustedAt.Sub(subscribed)
	t.Logf("load %v after subscribing: %d notifications during, %d after", load.Round(time.Millisecond), during, after)
	if after > 1 {
		t.Errorf("%d notifications after the source was exhausted, want at most the held one", after)
	}
	// Slack for a shared two-core machine: a window may stretch to 1.5 s.
	if min := int(load.Seconds() / 1.5); during < min || during == 0 {
		t.Errorf("a load of %v gave %d notifications, want one per window (at least %d)", load.Round(time.Millisecond), during, min)
	}

	// Finish the walk now that the source is read whole.
	for pages := 0; !walkDone; pages++ {
		if pages > 10000 {
			t.Fatal("the walk does not end")
		}
		walkPage(t)
	}
	t.Logf("the 7-row walk reached the end of what was loaded %d times (and continued from next_cursor)", caughtUp)
	var missing, twice []string
	for id := range want {
		switch walk[id] {
		case 0:
			missing = append(missing, id)
		case 1:
		default:
			twice = append(twice, fmt.Sprintf("%s x%d", id, walk[id]))
		}
	}
	if len(missing) > 0 || len(twice) > 0 || len(walk) != len(want) {
		t.Errorf("cursor walk across the load: %d distinct of %d; missing %d (%.5q), repeated %d (%.5q)", len(walk), len(want), len(missing), missing, len(twice), twice)
	}
}

// TestTailAndSearchByTimeDuringLoadE2E walks tail_dialogs and
// search_by_time through the binary while the carrier capture loads, one
// page per step, and on to their ends once it is loaded. search_by_time
// (created_at, never moves) yields every generated dialog exactly once.
// tail_dialogs (updated_at: a dialog comes again when it changes) loses
// nothing: every dialog is seen, and the last row seen for each carries its
// final updated_at and msg_count (as list_dialogs reports them after the
// load), so no update made while the walk was under way was skipped.
func TestTailAndSearchByTimeDuringLoadE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and loads a large capture")
	}
	t.Parallel() // shares only the generated capture, read-only
	path, ans := loadingCapture(t)
	s := startRaw(t, "-N", "--mcp", "-I", path)

	type walk struct {
		tool, stamp string
		args        map[string]any
		cursor      string
		done        bool
		last        time.Time
		seen        map[string]int
		lastRow     map[string]map[string]any
		// A page that reaches the current end of the store during the load
		// comes with next_cursor null (as every list tool's does). The walk
		// then asks again from the same cursor: pending holds that page's
		// rows, which the next answer repeats first; cursorAt is the order
		// position of the cursor.
		pending  []string
		cursorAt time.Time
		caughtUp int
	}
	walks := []*walk{
		{tool: "search_by_time", stamp: "created_at", args: map[string]any{"start": "2000-01-01T00:00:00Z", "limit": 11}},
		{tool: "tail_dialogs", stamp: "updated_at", args: map[string]any{"limit": 11}},
	}
	for _, w := range walks {
		w.seen, w.lastRow = map[string]int{}, map[string]map[string]any{}
	}
	// page takes one page of w; loaded says the source was exhausted
	// before the call (so an empty page is the end).
	page := func(t *testing.T, w *walk, loaded bool) {
		t.Helper()
		args := map[string]any{}
		for k, v := range w.args {
			args[k] = v
		}
		if w.cursor != "" {
			args["cursor"] = w.cursor
		}
		m, _ := s.on(t).ok(w.tool, args)
		if m["source_exhausted"] == false && m["truncated"] == false {
			t.Fatalf("%s: truncated false while the source is not exhausted", w.tool)
		}
		rows, _ := m["dialogs"].([]any)
		repeat := w.pending
		w.pending = nil
		if len(repeat) > 0 {
			w.last = w.cursorAt
		}
		var ids []string
		for i, r := range rows {
			row := r.(map[string]any)
			id, _ := row["call_id"].(string)
			ids = append(ids, id)
			if i < len(repeat) {
				if id != repeat[i] {
					t.Fatalf("%s: asked again from the same cursor, row %d is %s, was %s", w.tool, i, id, repeat[i])
				}
				w.last, _ = time.Parse(time.RFC3339Nano, fmt.Sprint(row[w.stamp]))
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(row[w.stamp]))
			if err != nil || at.Before(w.last) {
				t.Fatalf("%s: %s %s %v out of order after %v (%v)", w.tool, id, w.stamp, row[w.stamp], w.last, err)
			}
			w.last = at
			w.seen[id]++
			w.lastRow[id] = row
		}
		next, _ := m["next_cursor"].(string)
		if next != "" {
			w.cursor, w.cursorAt = next, w.last
		}
		switch {
		case w.tool == "search_by_time" && next == "" && m["source_exhausted"] == true:
			w.done = true
		case w.tool == "search_by_time" && next == "":
			if len(rows) > 0 || w.cursor != "" {
				t.Errorf("search_by_time mid-load: next_cursor null (rows %d), want the cursor to continue from", len(rows))
			}
			if len(rows) < len(repeat) {
				t.Fatalf("search_by_time: asked again from the same cursor, %d rows where %d were", len(rows), len(repeat))
			}
			w.pending = ids
			w.caughtUp++
		case w.tool == "tail_dialogs" && loaded && len(rows) == 0:
			w.done = true
		}
	}
	midLoad := 0
	for steps := 0; ; steps++ {
		if steps > 100000 {
			t.Fatal("the load does not end")
		}
		st, _ := s.ok("capture_status", nil)
		loaded := st["source_exhausted"] == true
		for _, w := range walks {
			if !w.done {
				page(t, w, loaded)
			}
		}
		if !loaded {
			midLoad++
			continue
		}
		if walks[0].done && walks[1].done {
			break
		}
	}
	t.Logf("%d steps mid-load; search_by_time reached the end of what was loaded %d times (and continued from next_cursor); tail_dialogs returned %d rows for %d dialogs",
		midLoad, walks[0].caughtUp, sum(walks[1].seen), len(walks[1].seen))
	if midLoad < 3 {
		t.Fatalf("only %d steps mid-load: the walks were not carried across the load", midLoad)
	}

	// The final state of every dialog, from list_dialogs after the load.
	final := map[string]map[string]any{}
	for cursor := ""; ; {
		args := map[string]any{"limit": 1000, "fields": []string{"updated_at", "msg_count"}}
		if cursor != "" {
			args["cursor"] = cursor
		}
		m, _ := s.ok("list_dialogs", args)
		rows, _ := m["dialogs"].([]any)
		for _, r := range rows {
			row := r.(map[string]any)
			final[row["call_id"].(string)] = row
		}
		next, _ := m["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(final) != len(ans.Dialogs) {
		t.Fatalf("list_dialogs after the load: %d dialogs, generator %d", len(final), len(ans.Dialogs))
	}
	for _, d := range ans.Dialogs {
		if n := walks[0].seen[d.CallID]; n != 1 {
			t.Errorf("search_by_time: %s returned %d times, want once", d.CallID, n)
		}
		row, ok := walks[1].lastRow[d.CallID]
		if !ok {
			t.Errorf("tail_dialogs: %s never returned", d.CallID)
			continue
		}
		if f := final[d.CallID]; fmt.Sprint(row["updated_at"], row["msg_count"]) != fmt.Sprint(f["updated_at"], f["msg_count"]) {
			t.Errorf("tail_dialogs: %s last seen at updated_at %v msg_count %v; final %v %v (an update was skipped)",
				d.CallID, row["updated_at"], row["msg_count"], f["updated_at"], f["msg_count"])
		}
	}
	if len(walks[0].seen) != len(ans.Dialogs) || len(walks[1].seen) != len(ans.Dialogs) {
		t.Errorf("distinct dialogs: search_by_time %d, tail_dialogs %d, generator %d", len(walks[0].seen), len(walks[1].seen), len(ans.Dialogs))
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
