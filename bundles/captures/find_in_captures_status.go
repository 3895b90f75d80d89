package captures

import (
	"context"

	"github.com/sipnab/sipnab/sdk"
)

type findInCapturesStatusIn struct {
	JobID       string `json:"job_id" desc:"the sweep's id (sweep-<n>) find_in_captures answered"`
	WaitSeconds int    `json:"wait_seconds,omitempty" default:"0" min:"0" desc:"seconds to wait for the sweep to end (at most --mcp-max-wait-seconds)"`
}

func findInCapturesStatusTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "find_in_captures_status",
		Title: "Poll a capture sweep",
		Description: "The job envelope of a find_in_captures sweep: progress while it runs; once it ended, its result (matches per file, unreadable files, " +
			"stopped_because, complete), handed over once: the id is then released.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples:    []sdk.Example{{Title: "Wait up to 20 s for sweep-2 (find_in_captures' second example) to end and collect it", Args: map[string]any{"job_id": "sweep-2", "wait_seconds": 20}}},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "a job_id not held: never issued, its result already handed over, or expired after --mcp-sweep-result-retention-secs (the refusal says which when it is remembered)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in findInCapturesStatusIn) (SweepJob, error) {
		if err := d.needRoot(); err != nil {
			return SweepJob{}, err
		}
		wait, err := waitFor(c, in.WaitSeconds)
		if err != nil {
			return SweepJob{}, err
		}
		j, err := d.sweeps.lookup(in.JobID)
		if err != nil {
			return SweepJob{}, err
		}
		return d.sweeps.answer(ctx, j, wait), nil
	})
}
