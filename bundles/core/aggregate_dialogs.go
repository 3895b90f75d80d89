package core

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

// aggregateSchemaVersion is aggregate_dialogs' response schema version.
const aggregateSchemaVersion = 1

// aggregateDefaultTopN is the number of buckets kept when top_n is absent.
const aggregateDefaultTopN = 50

type aggregateDialogsIn struct {
	GroupBy string `json:"group_by" enum:"state|response_code|method|from.user|to.user|ua|src.ip|dst.ip|rtp.codec" desc:"the one dimension to count by"`
	Filter  string `json:"filter,omitempty" desc:"absent: all dialogs"`
	TopN    int    `json:"top_n,omitempty" default:"50" min:"1" desc:"buckets kept; the rest count in other_count"`
}

// AggregateBucket is one value of the dimension and its dialogs.
type AggregateBucket struct {
	// Value is the dimension's value; (none) for dialogs without one.
	// Sender-written dimensions (from.user, to.user, ua, rtp.codec) are
	// fenced.
	Value string `json:"value" desc:"the value; (none) when absent; fenced for from.user, to.user, ua, rtp.codec"`
	// Count counts the matching dialogs holding the value.
	Count int `json:"count" desc:"matching dialogs with this value"`
}

// AggregateDialogs is aggregate_dialogs' answer.
type AggregateDialogs struct {
	// GroupBy is the dimension counted by.
	GroupBy string `json:"group_by" desc:"the dimension counted by"`
	// Buckets are the top_n largest buckets, largest first (ties by value).
	Buckets []AggregateBucket `json:"buckets" nonnull:"true" desc:"largest buckets first"`
	// OtherCount counts the dialogs in the buckets past top_n: buckets
	// plus other_count always equal total_matched.
	OtherCount int `json:"other_count" desc:"dialogs in buckets past top_n; buckets + other_count = total_matched"`
	// TrimmedBuckets counts buckets within top_n moved to other_count to
	// fit the byte ceiling (--mcp-max-response-bytes).
	TrimmedBuckets int `json:"trimmed_buckets,omitempty" desc:"buckets moved to other_count to fit the byte cap"`
	// DistinctValues counts every bucket, (none) included.
	DistinctValues int `json:"distinct_values" desc:"number of buckets, (none) included"`
	// TotalMatched counts the dialogs the filter matched.
	TotalMatched int `json:"total_matched" desc:"dialogs the filter matched"`
	sdk.SourceFlags
	// CaptureIdentity names the capture counted.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture counted"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

var _ = addTool(aggregateDialogsTool)

func aggregateDialogsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "aggregate_dialogs",
		Title: "Count dialogs by one dimension",
		Description: "Counts matching dialogs per value of one dimension (buckets + other_count = total_matched; absent: " +
			"(none)). Rates per value (ASR, PDD, MOS): group_dialogs. " + reference.FilterHelp,
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Dialog counts per final response code", Args: map[string]any{"group_by": "response_code"}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (the message gives the position and a caret line)"},
			{Code: sdk.CodeInvalidParams, When: "a negative top_n"},
		},
	}, func(ctx context.Context, c *sdk.Call, in aggregateDialogsIn) (AggregateDialogs, error) {
		dim, err := query.ParseDimension(in.GroupBy)
		if err != nil {
			return AggregateDialogs{}, sdk.InvalidParams("%v", err)
		}
		if in.TopN < 0 {
			return AggregateDialogs{}, sdk.InvalidParams("top_n must be positive, got %d", in.TopN)
		}
		q := querier(d)
		f, err := answer.CompileFilter(q, in.Filter)
		if err != nil {
			return AggregateDialogs{}, err
		}
		top := in.TopN
		if top == 0 {
			top = aggregateDefaultTopN
		}
		if m := c.Limits().MaxRows; m > 0 && top > m {
			top = m
		}
		src := answer.SourceState(d.capture.Status())
		a, err := q.Aggregate(ctx, f, dim, top)
		if err != nil {
			return AggregateDialogs{}, sdk.Internal("counting dialogs: %v", err)
		}
		out := AggregateDialogs{
			GroupBy:         string(dim),
			Buckets:         make([]AggregateBucket, 0, len(a.Buckets)),
			OtherCount:      a.OtherCount,
			DistinctValues:  a.DistinctValues,
			TotalMatched:    a.TotalMatched,
			SourceFlags:     src.Flags(),
			CaptureIdentity: src.Identity,
			SchemaVersion:   aggregateSchemaVersion,
		}
		for _, b := range a.Buckets {
			v := b.Value
			switch {
			case b.Absent:
			case dim.SenderWritten():
				v = c.Fence(v)
			case dim == query.DimMethod:
				// a method token is sender-written but shown unfenced
				v = answer.Unfenced(v)
			}
			out.Buckets = append(out.Buckets, AggregateBucket{Value: v, Count: b.Count})
		}
		// Buckets past the byte ceiling join other_count, smallest first,
		// so buckets + other_count still equal total_matched.
		buckets := out.Buckets
		build := func(k int) AggregateDialogs {
			o := out
			o.Buckets = buckets[:k]
			for _, b := range buckets[k:] {
				o.OtherCount += b.Count
			}
			o.TrimmedBuckets = len(buckets) - k
			return o
		}
		k, err := c.FitPage(len(buckets), 0, "bucket", func(k int) any { return build(k) })
		if err != nil {
			return AggregateDialogs{}, err
		}
		return build(k), nil
	})
}
