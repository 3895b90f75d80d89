package captures

import (
	"context"
	"time"

	"github.com/sipnab/sipnab/sdk"
)

type cancelFindInCapturesIn struct {
	JobID string `json:"job_id" desc:"the running sweep's id (sweep-<n>)"`
}

// cancelWait bounds how long a cancel waits for the sweep to stop; the
// file load honours cancellation inside a file, so it stops within a
// batch of frames.
const cancelWait = 5 * time.Second

func cancelFindInCapturesTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "cancel_find_in_captures",
		Title: "Cancel a capture sweep",
		Description: "Stop a running find_in_captures sweep (between files and inside the file in hand) and answer its envelope, status canceled, " +
			"with what it found so far (handed over: the id is released). A sweep that already ended answers its result (status done).",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples:    []sdk.Example{{Title: "Stop sweep-1", Args: map[string]any{"job_id": "sweep-1"}}},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "a job_id not held: never issued, its result already handed over, or expired after --mcp-sweep-result-retention-secs"},
		},
	}, func(ctx context.Context, c *sdk.Call, in cancelFindInCapturesIn) (SweepJob, error) {
		if err := d.needRoot(); err != nil {
			return SweepJob{}, err
		}
		s := d.sweeps
		j, err := s.lookup(in.JobID)
		if err != nil {
			return SweepJob{}, err
		}
		s.mu.Lock()
		if j.result != nil {
			// Nothing to stop: the result, as find_in_captures_status
			// would hand it over (status done; cancel_requested false).
			s.mu.Unlock()
			return s.answer(ctx, j, 0), nil
		}
		j.cancelRequested = true
		s.mu.Unlock()
		j.cancel()
		return s.answer(ctx, j, cancelWait), nil
	})
}
