package signaling

import (
	"context"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/sdk"
)

// getCallTreeSchemaVersion is get_call_tree's response schema version.
const getCallTreeSchemaVersion = 1

type getCallTreeIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	Limit  int    `json:"limit,omitempty" default:"50" desc:"legs returned, root included"`
}

// CallTreeLeg is one leg of a call tree.
type CallTreeLeg struct {
	// CallID is the leg's Call-ID, verbatim.
	CallID string `json:"call_id" desc:"Call-ID of the leg, verbatim"`
	// Depth is the number of edges from the root (0 for the root).
	Depth int `json:"depth" desc:"edges from the root (0 for the root)"`
	// ParentCallID is the leg this one was found from; absent on the root.
	ParentCallID string `json:"parent_call_id,omitempty" desc:"leg this one was found from; absent on the root"`
	// Score, Strategy and IdentifierMatch say how the leg was tied to its
	// parent; absent on the root.
	Score           int    `json:"score,omitempty" desc:"confidence of the edge, 0 to 100; absent on the root"`
	Strategy        string `json:"strategy,omitempty" enum:"session_id|x_call_id|charging_vector_related_icid|sdp_origin|charging_vector_icid|via_branch|embedded_tag|same_users|timing_heuristic" desc:"how the leg was tied to its parent; absent on the root"`
	IdentifierMatch *bool  `json:"identifier_match,omitempty" desc:"tied by an identifier (false: a timing guess); absent on the root"`
	// ObservedGapMs is the start gap of a timing edge.
	ObservedGapMs *int64 `json:"observed_gap_ms,omitempty" desc:"start gap of a timing edge, ms"`
	// Followed: the walk searched this leg's own legs. False on a timing
	// leaf (never walked through) and on a leg still queued when the walk
	// reached its limit (its subtree was not searched).
	Followed bool `json:"followed" desc:"this leg's own legs were searched"`
	// Dialog is the leg's list row (from_user and to_user fenced); absent
	// when the dialog left the store during the walk.
	Dialog *dialog.Summary `json:"dialog,omitempty" desc:"the leg's dialog row; users fenced"`
}

// CallTree is get_call_tree's answer.
type CallTree struct {
	// RootCallID is the Call-ID the walk started from.
	RootCallID string `json:"root_call_id" desc:"Call-ID the walk started from"`
	// Legs are the legs, root first, breadth first.
	Legs []CallTreeLeg `json:"legs" nonnull:"true" desc:"legs, root first, breadth first"`
	// TotalLegs counts the legs returned.
	TotalLegs int `json:"total_legs" desc:"legs returned, the root included"`
	// LegsOmitted counts legs the walk found but the answer left out to
	// fit the byte budget (the last ones, breadth first); truncated is
	// true then.
	LegsOmitted int `json:"legs_omitted,omitempty" desc:"legs cut by the byte cap"`
	// MaxDepth is the deepest leg's depth.
	MaxDepth int `json:"max_depth" desc:"deepest leg's depth"`
	// Truncated: the walk stopped at limit (legs with followed false were
	// not searched). false only once the source is read whole.
	Truncated *bool `json:"truncated,omitempty" desc:"the walk stopped at limit or legs were cut; false only once the source is read whole"`
	// HeuristicEdges counts the timing_heuristic leaves (never walked).
	HeuristicEdges int `json:"heuristic_edges" desc:"timing_heuristic legs, attached as leaves and never walked"`
	// TotalMessages sums msg_count over the legs returned.
	TotalMessages int `json:"total_messages" desc:"SIP messages of the legs returned"`
	// FirstActivity and LastActivity span the legs returned.
	FirstActivity time.Time `json:"first_activity" desc:"first message of any leg returned"`
	LastActivity  time.Time `json:"last_activity" desc:"last message of any leg returned"`
	// TimingClock is this node's clock state, present only beside a timing
	// leaf is returned.
	TimingClock *correlate.Clock `json:"timing_clock,omitempty" desc:"node clock state; only beside a timing leaf"`
	sdk.SourceFlags
	// CaptureIdentity names the capture the legs are in.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

func getCallTreeTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "get_call_tree",
		Title: "Get every leg of a call as a tree",
		Description: "Every leg reachable from a Call-ID by following identifier links, breadth first, with dialog rows. " +
			"Timing-only guesses are listed (heuristic_edges), never followed. One call's direct legs, scored: find_correlated.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "The tree of calls around one call", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
			{Code: sdk.CodeInvalidParams, When: "a negative limit"},
		},
	}, func(ctx context.Context, c *sdk.Call, in getCallTreeIn) (CallTree, error) {
		return getCallTree(d, c, in)
	})
}

func getCallTree(d *deps, c *sdk.Call, in getCallTreeIn) (CallTree, error) {
	capture := d.capture
	if in.CallID == "" {
		return CallTree{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs or find_problems")
	}
	if in.Limit < 0 {
		return CallTree{}, sdk.InvalidParams("limit must be positive, got %d", in.Limit)
	}
	limit := c.Limit(in.Limit)
	src := answer.SourceState(capture.Status())
	tree, ok := legCorrelator(d).Tree(in.CallID, limit)
	if !ok {
		return CallTree{}, answer.UnknownCall("call_id", in.CallID)
	}
	legs := make([]CallTreeLeg, 0, len(tree.Nodes))
	for _, n := range tree.Nodes {
		l := CallTreeLeg{CallID: n.CallID, Depth: n.Depth, ParentCallID: n.Parent, Followed: n.Followed}
		if e := n.Edge; e != nil {
			id := e.IdentifierMatch
			l.Score, l.Strategy, l.IdentifierMatch = e.Score, string(e.Strategy), &id
			if !id {
				gap := e.GapMs
				l.ObservedGapMs = &gap
			}
		}
		if row, ok := capture.Dialogs().Lookup(n.CallID); ok {
			row.Method = answer.Unfenced(row.Method)
			if row.FromUser != "" {
				row.FromUser = c.Fence(row.FromUser)
			}
			if row.ToUser != "" {
				row.ToUser = c.Fence(row.ToUser)
			}
			// A call still in progress at capture end: ended false and
			// duration_to_capture_end_ms, as every other dialog row.
			marked := []dialog.Summary{row}
			storeQuerier(d).MarkInProgress(marked)
			l.Dialog = &marked[0]
		}
		legs = append(legs, l)
	}
	build := func(k int) CallTree {
		out := CallTree{
			RootCallID:      in.CallID,
			Legs:            append([]CallTreeLeg{}, legs[:k]...),
			TotalLegs:       k,
			LegsOmitted:     len(legs) - k,
			MaxDepth:        tree.MaxDepth,
			HeuristicEdges:  tree.HeuristicEdges,
			SourceFlags:     src.Flags(),
			CaptureIdentity: src.Identity,
			SchemaVersion:   getCallTreeSchemaVersion,
		}
		timing := false
		for _, l := range legs[:k] {
			timing = timing || l.ObservedGapMs != nil
			if row := l.Dialog; row != nil {
				out.TotalMessages += row.MsgCount
				if out.FirstActivity.IsZero() || row.CreatedAt.Before(out.FirstActivity) {
					out.FirstActivity = row.CreatedAt
				}
				if row.UpdatedAt.After(out.LastActivity) {
					out.LastActivity = row.UpdatedAt
				}
			}
		}
		if tree.Truncated || k < len(legs) {
			t := true
			out.Truncated = &t
		} else if src.Exhausted && !src.StoppedEarly {
			f := false
			out.Truncated = &f
		}
		if timing {
			out.TimingClock = timingClock(d.capture.Status().Source)
		}
		return out
	}
	k, err := c.FitPage(len(legs), 0, "leg", func(k int) any { return build(k) })
	if err != nil {
		return CallTree{}, err
	}
	return build(k), nil
}
