package captures

import (
	"context"
	"errors"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

type findInCapturesIn struct {
	Filter      string `json:"filter" desc:"the filter expression (list_dialogs' language, compiled once with this server's thresholds before any file opens)"`
	MaxFiles    int    `json:"max_files,omitempty" default:"20" min:"0" desc:"files to read, in filename order; 0 means the default, clamped to --mcp-sweep-max-files"`
	DeadlineMS  int    `json:"deadline_ms,omitempty" default:"30000" min:"0" desc:"milliseconds the sweep may run (the bound that matters: a file's cost is its size); 0 means the default, clamped to --mcp-sweep-deadline-ms"`
	WaitSeconds int    `json:"wait_seconds,omitempty" default:"0" min:"0" desc:"seconds to wait for the sweep to end (at most --mcp-max-wait-seconds); 0 answers the handle at once, the result then comes with find_in_captures_status"`
}

func findInCapturesTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "find_in_captures",
		Title: "Find a filter in the root's capture files",
		Description: "Background sweep: each capture file of the root read into a scratch store (the loaded capture and cursors untouched), " +
			"the dialogs a filter matches counted per file. Answers a job envelope; the result is handed over once (find_in_captures_status). " + reference.FilterHelp,
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples: []sdk.Example{
			{Title: "Which captures of the root hold INVITE dialogs, waiting up to 10 s for the answer",
				Args: map[string]any{"filter": "method == INVITE", "wait_seconds": 10}},
			{Title: "A sweep for problem calls over at most 5 files for 10 s, answered at once with its handle (sweep-2)",
				Args: map[string]any{"filter": "problems", "max_files": 5, "deadline_ms": 10000}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (checked before any file opens); a negative max_files, deadline_ms or wait_seconds"},
			{Code: sdk.CodeUnavailable, When: "--mcp-sweep-max-running sweeps are running, or --mcp-sweep-max-held-results are held uncollected: refused, not queued; retry later"},
		},
	}, func(ctx context.Context, c *sdk.Call, in findInCapturesIn) (SweepJob, error) {
		return findInCaptures(ctx, d, c, in)
	})
}

func findInCaptures(ctx context.Context, d *deps, c *sdk.Call, in findInCapturesIn) (SweepJob, error) {
	if err := d.needRoot(); err != nil {
		return SweepJob{}, err
	}
	s := d.sweeps
	if in.Filter == "" {
		return SweepJob{}, sdk.Refuse(sdk.KindMissingArgument, "filter", "filter is required: the expression to look for (e.g. \"method == INVITE and final_status_code >= 400\")")
	}
	// The filter first, once, with the run's thresholds: a bad one costs
	// no file read.
	f, err := filter.Compile(in.Filter, s.th)
	if err != nil {
		var fe *filter.Error
		if errors.As(err, &fe) {
			return SweepJob{}, sdk.Refuse(sdk.KindInvalidFilter, "filter", "invalid filter: %s\n%s", fe.Error(), fe.Caret).At(fe.Pos)
		}
		return SweepJob{}, sdk.Refuse(sdk.KindInvalidFilter, "filter", "invalid filter: %v", err)
	}
	maxFiles, err := clampSweep("max_files", in.MaxFiles, s.limits.MaxFiles)
	if err != nil {
		return SweepJob{}, err
	}
	deadline, err := clampSweep("deadline_ms", in.DeadlineMS, s.limits.DeadlineMS)
	if err != nil {
		return SweepJob{}, err
	}
	wait, err := waitFor(c, in.WaitSeconds)
	if err != nil {
		return SweepJob{}, err
	}
	j, handle, err := s.start(in.Filter, f, maxFiles, deadline)
	if err != nil {
		return SweepJob{}, err
	}
	if wait == 0 {
		// No wait: the handle, as the sweep starts (the result waits for
		// find_in_captures_status, however fast the sweep ends).
		return handle, nil
	}
	return s.answer(ctx, j, wait), nil
}

// clampSweep reads a sweep bound: 0 is the server's value, above it
// clamped to it (mcp-surface §3.3: per-call values clamped to the flags).
func clampSweep(arg string, v, ceiling int) (int, error) {
	if v < 0 {
		return 0, sdk.Refuse(sdk.KindInvalidArgument, arg, "%s must be 0 (the default) or more, got %d", arg, v)
	}
	if v == 0 || v > ceiling {
		return ceiling, nil
	}
	return v, nil
}
