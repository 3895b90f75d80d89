package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/report"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testgen"
)

func TestMain(m *testing.M) { os.Exit(testgen.Run(m)) }

// answers is what a load of paths on cores answers, over every door a
// client reads the dialog store through: the --json-run document, every
// dialog's get_dialog detail, list_dialogs paged by cursor ten rows at a
// time (created and updated order), search_messages' first pages by cursor,
// find_problems' filter, aggregate and
// group by next hop with their counts, and the store's own counters. A
// querier made before the load asks while the load runs (its maintained
// state catches up) and answers again at the end, which must equal a fresh
// querier's.
func answers(t *testing.T, paths []string, cores int) []byte {
	t.Helper()
	ctx := context.Background()
	c := engine.New(engine.Config{Node: "test", Cores: cores}, nil)
	early := query.New(c.Dialogs(), c.Media(), filter.DefaultThresholds())
	if err := c.LoadFiles(ctx, paths); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := early.List(ctx, query.ListOptions{Limit: 3}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.Done():
		default:
			time.Sleep(time.Millisecond)
			continue
		}
		break
	}
	c.Wait()
	var out bytes.Buffer
	var doc bytes.Buffer
	if err := report.WriteJSON(&doc, c); err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(doc.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	run := d["run"].(map[string]any)
	run["elapsed_sec"] = 0
	run["capture_identity"].(map[string]any)["instance"] = ""
	put := func(name string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s: %s\n", name, b)
	}
	put("document", d)
	put("dialog stats", c.Dialogs().Stats())
	for _, id := range c.Dialogs().CallIDs() {
		det, _ := c.Dialogs().Get(id)
		put("get_dialog "+id, det)
	}
	problems, err := filter.CompileKinds(nil, filter.DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	for qi, q := range []*query.Querier{early, query.New(c.Dialogs(), c.Media(), filter.DefaultThresholds())} {
		for _, o := range []dialog.Order{dialog.ByCreated, dialog.ByUpdated} {
			for _, f := range []*filter.Filter{nil, problems} {
				var after *query.Cursor
				for page := 0; ; page++ {
					p, err := q.List(ctx, query.ListOptions{Filter: f, Order: o, After: after, Limit: 10})
					if err != nil {
						t.Fatal(err)
					}
					put(fmt.Sprintf("querier %d order %v problems %v page %d", qi, o, f != nil, page), p)
					if !p.More || len(p.Rows) == 0 {
						break
					}
					cur, err := query.ParseDialogCursor(query.CursorOf(&p.Rows[len(p.Rows)-1], o))
					if err != nil {
						t.Fatal(err)
					}
					after = &cur
				}
			}
		}
		var after *query.Cursor
		for page := 0; page < 4; page++ { // each page searches every message again
			p, err := q.Search(ctx, query.SearchOptions{Query: "bye", After: after, Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			put(fmt.Sprintf("querier %d search page %d", qi, page), p)
			if !p.More || len(p.Hits) == 0 {
				break
			}
			cur, err := query.ParseMessageCursor(p.Hits[len(p.Hits)-1].Cursor())
			if err != nil {
				t.Fatal(err)
			}
			after = &cur
		}
		agg, err := q.Aggregate(ctx, problems, query.DimResponseCode, 0)
		if err != nil {
			t.Fatal(err)
		}
		put(fmt.Sprintf("querier %d aggregate", qi), agg)
		g, err := q.Group(ctx, query.GroupOptions{By: query.DimNextHop})
		if err != nil {
			t.Fatal(err)
		}
		put(fmt.Sprintf("querier %d group", qi), g)
	}
	return out.Bytes()
}

// TestSIPPipelineKeepsEveryAnswer: with SIP parsed on workers and applied
// in order by the router (sipshard.go), every answer about the dialog
// store equals one core's, line for line, on every public capture at once
// and on generated signaling (no media: long runs of SIP go to the workers)
// and carrier-style captures (SIP between media: the pipeline drains at
// every media frame), on 2 and 3 cores, with batches of 1, 3 and the
// default number of packets and arenas from 2 KiB (most frames do not fit
// beside another) to the default; and on two cores with the router's media
// share given up at once (0 SDP events waited for), after 4, or (the
// default) after 1,024 events without a packet of its own (sharded.go).
func TestSIPPipelineKeepsEveryAnswer(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	var pub []string
	for _, n := range names {
		r, err := capture.Open(testcap.Public(n))
		if errors.Is(err, capture.ErrUnsupportedFormat) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		pub = append(pub, testcap.Public(n))
	}
	sig, _ := testgen.Capture(t, gen.Config{Seed: 3, Calls: 150, Duration: 2 * time.Second, Spacing: 5 * time.Millisecond, Registers: 20, NoMedia: true})
	small, _ := testgen.Capture(t, gen.Small(2))
	inputs := []struct {
		name  string
		paths []string
	}{
		{"every public capture together", pub},
		{"generated signaling", []string{sig}},
		{"generated small with media", []string{small}},
	}
	runs := []struct{ items, arena, queue, cores int }{
		{1, 2 << 10, 1024, 3}, {3, 2 << 10, 0, 2}, {3, 256 << 10, 4, 2}, {128, 192 << 10, 1024, 2}, {128, 192 << 10, 1024, 3},
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			want := answers(t, in.paths, 1)
			for _, b := range runs {
				restore := engine.SetSIPBatch(b.items, b.arena)
				restoreQ := engine.SetInlineQueueMax(b.queue)
				before := engine.SIPWorkerBatches()
				got := answers(t, in.paths, b.cores)
				if !bytes.Equal(got, want) {
					t.Errorf("batches of %d, %d bytes, share waits %d, %d cores: %s", b.items, b.arena, b.queue, b.cores, firstLineDiff(want, got))
				}
				if in.name != "generated small with media" && engine.SIPWorkerBatches() == before {
					t.Errorf("batches of %d, %d bytes, %d cores: no batch went to a worker", b.items, b.arena, b.cores)
				}
				restoreQ()
				restore()
			}
		})
	}
}

// firstLineDiff names the first line where two answers differ.
func firstLineDiff(want, got []byte) string {
	wl, gl := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := 0; i < len(wl) && i < len(gl); i++ {
		if !bytes.Equal(wl[i], gl[i]) {
			return fmt.Sprintf("line %d:\n  one core: %.400s\n  sharded:  %.400s", i+1, wl[i], gl[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d and %d lines", len(wl), len(gl))
}
