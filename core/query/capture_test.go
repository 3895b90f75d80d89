package query

import (
	"context"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/internal/testgen"
)

func TestMain(m *testing.M) { os.Exit(testgen.Run(m)) }

// loadGenerated loads a generated capture (written once for the package)
// whole and returns the engine with the generator's answers.
func loadGenerated(t *testing.T, cfg gen.Config) (*engine.Capture, *gen.Answers) {
	t.Helper()
	p, ans := testgen.Capture(t, cfg)
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{p}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	return c, ans
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// TestRecordOnGeneratedCapture checks every record field the generator
// has an answer for, dialog by dialog.
func TestRecordOnGeneratedCapture(t *testing.T) {
	c, ans := loadGenerated(t, gen.Small(3))
	q := New(c.Dialogs(), c.Media(), filter.DefaultThresholds())
	if got := len(q.Rows(dialog.ByCreated)); got != len(ans.Dialogs) {
		t.Fatalf("dialogs: got %d, want %d", got, len(ans.Dialogs))
	}
	for _, d := range ans.Dialogs {
		t.Run(string(d.Kind)+"/"+d.CallID, func(t *testing.T) {
			row, ok := c.Dialogs().Lookup(d.CallID)
			if !ok {
				t.Fatal("not in the store")
			}
			r := q.Record(&row)
			str := func(f filter.Field) string { v, _ := r.Str(f); return v }
			if got := str(filter.FieldMethod); got != d.Method {
				t.Errorf("method: got %s, want %s", got, d.Method)
			}
			if got := str(filter.FieldState); got != d.State {
				t.Errorf("state: got %s, want %s", got, d.State)
			}
			if got, want := str(filter.FieldSrcIP)+"|"+str(filter.FieldDstIP), hostOf(d.Src)+"|"+hostOf(d.Dst); got != want {
				t.Errorf("src|dst ip: got %s, want %s", got, want)
			}
			if got, _ := r.Num(filter.FieldMsgCount); int(got) != d.Messages {
				t.Errorf("msg_count: got %v, want %d", got, d.Messages)
			}
			checkOpt(t, r, filter.FieldPDD, d.PDDMs)
			checkOpt(t, r, filter.FieldSetupTime, d.SetupMs)
			checkOpt(t, r, filter.FieldDuration, d.ConversationMs)

			var streams []gen.Stream
			for _, k := range d.Streams {
				s, _ := ans.Stream(k)
				streams = append(streams, *s)
			}
			pk, hasPk := r.Num(filter.FieldRTPPackets)
			loss, _ := r.Num(filter.FieldRTPLoss)
			jit, _ := r.Num(filter.FieldRTPJitter)
			mos, hasMOS := r.Num(filter.FieldRTPMOS)
			orph, hasOrph := r.Bool(filter.FieldRTPOrphaned)
			if len(streams) == 0 {
				if hasPk || hasMOS || hasOrph {
					t.Errorf("media fields present without streams: packets %v mos %v orphaned %v", hasPk, hasMOS, hasOrph)
				}
			} else {
				var wantPk, wantLoss, wantJit float64
				wantMOS := math.Inf(1)
				var ssrcs []string
				for _, s := range streams {
					wantPk += float64(s.Packets)
					wantLoss = math.Max(wantLoss, s.LossPct)
					wantJit = math.Max(wantJit, s.JitterMs)
					wantMOS = math.Min(wantMOS, s.MOSG113)
					ssrcs = append(ssrcs, s.SSRC)
				}
				if pk != wantPk || !near(loss, wantLoss, 0.01) || !near(jit, wantJit, math.Max(0.05, wantJit*0.02)) {
					t.Errorf("packets/loss/jitter: got %v/%v/%v, want %v/%v/%v", pk, loss, jit, wantPk, wantLoss, wantJit)
				}
				if !hasMOS || !near(mos, wantMOS, 0.05) {
					t.Errorf("rtp.mos: got %v (%v), want the worst grounded %v", mos, hasMOS, wantMOS)
				}
				if !hasOrph || orph {
					t.Errorf("rtp.orphaned: got %v (%v), want false", orph, hasOrph)
				}
				var got []string
				r.Each(filter.FieldRTPSSRC, func(v string) bool { got = append(got, v); return false })
				slices.Sort(got)
				slices.Sort(ssrcs)
				if !slices.Equal(got, ssrcs) {
					t.Errorf("rtp.ssrc: got %v, want %v", got, ssrcs)
				}
				if v, _ := r.Value(DimRTPCodec); v != d.Codec {
					t.Errorf("rtp.codec bucket: got %q, want %q", v, d.Codec)
				}
			}
			oneWay, _ := r.Bool(filter.FieldOneWay)
			late, _ := r.Bool(filter.FieldLateMedia)
			if oneWay != slices.Contains(d.Problems, gen.ReasonOneWay) || late != slices.Contains(d.Problems, gen.ReasonLateMedia) {
				t.Errorf("one_way %v late_media %v, want problems %v", oneWay, late, d.Problems)
			}
		})
	}
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"problems", problemIDs(ans)},
		{"state == Failed", ans.FailedCalls},
	} {
		f, err := q.Compile(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := q.List(context.Background(), ListOptions{Filter: f})
		var got []string
		for _, r := range p.Rows {
			got = append(got, r.CallID)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func problemIDs(a *gen.Answers) []string {
	var out []string
	for _, p := range a.ProblemCalls {
		out = append(out, p.CallID)
	}
	slices.Sort(out)
	return out
}

func hostOf(addrPort string) string {
	i := len(addrPort) - 1
	for i >= 0 && addrPort[i] != ':' {
		i--
	}
	if i < 0 {
		return addrPort
	}
	return addrPort[:i]
}

func checkOpt(t *testing.T, r *Record, f filter.Field, wantMs *float64) {
	t.Helper()
	got, ok := r.Num(f)
	switch {
	case wantMs == nil && ok:
		t.Errorf("%s: got %v, want absent", f, got)
	case wantMs != nil && !ok:
		t.Errorf("%s: absent, want %v s", f, *wantMs/1000)
	case wantMs != nil && !near(got, *wantMs/1000, 0.0011):
		t.Errorf("%s: got %v s, want %v s", f, got, *wantMs/1000)
	}
}
