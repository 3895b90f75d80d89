package signaling

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/callreport"
	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/sdk"
)

// findCorrelatedSchemaVersion is find_correlated's response schema version.
const findCorrelatedSchemaVersion = 1

type findCorrelatedIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	Limit  int    `json:"limit,omitempty" default:"50" desc:"legs returned"`
}

// CorrelatedLeg is one other leg of the call.
type CorrelatedLeg struct {
	// CallID is the other leg's Call-ID, verbatim (attacker-chosen, like
	// every identifier).
	CallID string `json:"call_id" desc:"Call-ID of the other leg, verbatim"`
	// Score is the strategy's confidence, 0 to 100.
	Score int `json:"score" desc:"confidence of the strategy, 0 to 100"`
	// Strategy is the first strategy, in descending score, that tied the
	// legs.
	Strategy string `json:"strategy" enum:"session_id|x_call_id|charging_vector_related_icid|sdp_origin|charging_vector_icid|via_branch|embedded_tag|same_users|timing_heuristic" desc:"how the legs were tied"`
	// IdentifierMatch is false for a same_users or timing_heuristic guess.
	IdentifierMatch bool `json:"identifier_match" desc:"tied by an identifier (false: a guess)"`
	// ObservedGapMs is the start gap a guess observed (capture
	// timestamps); absent on identifier matches.
	ObservedGapMs *int64 `json:"observed_gap_ms,omitempty" desc:"start gap of a guess, ms, capture timestamps"`
}

// FindCorrelated is find_correlated's answer.
type FindCorrelated struct {
	// SourceCallID is the Call-ID asked about.
	SourceCallID string `json:"source_call_id" desc:"Call-ID asked about, verbatim"`
	// Legs are the other legs, highest score first; empty when none was
	// found or the Call-ID is unknown.
	Legs []CorrelatedLeg `json:"legs" nonnull:"true" desc:"other legs, highest score first"`
	// Hop says, when no leg was found, what the capture shows of the hop:
	// proxy (HopEvidence names the request seen on two hops with one more
	// Via) or unknown (one hop captured: a B2BUA's other leg may be
	// outside the capture). Absent when legs were found.
	Hop string `json:"hop,omitempty" enum:"proxy|unknown" desc:"no leg found: proxy (with hop_evidence) or unknown"`
	// HopEvidence is the evidence of a proxy hop.
	HopEvidence string `json:"hop_evidence,omitempty" desc:"request, hops, Via counts and frames showing a proxy"`
	// Returned counts the legs in this answer.
	Returned int `json:"returned" desc:"legs in this answer"`
	// TotalMatched counts every leg found, whatever the limit.
	TotalMatched int `json:"total_matched" desc:"legs found, whatever the limit"`
	// HeuristicOnly: every leg returned is a timing guess (a tree built only
	// from timing is a hypothesis).
	HeuristicOnly bool `json:"heuristic_only" desc:"every leg returned is a timing guess"`
	// TimingClock is this node's clock state, present only beside a guess
	// on a live capture, whose frames this clock stamped. A file's
	// timestamps came from the capturing host's clock, not this one: its
	// gaps are read from capture time only and carry no clock reading.
	TimingClock *correlate.Clock `json:"timing_clock,omitempty" desc:"node clock state; only beside a guess on a live capture"`
	sdk.SourceFlags
	// CaptureIdentity names the capture (node, instance) the legs are in.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

func findCorrelatedTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "find_correlated",
		Title: "Find the other legs of a call",
		Description: "Other legs of a call (B2BUA, SBC, Call-ID-changing proxy), each with the identifier linking it and a " +
			"confidence 0-100 (same_users, timing_heuristic: guesses); none found: hop says why. Every leg, transitively: get_call_tree.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Calls related to one call", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			{Code: sdk.CodeInvalidParams, When: "a negative limit"},
		},
	}, func(ctx context.Context, c *sdk.Call, in findCorrelatedIn) (FindCorrelated, error) {
		return findCorrelated(d, c, in)
	})
}

func findCorrelated(d *deps, c *sdk.Call, in findCorrelatedIn) (FindCorrelated, error) {
	capture := d.capture
	if in.CallID == "" {
		return FindCorrelated{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs or find_problems")
	}
	if in.Limit < 0 {
		return FindCorrelated{}, sdk.InvalidParams("limit must be positive, got %d", in.Limit)
	}
	limit := c.Limit(in.Limit)
	src := answer.SourceState(capture.Status())
	res, _ := legCorrelator(d).Find(in.CallID)
	legs := make([]CorrelatedLeg, 0, min(limit, len(res.Legs)))
	for _, l := range res.Legs[:min(limit, len(res.Legs))] {
		legs = append(legs, correlatedLeg(l))
	}
	var hop, hopEvidence string
	if len(res.Legs) == 0 {
		if det, ok := capture.Dialogs().Get(in.CallID); ok {
			hop = "unknown"
			if ev := correlate.ProxyEvidence(&det); ev != "" {
				hop, hopEvidence = "proxy", ev
			}
		}
	}
	// Legs past the byte budget are left out like legs past limit:
	// returned below total_matched says so.
	build := func(k int) FindCorrelated {
		out := FindCorrelated{
			SourceCallID:    in.CallID,
			Legs:            append([]CorrelatedLeg{}, legs[:k]...),
			Hop:             hop,
			HopEvidence:     hopEvidence,
			Returned:        k,
			TotalMatched:    len(res.Legs),
			HeuristicOnly:   heuristicOnly(legs[:k]),
			SourceFlags:     src.Flags(),
			CaptureIdentity: src.Identity,
			SchemaVersion:   findCorrelatedSchemaVersion,
		}
		for _, l := range legs[:k] {
			if !l.IdentifierMatch {
				out.TimingClock = timingClock(capture.Status().Source)
				break
			}
		}
		return out
	}
	k, err := c.FitPage(len(legs), 0, "leg", func(k int) any { return build(k) })
	if err != nil {
		return FindCorrelated{}, err
	}
	return build(k), nil
}

// timingClock reads this node's clock beside a guess only when a live
// source feeds the capture (its frames carry this clock's time); a file or
// HEP's timestamps came from other clocks, whose state is not known here.
func timingClock(source string) *correlate.Clock {
	for _, s := range strings.Split(source, "+") {
		if s == "live" {
			clk := correlate.ReadClock()
			return &clk
		}
	}
	return nil
}

func correlatedLeg(l correlate.Leg) CorrelatedLeg {
	out := CorrelatedLeg{CallID: l.CallID, Score: l.Score, Strategy: string(l.Strategy), IdentifierMatch: l.IdentifierMatch}
	if !l.IdentifierMatch {
		gap := l.GapMs
		out.ObservedGapMs = &gap
	}
	return out
}

// heuristicOnly: there are legs and every one is a guess.
func heuristicOnly(legs []CorrelatedLeg) bool {
	for _, l := range legs {
		if l.IdentifierMatch {
			return false
		}
	}
	return len(legs) > 0
}

// legCorrelators keeps one correlator per dialog store and settings, so a
// query re-reads only the dialogs that changed since the last one. Bounded:
// a process holds one capture at a time (tests hold more).
var legCorrelators struct {
	sync.Mutex
	m     map[correlatorKey]*correlate.Correlator
	order []correlatorKey
}

// correlatorKey names a correlator: its store and its settings.
type correlatorKey struct {
	store    *dialog.Store
	settings string
}

// maxCorrelators bounds legCorrelators.
const maxCorrelators = 8

// legCorrelator returns the correlator of the capture's dialog store with
// the run's settings (--leg-correlation-window, --x-call-id-header: the
// host's correlate.Config service); the --call-report command line builds
// the same, so render_ladder prints the same bytes.
func legCorrelator(d *deps) *correlate.Correlator {
	store := d.capture.Dialogs()
	key := correlatorKey{store: store, settings: fmt.Sprintf("%d|%q", d.correlation.Window, d.correlation.XCallIDHeaders)}
	legCorrelators.Lock()
	defer legCorrelators.Unlock()
	if cr := legCorrelators.m[key]; cr != nil {
		return cr
	}
	if legCorrelators.m == nil {
		legCorrelators.m = map[correlatorKey]*correlate.Correlator{}
	}
	if len(legCorrelators.order) >= maxCorrelators {
		delete(legCorrelators.m, legCorrelators.order[0])
		legCorrelators.order = legCorrelators.order[1:]
	}
	cr := correlate.New(store, d.correlation)
	legCorrelators.m[key] = cr
	legCorrelators.order = append(legCorrelators.order, key)
	return cr
}

// callReportOptions are the options every per-call document is built with:
// the run's correlator and PDD threshold, as --call-report builds them.
func callReportOptions(d *deps) callreport.Options {
	return callreport.Options{Correlator: legCorrelator(d), Diagnosis: d.analysisOptions()}
}
