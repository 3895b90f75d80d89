package captures

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/sdk"
)

// cpSweepTools provisions the bundle over capture with root and the sweep
// bounds lim, and returns its tools and its sweeper (for a test's reader
// and clock).
func cpSweepTools(t *testing.T, capture *engine.Capture, root string, lim sdk.SweepLimits) (map[string]sdk.Tool, *sweeper) {
	t.Helper()
	env := sdk.NewEnv(sdk.EnvOptions{Services: []any{capture}, FileRoot: sdk.NewFileRoot(root, nil), Limits: sdk.Limits{Sweep: lim}})
	d := &deps{capture: capture, root: env.FileRoot(), log: env.Logger(), sweeps: newSweeper(context.Background(), env.FileRoot(), env.Limits().Sweep, filter.DefaultThresholds())}
	out := map[string]sdk.Tool{}
	for _, tl := range tools(d) {
		out[tl.Name] = tl
	}
	return out, d.sweeps
}

// cpListMatched is list_dialogs' total_matched and first row over a file
// loaded alone by path (not through the sweep): the truth a sweep's
// per-file counts are checked against.
func cpListMatched(t *testing.T, path, expr string) (int, string) {
	t.Helper()
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{path}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	var ms analysis.MediaSource
	if m := c.Media(); m != nil {
		ms = m
	}
	q := query.New(c.Dialogs(), ms, filter.DefaultThresholds())
	f, err := q.Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := q.List(context.Background(), query.ListOptions{Filter: f, Order: dialog.ByCreated, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) == 0 {
		return 0, ""
	}
	return p.TotalMatched, p.Rows[0].CallID
}

// cpSweepRoot is a root of five public captures, a file named like a
// capture that is not one (garbage.pcap) and sip-proxy.pcap cut inside
// its sixth record (truncated.pcap: 3235 of 6893 bytes, the pcap header
// and five whole records, frames 1-5 with the first INVITE of
// 75104938772201062721@10.33.6.101; tshark: "appears to have been cut
// short in the middle of a packet", one INVITE Call-ID read).
func cpSweepRoot(t *testing.T) string {
	root := cpRoot(t, "sip_call.pcap", "sip-auth-failure.pcapng", "register-invite-reinvite-bye.pcap", "sip-register.pcap", "sip-proxy.pcap")
	if err := os.WriteFile(filepath.Join(root, "garbage.pcap"), []byte("this is not a capture file, whatever its name says\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "sip-proxy.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "truncated.pcap"), b[:3235], 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestFindInCapturesCountsAsListDialogsOnEachFileAlone: a sweep for
// INVITE dialogs over the root reads all seven files; each match is
// list_dialogs' total_matched (and first row) on the file loaded alone.
// By tshark (distinct Call-IDs of INVITE requests): sip_call.pcap 1,
// register-invite-reinvite-bye.pcap 1, sip-proxy.pcap 1,
// sip-auth-failure.pcapng 0, sip-register.pcap 0. garbage.pcap and
// truncated.pcap are listed unreadable (the truncated one keeps its one
// match), so complete is false. The loaded capture and its identity do
// not move.
func TestFindInCapturesCountsAsListDialogsOnEachFileAlone(t *testing.T) {
	loaded := cpLoad(t, sampleCapture)
	before, dialogsBefore := loaded.Identity(), loaded.Dialogs().Len()
	root := cpSweepRoot(t)
	tools, _ := cpSweepTools(t, loaded, root, sdk.SweepLimits{})
	const expr = "method == INVITE"
	var got SweepJob
	cpCall(t, tools["find_in_captures"], `{"filter":"`+expr+`","wait_seconds":60}`, &got)
	if got.Status != sweepDone || got.Sweep == nil || got.JobID != "sweep-1" || got.SchemaVersion != 2 {
		t.Fatalf("envelope: %+v", got)
	}
	s := got.Sweep
	if s.FilesTotal != 7 || s.FilesExamined != 7 || s.StoppedBecause != "" || s.Complete {
		t.Fatalf("sweep: %+v", s)
	}
	if got.Limits != (SweepLimitsOut{MaxFiles: 20, DeadlineMS: 30000}) {
		t.Errorf("limits: %+v", got.Limits)
	}
	want := map[string]int{"sip_call.pcap": 1, "register-invite-reinvite-bye.pcap": 1, "sip-proxy.pcap": 1, "truncated.pcap": 1}
	var names []string
	for _, m := range s.Matches {
		names = append(names, m.Filename)
		if m.DialogsMatched != want[m.Filename] {
			t.Errorf("%s: %d dialogs matched, tshark counts %d", m.Filename, m.DialogsMatched, want[m.Filename])
		}
		if m.Filename == "truncated.pcap" {
			if m.FirstCallID != "75104938772201062721@10.33.6.101" {
				t.Errorf("truncated.pcap first_call_id %q", m.FirstCallID)
			}
			continue
		}
		n, first := cpListMatched(t, filepath.Join(root, m.Filename), expr)
		if m.DialogsMatched != n || m.FirstCallID != first {
			t.Errorf("%s: sweep %d %q, list_dialogs on the file alone %d %q", m.Filename, m.DialogsMatched, m.FirstCallID, n, first)
		}
	}
	if strings.Join(names, ",") != "register-invite-reinvite-bye.pcap,sip-proxy.pcap,sip_call.pcap,truncated.pcap" {
		t.Errorf("matches %v", names)
	}
	for _, none := range []string{"sip-auth-failure.pcapng", "sip-register.pcap"} {
		if n, _ := cpListMatched(t, filepath.Join(root, none), expr); n != 0 {
			t.Errorf("%s: list_dialogs matches %d, the sweep none", none, n)
		}
	}
	if len(s.Unreadable) != 2 || s.Unreadable[0].Filename != "garbage.pcap" || s.Unreadable[1].Filename != "truncated.pcap" ||
		!strings.Contains(s.Unreadable[1].Reason, "stopped before the end") {
		t.Fatalf("unreadable: %+v", s.Unreadable)
	}
	for _, u := range s.Unreadable {
		if u.Reason == "" || len([]rune(u.Reason)) > 201 || strings.Contains(u.Reason, root) {
			t.Errorf("%s reason %q", u.Filename, u.Reason)
		}
	}
	if after := loaded.Identity(); after != before || loaded.Dialogs().Len() != dialogsBefore {
		t.Errorf("the loaded capture moved: identity %+v → %+v, dialogs %d → %d", before, after, dialogsBefore, loaded.Dialogs().Len())
	}
}

// TestFindInCapturesHandsAResultOverOnce: a finished result answered once;
// the next status call on its id is refused (unknown_id) saying it was
// handed over, and an id never issued is refused too.
func TestFindInCapturesHandsAResultOverOnce(t *testing.T) {
	tools, _ := cpSweepTools(t, cpLoad(t, sampleCapture), cpRoot(t, "sip_call.pcap"), sdk.SweepLimits{})
	var got SweepJob
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE","wait_seconds":60}`, &got)
	if got.Status != sweepDone || got.Sweep == nil || !got.Sweep.Complete || len(got.Sweep.Matches) != 1 {
		t.Fatalf("first answer: %+v", got)
	}
	e := cpRefused(t, tools["find_in_captures_status"], `{"job_id":"`+got.JobID+`"}`)
	if e.Code != sdk.CodeInvalidParams || e.StableKind() != sdk.KindUnknownID || !strings.Contains(e.Message, "handed over") {
		t.Errorf("second status: %+v", e)
	}
	e = cpRefused(t, tools["find_in_captures_status"], `{"job_id":"sweep-99"}`)
	if e.StableKind() != sdk.KindUnknownID || !strings.Contains(e.Message, "issued 1") {
		t.Errorf("unknown id: %+v", e)
	}
}

// gatedReader holds each file read until gate is closed, then reads it
// for real: the sweep is surely running when the first answer is built.
func gatedReader(s *sweeper) chan struct{} {
	gate := make(chan struct{})
	real := (&sweeper{root: s.root, th: s.th}).readFile
	s.read = func(ctx context.Context, name string, f *filter.Filter) (sweepFile, error) {
		<-gate
		return real(ctx, name, f)
	}
	return gate
}

// cpEnded waits for a held sweep's goroutine to end.
func cpEnded(t *testing.T, s *sweeper, id string) {
	t.Helper()
	s.mu.Lock()
	j := s.jobs[id]
	s.mu.Unlock()
	if j == nil {
		t.Fatalf("%s not held", id)
	}
	<-j.done
}

// TestFindInCapturesPollsARunningSweepToItsEnd: answered at once (no
// wait), the envelope says running with a handle; the status call waits
// for the end and hands the result over.
func TestFindInCapturesPollsARunningSweepToItsEnd(t *testing.T) {
	tools, s := cpSweepTools(t, cpLoad(t, sampleCapture), cpRoot(t, "sip_call.pcap", "sip-proxy.pcap"), sdk.SweepLimits{})
	gate := gatedReader(s)
	var got SweepJob
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE"}`, &got)
	if got.Status != sweepRunning || got.Sweep != nil || got.Progress.FilesTotal != 2 || !strings.Contains(got.Note, "find_in_captures_status") {
		t.Fatalf("handle: %+v", got)
	}
	close(gate)
	cpCall(t, tools["find_in_captures_status"], `{"job_id":"`+got.JobID+`","wait_seconds":60}`, &got)
	if got.Status != sweepDone || got.Sweep == nil || got.Sweep.FilesExamined != 2 || len(got.Sweep.Matches) != 2 || !got.Sweep.Complete {
		t.Fatalf("polled: %+v", got)
	}
}

// TestFindInCapturesStopsAtMaxFiles: max_files 2 of five files reads the
// first two by name and says why it stopped; a max_files above the
// server's ceiling is clamped to it.
func TestFindInCapturesStopsAtMaxFiles(t *testing.T) {
	root := cpRoot(t, "sip_call.pcap", "sip-auth-failure.pcapng", "register-invite-reinvite-bye.pcap", "sip-register.pcap", "sip-proxy.pcap")
	tools, _ := cpSweepTools(t, cpLoad(t, sampleCapture), root, sdk.SweepLimits{MaxFiles: 3})
	for _, tc := range []struct {
		name     string
		maxFiles int
		examined int
	}{{"asked 2", 2, 2}, {"asked past the ceiling of 3", 100, 3}, {"0 is the ceiling", 0, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			var got SweepJob
			cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE","wait_seconds":60,"max_files":`+cpJSON(tc.maxFiles)+`}`, &got)
			s := got.Sweep
			if s == nil || s.FilesExamined != tc.examined || s.FilesTotal != 5 || s.StoppedBecause != stopMaxFiles || s.Complete || got.Limits.MaxFiles != tc.examined {
				t.Fatalf("%+v %+v", got, s)
			}
			// Names in order: register-invite-reinvite-bye.pcap (1 INVITE),
			// sip-auth-failure.pcapng (0), sip-proxy.pcap (1).
			if len(s.Matches) == 0 || s.Matches[0].Filename != "register-invite-reinvite-bye.pcap" {
				t.Errorf("matches %+v", s.Matches)
			}
		})
	}
}

// blockingReader stands in for the file read: it signals that it holds a
// file and returns only when the sweep's context ends (a cancel or the
// deadline reaching inside the file).
func blockingReader(s *sweeper) chan string {
	in := make(chan string, 16)
	s.read = func(ctx context.Context, name string, f *filter.Filter) (sweepFile, error) {
		in <- name
		<-ctx.Done()
		return sweepFile{}, ctx.Err()
	}
	return in
}

// TestFindInCapturesStopsAtTheDeadlineInsideAFile: the deadline reaches
// the file in hand through the read's context; that file is not counted
// examined and the sweep says deadline.
func TestFindInCapturesStopsAtTheDeadlineInsideAFile(t *testing.T) {
	tools, s := cpSweepTools(t, cpLoad(t, sampleCapture), cpRoot(t, "sip_call.pcap", "sip-proxy.pcap"), sdk.SweepLimits{DeadlineMS: 50})
	blockingReader(s)
	var got SweepJob
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE","deadline_ms":600000,"wait_seconds":60}`, &got)
	if got.Limits.DeadlineMS != 50 || got.Sweep == nil || got.Sweep.StoppedBecause != stopDeadline || got.Sweep.FilesExamined != 0 || got.Sweep.Complete || got.Status != sweepDone {
		t.Fatalf("%+v %+v", got, got.Sweep)
	}
}

// TestCancelFindInCapturesStopsARunningSweep: cancel reaches the file in
// hand, answers status canceled with cancel_requested and hands the
// partial result over; cancelling it again is refused (handed over); a
// sweep that already ended answers its result (status done, nothing
// cancelled).
func TestCancelFindInCapturesStopsARunningSweep(t *testing.T) {
	tools, s := cpSweepTools(t, cpLoad(t, sampleCapture), cpRoot(t, "sip_call.pcap", "sip-proxy.pcap"), sdk.SweepLimits{DeadlineMS: sdk.MaxSweepDeadlineMS})
	in := blockingReader(s)
	var got SweepJob
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE"}`, &got)
	if name := <-in; name != "sip-proxy.pcap" {
		t.Fatalf("first file %q", name)
	}
	id := got.JobID
	cpCall(t, tools["cancel_find_in_captures"], `{"job_id":"`+id+`"}`, &got)
	if got.Status != sweepCanceled || !got.Progress.CancelRequested || got.Sweep == nil || got.Sweep.StoppedBecause != stopCanceled ||
		got.Sweep.FilesExamined != 0 || got.Sweep.Complete {
		t.Fatalf("%+v %+v", got, got.Sweep)
	}
	if e := cpRefused(t, tools["cancel_find_in_captures"], `{"job_id":"`+id+`"}`); e.StableKind() != sdk.KindUnknownID {
		t.Errorf("second cancel: %+v", e)
	}
	// A finished one: its result waits for the status call.
	gate := gatedReader(s)
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE"}`, &got)
	close(gate)
	cpEnded(t, s, got.JobID)
	id = got.JobID
	cpCall(t, tools["cancel_find_in_captures"], `{"job_id":"`+id+`"}`, &got)
	if got.Status != sweepDone || got.Progress.CancelRequested || got.Sweep == nil || len(got.Sweep.Matches) != 2 || !got.Sweep.Complete {
		t.Errorf("cancel of a finished sweep: %+v", got)
	}
	if e := cpRefused(t, tools["find_in_captures_status"], `{"job_id":"`+id+`"}`); !strings.Contains(e.Message, "handed over") {
		t.Errorf("status after the cancel handed it over: %+v", e)
	}
}

// TestFindInCapturesRefusesAtTheRunningCap: with --mcp-sweep-max-running 2
// the third sweep is refused -32000 (not queued) and starts nothing; once
// one is cancelled a new one starts.
func TestFindInCapturesRefusesAtTheRunningCap(t *testing.T) {
	tools, s := cpSweepTools(t, cpLoad(t, sampleCapture), cpRoot(t, "sip_call.pcap"), sdk.SweepLimits{MaxRunning: 2, DeadlineMS: sdk.MaxSweepDeadlineMS})
	blockingReader(s)
	var a, b SweepJob
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE"}`, &a)
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE"}`, &b)
	e := cpRefused(t, tools["find_in_captures"], `{"filter":"method == INVITE"}`)
	if e.Code != sdk.CodeUnavailable || !strings.Contains(e.Message, "--mcp-sweep-max-running") {
		t.Fatalf("third: %+v", e)
	}
	cpCall(t, tools["cancel_find_in_captures"], `{"job_id":"`+a.JobID+`"}`, nil)
	var c SweepJob
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE"}`, &c)
	if c.JobID != "sweep-3" {
		t.Errorf("after a cancel: %+v", c)
	}
	cpCall(t, tools["cancel_find_in_captures"], `{"job_id":"`+b.JobID+`"}`, nil)
	cpCall(t, tools["cancel_find_in_captures"], `{"job_id":"`+c.JobID+`"}`, nil)
}

// cpClock is an injected clock.
type cpClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *cpClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *cpClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestFindInCapturesLetsAnUncollectedResultGoAfterTheRetention: on an
// injected clock, a finished result is still held at the retention (600
// s) and let go one second past it: the status call is refused saying so.
// With --mcp-sweep-max-held-results 1 a second sweep is refused while the
// first is held, and starts once it expired.
func TestFindInCapturesLetsAnUncollectedResultGoAfterTheRetention(t *testing.T) {
	tools, s := cpSweepTools(t, cpLoad(t, sampleCapture), cpRoot(t, "sip_call.pcap"), sdk.SweepLimits{MaxHeldResults: 1})
	clk := &cpClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.now = clk.now
	gate := gatedReader(s)
	var got SweepJob
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE"}`, &got)
	close(gate)
	cpEnded(t, s, got.JobID)
	if e := cpRefused(t, tools["find_in_captures"], `{"filter":"method == INVITE"}`); e.Code != sdk.CodeUnavailable || !strings.Contains(e.Message, "--mcp-sweep-max-held-results") {
		t.Fatalf("held cap: %+v", e)
	}
	clk.advance(600 * time.Second)
	s.mu.Lock()
	s.expireLocked()
	_, held := s.jobs[got.JobID]
	s.mu.Unlock()
	if !held {
		t.Fatal("let go at the retention, not past it")
	}
	clk.advance(time.Second)
	e := cpRefused(t, tools["find_in_captures_status"], `{"job_id":"`+got.JobID+`"}`)
	if e.StableKind() != sdk.KindUnknownID || !strings.Contains(e.Message, "600 s uncollected") {
		t.Fatalf("expired: %+v", e)
	}
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE","wait_seconds":60}`, &got)
	if got.JobID != "sweep-2" || got.Status != sweepDone {
		t.Errorf("after expiry: %+v", got)
	}
}

// TestFindInCapturesRefusals: each refusal with its code, before any sweep
// starts (the next id stays sweep-1).
func TestFindInCapturesRefusals(t *testing.T) {
	tools, s := cpSweepTools(t, cpLoad(t, sampleCapture), cpRoot(t, "sip_call.pcap"), sdk.SweepLimits{})
	for _, tc := range []struct {
		name, tool, args string
		kind             sdk.Kind
	}{
		{"a filter that does not compile", "find_in_captures", `{"filter":"method == "}`, sdk.KindInvalidFilter},
		{"an empty filter", "find_in_captures", `{"filter":""}`, sdk.KindMissingArgument},
		{"no filter", "find_in_captures", `{}`, ""},
		{"negative max_files", "find_in_captures", `{"filter":"method == INVITE","max_files":-1}`, ""},
		{"negative deadline_ms", "find_in_captures", `{"filter":"method == INVITE","deadline_ms":-1}`, ""},
		{"negative wait_seconds", "find_in_captures", `{"filter":"method == INVITE","wait_seconds":-5}`, ""},
		{"an unknown argument", "find_in_captures", `{"filter":"method == INVITE","password":"x"}`, ""},
		{"a status of an id never issued", "find_in_captures_status", `{"job_id":"sweep-1"}`, sdk.KindUnknownID},
		{"a cancel of an id never issued", "cancel_find_in_captures", `{"job_id":"sweep-7"}`, sdk.KindUnknownID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := cpRefused(t, tools[tc.tool], tc.args)
			if e.Code != sdk.CodeInvalidParams || (tc.kind != "" && e.StableKind() != tc.kind) {
				t.Errorf("code %d kind %s: %+v", e.Code, e.StableKind(), e)
			}
		})
	}
	if s.next != 0 {
		t.Errorf("%d sweeps started", s.next)
	}
	noRoot := cpTools(t, cpLoad(t, sampleCapture), "", sdk.EnvOptions{})
	for n, args := range map[string]string{"find_in_captures": `{"filter":"method == INVITE"}`, "find_in_captures_status": `{"job_id":"sweep-1"}`, "cancel_find_in_captures": `{"job_id":"sweep-1"}`} {
		if e := cpRefused(t, noRoot[n], args); e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, "disabled") {
			t.Errorf("%s without a root: %+v", n, e)
		}
	}
}

// TestFindInCapturesStopsWithTheServer: the server's life ending (the
// context Provision got) stops a running sweep inside its file, with
// stopped_because shutdown and the file in hand not counted.
func TestFindInCapturesStopsWithTheServer(t *testing.T) {
	tools, s := cpSweepTools(t, cpLoad(t, sampleCapture), cpRoot(t, "sip_call.pcap"), sdk.SweepLimits{DeadlineMS: sdk.MaxSweepDeadlineMS})
	life, stop := context.WithCancel(context.Background())
	s.life = life
	in := blockingReader(s)
	var got SweepJob
	cpCall(t, tools["find_in_captures"], `{"filter":"method == INVITE"}`, &got)
	<-in
	stop()
	cpCall(t, tools["find_in_captures_status"], `{"job_id":"`+got.JobID+`","wait_seconds":60}`, &got)
	if got.Status != sweepDone || got.Sweep == nil || got.Sweep.StoppedBecause != stopShutdown || got.Sweep.FilesExamined != 0 || got.Sweep.Complete {
		t.Fatalf("%+v %+v", got, got.Sweep)
	}
}

// TestReadScratchHonoursItsContextInsideTheFile: the scratch read of
// sipp-branch-scenario.pcapng (3.7 MB) under a context already ended stops
// inside the file: fewer dialogs than the whole file's read. Cancellation
// and the deadline reach the engine's load, not only the gaps between
// files.
func TestReadScratchHonoursItsContextInsideTheFile(t *testing.T) {
	root := cpRoot(t, "sipp-branch-scenario.pcapng")
	s := newSweeper(context.Background(), sdk.NewFileRoot(root, nil), sdk.DefaultSweepLimits(), filter.DefaultThresholds())
	all, err := s.readFile(context.Background(), "sipp-branch-scenario.pcapng", nil)
	if err != nil || all.matched == 0 || all.partial != "" {
		t.Fatalf("whole read: %+v %v", all, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cut, err := s.readFile(ctx, "sipp-branch-scenario.pcapng", nil)
	if err == nil && cut.matched >= all.matched {
		t.Errorf("a read under an ended context matched %d dialogs, the whole file %d", cut.matched, all.matched)
	}
}
