package signaling

import (
	"context"
	"github.com/sipnab/sipnab/bundles/internal/answer"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

// awaitConditionSchemaVersion is await_condition's response schema version.
const awaitConditionSchemaVersion = 1

// await_condition's constants (mcp-surface §3.2). The ceiling of a wait is
// --mcp-max-wait-seconds (sdk.DefaultMaxWaitSeconds, 60, by default).
const (
	// DefaultTimeoutSeconds is the wait when timeout_seconds is absent.
	DefaultTimeoutSeconds = 30
	// DefaultPollIntervalMS is the time between looks when
	// poll_interval_ms is absent.
	DefaultPollIntervalMS = 500
	// MinPollIntervalMS is the floor of poll_interval_ms, so no caller can
	// make a wait a spin loop.
	MinPollIntervalMS = int(query.MinPollInterval / time.Millisecond)
)

type awaitConditionIn struct {
	Filter         string `json:"filter" desc:"the condition to wait for"`
	TimeoutSeconds *int   `json:"timeout_seconds,omitempty" default:"30" min:"0" desc:"seconds to wait (at most --mcp-max-wait-seconds); 0 looks once"`
	PollIntervalMS *int   `json:"poll_interval_ms,omitempty" default:"500" min:"0" desc:"milliseconds between looks (under 100 is 100)"`
}

// AwaitCondition is await_condition's answer. A passed deadline is a
// successful answer: "the fault has not reproduced" is a finding, not a
// failure.
type AwaitCondition struct {
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
	// Filter is the condition as the compiler reads it.
	Filter string `json:"filter" desc:"the condition, as the compiler reads it"`
	// Matched: at least one dialog matched.
	Matched bool `json:"matched" desc:"a dialog matched"`
	// StoppedBecause says why the wait ended.
	StoppedBecause string `json:"stopped_because" enum:"condition_met|deadline|source_exhausted" desc:"condition_met, deadline (no match in time), or source_exhausted (read whole, no match: nothing more will arrive)"`
	// Dialogs are the matching dialogs (the list_dialogs row), created_at
	// order, at most the default page; from_user and to_user fenced.
	Dialogs []dialog.Summary `json:"dialogs" nonnull:"true" desc:"matching dialogs, created_at order"`
	// Returned counts the rows in dialogs.
	Returned int `json:"returned" desc:"rows in dialogs"`
	// TotalMatched counts every matching dialog.
	TotalMatched int `json:"total_matched" desc:"matching dialogs"`
	// Truncated: more dialogs matched than were returned. false only once
	// the source is read whole.
	Truncated *bool `json:"truncated,omitempty" desc:"more matched than returned; false only once the source is read whole"`
	// ElapsedMS is how long the call waited.
	ElapsedMS int64 `json:"elapsed_ms" desc:"time waited, ms"`
	// TimeoutSeconds is the wait applied (after the ceiling).
	TimeoutSeconds int `json:"timeout_seconds" desc:"wait applied, seconds"`
	// TimeoutClamped: the timeout asked for exceeded --mcp-max-wait-seconds.
	TimeoutClamped bool `json:"timeout_clamped" desc:"the timeout asked for exceeded --mcp-max-wait-seconds"`
	// PollIntervalMS is the interval applied (after the floor).
	PollIntervalMS int `json:"poll_interval_ms" desc:"interval between looks applied, ms"`
	// Polls counts looks at the store revision counters.
	Polls int `json:"polls" desc:"looks at the store revision counters"`
	// Scans counts looks that ran the filter: a look at stores whose
	// revisions did not move skips the scan, so scans <= polls.
	Scans int `json:"scans" desc:"looks that ran the filter (unchanged stores are not rescanned)"`
	sdk.SourceFlags
	// CaptureIdentity names the capture watched.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
}

func awaitConditionTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "await_condition",
		Title: "Wait until a filter matches",
		Description: "Block until a dialog matches the filter, the source is read whole, or timeout_seconds passes " +
			"(a deadline is a successful answer). Returns the matches and why it stopped. " + reference.FilterHelp,
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Wait up to 1 s for an INVITE dialog", Args: map[string]any{"filter": "method == INVITE", "timeout_seconds": 1}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty filter"},
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (the message gives the position and a caret line)"},
			{Code: sdk.CodeInvalidParams, When: "a negative timeout_seconds"},
			{Code: sdk.CodeInvalidParams, When: "poll_interval_ms under 100"},
		},
	}, func(ctx context.Context, c *sdk.Call, in awaitConditionIn) (AwaitCondition, error) {
		return awaitCondition(ctx, d, c, in)
	})
}

func awaitCondition(ctx context.Context, d *deps, c *sdk.Call, in awaitConditionIn) (AwaitCondition, error) {
	timeout := DefaultTimeoutSeconds
	if in.TimeoutSeconds != nil {
		timeout = *in.TimeoutSeconds
	}
	if timeout < 0 {
		return AwaitCondition{}, sdk.InvalidParams("timeout_seconds %d: want 0 (look once) or more", timeout)
	}
	ceiling := c.Limits().MaxWaitSeconds
	if ceiling <= 0 {
		ceiling = sdk.DefaultMaxWaitSeconds
	}
	clamped := timeout > ceiling
	timeout = min(timeout, ceiling)
	poll := DefaultPollIntervalMS
	if in.PollIntervalMS != nil {
		poll = *in.PollIntervalMS
	}
	if poll < 0 {
		return AwaitCondition{}, sdk.InvalidParams("poll_interval_ms %d: want %d or more", poll, MinPollIntervalMS)
	}
	poll = max(poll, MinPollIntervalMS)
	q := storeQuerier(d)
	if in.Filter == "" {
		return AwaitCondition{}, sdk.InvalidParams("filter is empty: name the condition to wait for (e.g. state == Failed, or an alias such as problems)")
	}
	f, err := answer.CompileFilter(q, in.Filter)
	if err != nil {
		return AwaitCondition{}, err
	}
	// A wait never polls less often than once per ceiling.
	poll = min(poll, ceiling*1000)
	// The status read before each scan (on this goroutine): it says what
	// the scan saw.
	var last engine.Status
	opts := query.AwaitOptions{
		Filter:       f,
		Timeout:      time.Duration(timeout) * time.Second,
		PollInterval: time.Duration(poll) * time.Millisecond,
		Limit:        c.Limit(0),
		Exhausted: func() bool {
			last = d.capture.Status()
			return last.SourceExhausted
		},
	}
	if ms := d.capture.Media(); ms != nil {
		opts.StreamRevision = ms.Revision
	}
	res, err := q.Await(ctx, opts)
	if err != nil {
		return AwaitCondition{}, err
	}
	st := last
	src := sdk.SourceState{
		Exhausted:    res.Exhausted,
		StoppedEarly: st.SourceStoppedEarly,
		Identity: sdk.CaptureIdentity{Node: st.Identity.Node, Instance: st.Identity.Instance,
			DialogGeneration: st.Identity.DialogGeneration, StreamGeneration: st.Identity.StreamGeneration},
	}
	rows := fenceSummaries(c, res.Page.Rows)
	// Rows past the byte ceiling are left out like rows past the page:
	// returned below total_matched, truncated true.
	build := func(k int) AwaitCondition {
		env := sdk.NewPage(k, res.Page.TotalMatched, res.Page.More || k < len(rows), "", src, awaitConditionSchemaVersion)
		return AwaitCondition{
			SchemaVersion:   awaitConditionSchemaVersion,
			Filter:          f.String(),
			Matched:         res.StoppedBecause == query.StopConditionMet,
			StoppedBecause:  res.StoppedBecause,
			Dialogs:         append([]dialog.Summary{}, rows[:k]...),
			Returned:        k,
			TotalMatched:    res.Page.TotalMatched,
			Truncated:       env.Truncated,
			ElapsedMS:       res.Elapsed.Milliseconds(),
			TimeoutSeconds:  timeout,
			TimeoutClamped:  clamped,
			PollIntervalMS:  poll,
			Polls:           res.Polls,
			Scans:           res.Scans,
			SourceFlags:     src.Flags(),
			CaptureIdentity: src.Identity,
		}
	}
	k, err := c.FitPage(len(rows), 0, "row", func(k int) any { return build(k) })
	if err != nil {
		return AwaitCondition{}, err
	}
	return build(k), nil
}
