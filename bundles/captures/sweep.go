package captures

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/sdk"
)

// The background sweeps of find_in_captures (mcp-surface §3.3; the design
// notes' "Sweep job bounds" and "Sweep ceilings"). A sweep reads each
// capture file of the root, one after the other, into a scratch engine of
// its own (engine.New: its own dialog and stream stores, its own capture
// instance), counts the dialogs the filter matches there and lets the
// scratch engine go. The loaded capture, its stores and every cursor an
// agent holds are untouched: capture_identity does not move.
//
// A running sweep is one goroutine. The reference runs one OS thread per
// sweep so that a long read does not hold the single runtime thread its MCP
// server and REST API share; Go's scheduler multiplexes goroutines over the
// OS threads itself, so no thread is pinned (a goroutine blocked in a file
// read gets its own thread from the runtime while it blocks). What the
// running cap bounds is the same: concurrent reads and scratch stores.

// sweepSchemaVersion is the job envelope's schema version.
const sweepSchemaVersion = 2

// The states of a job and the reasons a sweep stops early.
const (
	sweepRunning  = "running"
	sweepDone     = "done"
	sweepCanceled = "canceled"

	stopDeadline = "deadline"
	stopMaxFiles = "max-files"
	stopCanceled = "canceled"
	stopShutdown = "shutdown"
)

// sweepTombstones bounds the remembered fate of ids no longer held
// (handed over, expired): past it the oldest is forgotten and a status
// call on it says only that the id is not held.
const sweepTombstones = 1024

// SweepLimitsOut are the bounds a sweep runs under, after clamping.
type SweepLimitsOut struct {
	MaxFiles   int `json:"max_files" desc:"files the sweep may read (the call's max_files clamped to --mcp-sweep-max-files)"`
	DeadlineMS int `json:"deadline_ms" desc:"milliseconds the sweep may run (the call's deadline_ms clamped to --mcp-sweep-deadline-ms)"`
}

// SweepProgress is where a sweep is.
type SweepProgress struct {
	FilesExamined   int   `json:"files_examined" desc:"files read to a verdict (matched, not matched or unreadable)"`
	FilesTotal      int   `json:"files_total" desc:"capture files in the root when the sweep started"`
	ElapsedMS       int64 `json:"elapsed_ms" desc:"milliseconds since the sweep started (to its end when it ended)"`
	CancelRequested bool  `json:"cancel_requested" desc:"cancel_find_in_captures was called on it"`
}

// SweepMatch is one file holding matching dialogs.
type SweepMatch struct {
	Filename       string `json:"filename" desc:"file name in the root (load it with open_capture or compare it with compare_captures)"`
	DialogsMatched int    `json:"dialogs_matched" desc:"dialogs of the file the filter matched (list_dialogs' total_matched on the file loaded alone)"`
	FirstCallID    string `json:"first_call_id" desc:"Call-ID of the earliest matching dialog (created_at order), verbatim"`
}

// SweepUnreadable is a file the sweep could not read to its end.
type SweepUnreadable struct {
	Filename string `json:"filename" desc:"file name in the root"`
	Reason   string `json:"reason" desc:"why, at most 200 characters; a file that stopped partway still lists its matches in matches"`
}

// SweepResult is a finished sweep's answer.
type SweepResult struct {
	Matches        []SweepMatch      `json:"matches" nonnull:"true" desc:"files with at least one matching dialog, by filename"`
	FilesExamined  int               `json:"files_examined" desc:"files read to a verdict"`
	FilesTotal     int               `json:"files_total" desc:"capture files in the root"`
	Unreadable     []SweepUnreadable `json:"unreadable" nonnull:"true" desc:"files that could not be read (or not to their end): never skipped silently"`
	StoppedBecause string            `json:"stopped_because,omitempty" enum:"deadline|max-files|canceled|shutdown" desc:"why the sweep stopped before every file; absent when it read them all"`
	Complete       bool              `json:"complete" desc:"every capture file of the root was read to its end: none left, none unreadable"`
}

// SweepJob is the job envelope every sweep tool answers with.
type SweepJob struct {
	JobID    string         `json:"job_id" desc:"sweep-<n>: poll with find_in_captures_status, stop with cancel_find_in_captures"`
	Status   string         `json:"status" enum:"running|done|canceled" desc:"running, done, or canceled (by cancel_find_in_captures)"`
	Filter   string         `json:"filter" desc:"the filter swept for, as given"`
	Limits   SweepLimitsOut `json:"limits" desc:"the bounds the sweep runs under"`
	Progress SweepProgress  `json:"progress" desc:"where the sweep is"`
	// Sweep is present once the sweep ended: the answer, handed over once.
	Sweep         *SweepResult `json:"sweep,omitempty" desc:"the result, once the sweep ended; handed over once (a later status call on the id is refused)"`
	Note          string       `json:"note" desc:"what to do next"`
	SchemaVersion int          `json:"schema_version" desc:"response schema version"`
}

// sweepJob is one sweep, held by the sweeper until handed over.
type sweepJob struct {
	id      string
	expr    string
	limits  SweepLimitsOut
	started time.Time
	cancel  context.CancelFunc
	done    chan struct{} // closed when the goroutine ended

	// Guarded by the sweeper's mu.
	examined        int
	total           int
	cancelRequested bool
	ended           time.Time
	result          *SweepResult
}

// sweeper holds the bundle's sweeps.
type sweeper struct {
	limits sdk.SweepLimits
	th     filter.Thresholds
	root   sdk.FileRoot
	// life ends when the server stops: running sweeps stop with
	// stopped_because "shutdown".
	life context.Context
	now  func() time.Time

	mu      sync.Mutex
	next    int
	jobs    map[string]*sweepJob
	running int
	gone    map[string]string // id → why it is no longer held
	goneFIF []string
	// read reads one file into a scratch engine; tests replace it.
	read func(ctx context.Context, name string, f *filter.Filter) (sweepFile, error)
}

func newSweeper(life context.Context, root sdk.FileRoot, limits sdk.SweepLimits, th filter.Thresholds) *sweeper {
	s := &sweeper{limits: limits, th: th, root: root, life: life, now: time.Now,
		jobs: map[string]*sweepJob{}, gone: map[string]string{}}
	s.read = s.readFile
	return s
}

// sweepFile is one file's verdict.
type sweepFile struct {
	matched     int
	firstCallID string
	// partial, when set, says why the read stopped before the file's end.
	partial string
}

// start compiles nothing (the caller did, once, with the run's
// thresholds), lists the root, checks the caps and starts the goroutine.
// The envelope answered is the job as it starts (running, nothing read):
// a call that does not wait answers its handle.
func (s *sweeper) start(expr string, f *filter.Filter, maxFiles, deadlineMS int) (*sweepJob, SweepJob, error) {
	l, err := s.root.List(0)
	if err != nil {
		return nil, SweepJob{}, err
	}
	var names []string
	for _, e := range l.Files {
		if isCaptureName(e.Name) {
			names = append(names, e.Name)
		}
	}
	s.mu.Lock()
	s.expireLocked()
	if s.running >= s.limits.MaxRunning {
		s.mu.Unlock()
		return nil, SweepJob{}, sdk.Unavailable("find_in_captures: %d sweeps are running, the most --mcp-sweep-max-running allows: refused, not queued; poll or cancel one (find_in_captures_status, cancel_find_in_captures) and retry", s.running)
	}
	if len(s.jobs) >= s.limits.MaxHeldResults {
		s.mu.Unlock()
		return nil, SweepJob{}, sdk.Unavailable("find_in_captures: %d sweeps are held (running or finished and not collected), the most --mcp-sweep-max-held-results allows: refused, never discarded; collect finished ones with find_in_captures_status (a result waits %d s) and retry", len(s.jobs), s.limits.RetentionSecs)
	}
	s.next++
	ctx, cancel := context.WithTimeout(s.life, time.Duration(deadlineMS)*time.Millisecond)
	j := &sweepJob{id: fmt.Sprintf("sweep-%d", s.next), expr: expr, limits: SweepLimitsOut{MaxFiles: maxFiles, DeadlineMS: deadlineMS},
		started: s.now(), cancel: cancel, done: make(chan struct{}), total: len(names)}
	s.jobs[j.id] = j
	s.running++
	handle := s.envelopeLocked(j)
	s.mu.Unlock()
	go s.run(ctx, j, f, names, l.Truncated)
	return j, handle, nil
}

// run is the sweep's goroutine: the files in name order, one scratch
// engine each; cancellation and the deadline are honoured between files
// and inside one (the engine's file load runs under ctx).
func (s *sweeper) run(ctx context.Context, j *sweepJob, f *filter.Filter, names []string, listTruncated bool) {
	defer close(j.done)
	defer j.cancel()
	res := &SweepResult{Matches: []SweepMatch{}, Unreadable: []SweepUnreadable{}, FilesTotal: len(names)}
	stop := func() string {
		s.mu.Lock()
		canceled := j.cancelRequested
		s.mu.Unlock()
		switch {
		case canceled:
			return stopCanceled
		case s.life.Err() != nil:
			return stopShutdown
		case ctx.Err() != nil:
			return stopDeadline
		}
		return ""
	}
	for i, name := range names {
		if why := stop(); why != "" {
			res.StoppedBecause = why
			break
		}
		if i == j.limits.MaxFiles {
			res.StoppedBecause = stopMaxFiles
			break
		}
		v, err := s.read(ctx, name, f)
		if why := stop(); why != "" {
			// The file in hand was cut short: not examined.
			res.StoppedBecause = why
			break
		}
		switch {
		case err != nil:
			res.Unreadable = append(res.Unreadable, SweepUnreadable{Filename: name, Reason: clipReason(err.Error())})
		case v.partial != "":
			res.Unreadable = append(res.Unreadable, SweepUnreadable{Filename: name, Reason: clipReason(v.partial)})
		}
		if err == nil && v.matched > 0 {
			res.Matches = append(res.Matches, SweepMatch{Filename: name, DialogsMatched: v.matched, FirstCallID: v.firstCallID})
		}
		res.FilesExamined++
		s.mu.Lock()
		j.examined = res.FilesExamined
		s.mu.Unlock()
	}
	if listTruncated && res.StoppedBecause == "" {
		// More files than a listing holds (sdk.MaxListFiles): the rest
		// were not looked at.
		res.StoppedBecause = stopMaxFiles
	}
	res.Complete = res.StoppedBecause == "" && len(res.Unreadable) == 0 && res.FilesExamined == res.FilesTotal
	s.mu.Lock()
	j.result, j.ended = res, s.now()
	s.running--
	s.mu.Unlock()
}

// readFile reads one file of the root into a scratch engine to its end
// and counts the dialogs f matches, as list_dialogs would on the file
// loaded alone (query.List's total_matched; its first row in created_at
// order gives first_call_id).
func (s *sweeper) readFile(ctx context.Context, name string, f *filter.Filter) (sweepFile, error) {
	fh, err := s.root.Open(name)
	if err != nil {
		return sweepFile{}, errors.New(sdk.AsError(err).Message)
	}
	defer fh.Close()
	return readScratch(ctx, name, fh, f, s.th)
}

// readScratch reads an open capture file into a scratch engine and counts
// the dialogs f matches.
func readScratch(ctx context.Context, name string, fh *os.File, f *filter.Filter, th filter.Thresholds) (sweepFile, error) {
	sc := engine.New(engine.Config{Expand: capture.ExpandOptions{Stdin: fh}}, nil)
	defer sc.Close()
	if err := sc.LoadFiles(ctx, []string{capture.StdinPath}); err != nil {
		return sweepFile{}, errors.New(strings.ReplaceAll(err.Error(), capture.StdinName, name))
	}
	select {
	case <-sc.Done():
	case <-ctx.Done():
	}
	sc.Wait()
	var v sweepFile
	if errs := sc.Status().Errors; len(errs) > 0 {
		v.partial = "read stopped before the end of the file: " + strings.ReplaceAll(strings.Join(errs, "; "), capture.StdinName, name)
	}
	var ms analysis.MediaSource
	if m := sc.Media(); m != nil {
		ms = m
	}
	q := query.New(sc.Dialogs(), ms, th)
	p, err := q.List(ctx, query.ListOptions{Filter: f, Order: dialog.ByCreated, Limit: 1})
	if err != nil {
		return sweepFile{}, err
	}
	v.matched = p.TotalMatched
	if len(p.Rows) > 0 {
		v.firstCallID = p.Rows[0].CallID
	}
	return v, nil
}

// envelope is the job's answer now (the caller holds mu).
func (s *sweeper) envelopeLocked(j *sweepJob) SweepJob {
	out := SweepJob{JobID: j.id, Status: sweepRunning, Filter: j.expr, Limits: j.limits, SchemaVersion: sweepSchemaVersion,
		Progress: SweepProgress{FilesExamined: j.examined, FilesTotal: j.total, CancelRequested: j.cancelRequested}}
	end := s.now()
	if j.result != nil {
		end = j.ended
		out.Status = sweepDone
		if j.result.StoppedBecause == stopCanceled {
			out.Status = sweepCanceled
		}
		r := *j.result
		out.Sweep = &r
		out.Note = "The sweep ended; this result is handed over once: the id is now released."
	} else {
		out.Note = fmt.Sprintf("The sweep is running: poll it with find_in_captures_status {\"job_id\": %q} (wait_seconds waits for the end); cancel it with cancel_find_in_captures.", j.id)
	}
	out.Progress.ElapsedMS = end.Sub(j.started).Milliseconds()
	return out
}

// answer waits up to wait for the job to end and answers its envelope; an
// ended job's result is handed over (the id released).
func (s *sweeper) answer(ctx context.Context, j *sweepJob, wait time.Duration) SweepJob {
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-j.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.envelopeLocked(j)
	if j.result != nil {
		s.releaseLocked(j.id, "its result was handed over")
	}
	return out
}

// lookup finds a held job; an id not held is refused, saying why when it
// is remembered.
func (s *sweeper) lookup(id string) (*sweepJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	if j, ok := s.jobs[id]; ok {
		return j, nil
	}
	if why, ok := s.gone[id]; ok {
		return nil, sdk.UnknownID("job_id", "sweep %q is no longer held: %s (a result is handed over once; start a new sweep with find_in_captures)", id, why)
	}
	return nil, sdk.UnknownID("job_id", "unknown job_id %q: no sweep with this id is held (ids are sweep-<n>, issued by find_in_captures; this server issued %d)", answer.Clip(id), s.next)
}

// releaseLocked forgets a held job, remembering why.
func (s *sweeper) releaseLocked(id, why string) {
	delete(s.jobs, id)
	if _, ok := s.gone[id]; !ok {
		s.goneFIF = append(s.goneFIF, id)
	}
	s.gone[id] = why
	for len(s.goneFIF) > sweepTombstones {
		delete(s.gone, s.goneFIF[0])
		s.goneFIF = s.goneFIF[1:]
	}
}

// expireLocked lets go of finished results older than the retention.
func (s *sweeper) expireLocked() {
	ttl := time.Duration(s.limits.RetentionSecs) * time.Second
	now := s.now()
	for id, j := range s.jobs {
		if j.result != nil && now.Sub(j.ended) > ttl {
			s.releaseLocked(id, fmt.Sprintf("its result waited %d s uncollected (--mcp-sweep-result-retention-secs) and was let go", s.limits.RetentionSecs))
		}
	}
}

// waitFor is a call's wait: wait_seconds, at most --mcp-max-wait-seconds.
func waitFor(c *sdk.Call, seconds int) (time.Duration, error) {
	if seconds < 0 {
		return 0, sdk.Refuse(sdk.KindInvalidArgument, "wait_seconds", "wait_seconds must be 0 or more, got %d", seconds)
	}
	ceiling := c.Limits().MaxWaitSeconds
	if ceiling <= 0 {
		ceiling = sdk.DefaultMaxWaitSeconds
	}
	return time.Duration(min(seconds, ceiling)) * time.Second, nil
}
