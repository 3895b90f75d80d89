package query

import (
	"context"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
)

// Why a wait stopped.
const (
	// StopConditionMet: a dialog matched the filter.
	StopConditionMet = "condition_met"
	// StopDeadline: the timeout passed with no match. Not a failure: "the
	// fault has not reproduced" is a finding.
	StopDeadline = "deadline"
	// StopSourceExhausted: every source was read to its end with no match;
	// nothing more will arrive, so waiting longer cannot change the answer.
	StopSourceExhausted = "source_exhausted"
)

// MinPollInterval is the shortest time between two looks, so that no
// caller can make a wait a spin loop.
const MinPollInterval = 100 * time.Millisecond

// AwaitOptions tune a wait.
type AwaitOptions struct {
	// Filter is the condition; nil matches any dialog.
	Filter *filter.Filter
	// Timeout is how long to wait; 0 looks once.
	Timeout time.Duration
	// PollInterval is the time between looks; shorter than MinPollInterval
	// is raised to it.
	PollInterval time.Duration
	// Limit caps the matching rows returned; <= 0 returns every match.
	Limit int
	// Exhausted reports whether every source was read to its end; nil
	// means never (a live source).
	Exhausted func() bool
	// StreamRevision is the stream store's revision counter; nil when there
	// is no stream store. With the dialog store's revision it decides
	// whether a look must scan: when neither moved, the content is the one
	// already scanned.
	StreamRevision func() uint64
}

// AwaitResult is how a wait ended.
type AwaitResult struct {
	// StoppedBecause is StopConditionMet, StopDeadline or
	// StopSourceExhausted.
	StoppedBecause string
	// Page holds the matching dialogs of the last scan (created_at order).
	Page Page
	// Elapsed is the time the wait took.
	Elapsed time.Duration
	// Polls counts looks at the stores' revisions; Scans counts the looks
	// that ran the filter over the store. Scans <= Polls.
	Polls, Scans int
	// Exhausted is the source state read before the last scan.
	Exhausted bool
}

// Await looks at the dialog store every PollInterval until a dialog
// matches the filter, the source is exhausted, or Timeout passes. Each look
// (a poll) first compares the dialog and stream store revisions with the
// last scan's: a scan (the filter over every dialog) runs only when one
// moved. It allocates no goroutine and no timer that outlives the call, and
// returns ctx's error when ctx ends first.
func (q *Querier) Await(ctx context.Context, o AwaitOptions) (AwaitResult, error) {
	start := time.Now()
	o.PollInterval = max(o.PollInterval, MinPollInterval)
	deadline := start.Add(o.Timeout)
	var res AwaitResult
	var lastD, lastS uint64
	scanned := false
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return AwaitResult{}, err
		}
		res.Polls++
		// Read the source state before the revisions: an exhausted source
		// seen here means the scan below saw its final content.
		exhausted := o.Exhausted != nil && o.Exhausted()
		d := q.dialogs.Revision()
		var s uint64
		if o.StreamRevision != nil {
			s = o.StreamRevision()
		}
		if !scanned || d != lastD || s != lastS {
			p, err := q.List(ctx, ListOptions{Filter: o.Filter, Order: dialog.ByCreated, Limit: o.Limit})
			if err != nil {
				return AwaitResult{}, err
			}
			res.Page, res.Scans, scanned = p, res.Scans+1, true
			lastD, lastS = d, s
		}
		res.Exhausted = exhausted
		now := time.Now()
		switch {
		case res.Page.TotalMatched > 0:
			res.StoppedBecause = StopConditionMet
		case exhausted:
			res.StoppedBecause = StopSourceExhausted
		case !now.Before(deadline):
			res.StoppedBecause = StopDeadline
		}
		if res.StoppedBecause != "" {
			res.Elapsed = time.Since(start)
			return res, nil
		}
		wait := min(o.PollInterval, deadline.Sub(now))
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return AwaitResult{}, ctx.Err()
		case <-timer.C:
		}
	}
}
