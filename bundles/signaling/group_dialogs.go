package signaling

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

// groupDialogsSchemaVersion is group_dialogs' response schema version.
const groupDialogsSchemaVersion = 1

// defaultTopN is group_dialogs' group count when top_n is absent.
const defaultTopN = 50

type groupDialogsIn struct {
	By      string   `json:"by" desc:"state, response_code, method, from.user, to.user, ua, src.ip, dst.ip, rtp.codec, to_domain, hour (UTC), next_hop (ip:port the opening request was last sent to)"`
	Metrics []string `json:"metrics,omitempty" default:"all eight" desc:"subset of count, asr, ner, acd, pdd_p50, pdd_p95, mos_p10, retransmit_rate (default all)"`
	Filter  string   `json:"filter,omitempty" desc:"absent: all dialogs"`
	TopN    int      `json:"top_n,omitempty" default:"50" min:"1" desc:"largest groups kept"`
}

// GroupPopulation is what a group's metrics were computed over.
type GroupPopulation struct {
	// Dialogs in the group.
	Dialogs int `json:"dialogs" desc:"dialogs in the group"`
	// Seizures are INVITEs whose opening transaction reached an outcome: a
	// final response, a CANCEL, or a timeout (no final response and silent
	// for longer than Timer B, 32 s, or after an 18x Timer C, 180 s, before
	// the capture's last message). An INVITE still ringing at capture end
	// is not one.
	Seizures int `json:"seizures" desc:"INVITEs with a final response, CANCEL or timeout (Timer B/C); ringing at capture end excluded"`
	// Answered are seizures answered with a 2xx.
	Answered int `json:"answered" desc:"seizures answered 2xx"`
	// Delivered are seizures answered, refused with 480, 486, 487, 600 or
	// 603, or cancelled (408 is not delivered).
	Delivered int `json:"delivered" desc:"answered, or 480/486/487/600/603, or cancelled; 408 is not delivered"`
	// CompletedCalls are answered calls whose conversation (2xx to BYE) was
	// measured: ACD's population.
	CompletedCalls int `json:"completed_calls" desc:"answered calls ended by a BYE in the capture"`
	// PDDMeasured counts INVITEs with a post-dial delay (an 18x arrived).
	PDDMeasured int `json:"pdd_measured" desc:"INVITEs whose post-dial delay was measured"`
	// MOSGroundedDialogs counts dialogs with a stream whose MOS is
	// grounded; absent when mos_p10 was not asked for.
	MOSGroundedDialogs *int `json:"mos_grounded_dialogs,omitempty" desc:"dialogs with a grounded-MOS stream; absent unless mos_p10 is asked"`
	// Retransmits counts retransmitted messages.
	Retransmits int `json:"retransmits" desc:"retransmitted messages"`
}

// DialogGroup is one value of the dimension.
type DialogGroup struct {
	// Value is the dimension's value; "(none)" when the dialogs have none.
	// to_domain, from.user, to.user and ua are fenced (sender-written);
	// the other dimensions' values are unfenced, stripped of control and
	// bidi characters and cut to 256 bytes (answer.Unfenced).
	Value string `json:"value" desc:"dimension value; (none) when absent; sender-written values fenced"`
	// Count is the number of dialogs in the group.
	Count int `json:"count" desc:"dialogs in the group"`
	// Metrics maps each requested metric to its value (2 decimals), or null
	// when it cannot be computed for this group (never 0).
	Metrics map[string]*float64 `json:"metrics" desc:"requested metrics; null when not computable, see not_grounded"`
	// NotGrounded says why each null metric is null.
	NotGrounded map[string]string `json:"not_grounded" desc:"why each null metric could not be computed"`
	// Population is what the metrics were computed over.
	Population GroupPopulation `json:"population" desc:"what the metrics were computed over"`
}

// GroupDialogs is group_dialogs' answer.
type GroupDialogs struct {
	// GroupBy is the dimension.
	GroupBy string `json:"group_by" desc:"dimension grouped by"`
	// Metrics are the metrics computed, in the order asked.
	Metrics []string `json:"metrics" nonnull:"true" desc:"metrics computed"`
	// Units names the unit of each metric: asr and ner are percent.
	Units map[string]string `json:"units" nonnull:"true" desc:"unit of each metric"`
	// Groups are the top_n largest groups, ranked by count (ties by value).
	Groups []DialogGroup `json:"groups" nonnull:"true" desc:"largest groups first, ranked by count"`
	// OtherCount counts the dialogs of the groups past top_n (and of any
	// group trimmed to fit the response ceiling); it carries no metrics (an
	// average of the smallest groups' averages means nothing).
	OtherCount int `json:"other_count" desc:"dialogs in groups past top_n or trimmed (no metrics)"`
	// TrimmedGroups counts the smallest kept groups moved into other_count
	// so the answer fits --mcp-max-response-bytes; absent when none was.
	TrimmedGroups int `json:"trimmed_groups,omitempty" desc:"groups moved to other_count to fit the response ceiling"`
	// DistinctValues counts every group, (none) included.
	DistinctValues int `json:"distinct_values" desc:"groups in total, (none) included"`
	// TotalMatched counts the dialogs matching the filter: the groups plus
	// other_count.
	TotalMatched int `json:"total_matched" desc:"matching dialogs: groups plus other_count"`
	sdk.SourceFlags
	// CaptureIdentity names the capture counted.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

func groupDialogsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "group_dialogs",
		Title: "Carrier metrics per group",
		Description: "Carrier metrics per value of one dimension: ASR/NER (%), ACD (s), PDD p50/p95 (ms), MOS p10, " +
			"retransmits per dialog; not computable: null with a not_grounded reason, never 0. Counts only: aggregate_dialogs. " +
			reference.FilterHelp,
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "ASR, NER and PDD per method", Args: map[string]any{"by": "method"}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an unknown dimension in by or metric in metrics"},
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (the message gives the position and a caret line)"},
			{Code: sdk.CodeInvalidParams, When: "a negative top_n"},
		},
	}, func(ctx context.Context, c *sdk.Call, in groupDialogsIn) (GroupDialogs, error) {
		return groupDialogs(ctx, d, c, in)
	})
}

func groupDialogs(ctx context.Context, d *deps, c *sdk.Call, in groupDialogsIn) (GroupDialogs, error) {
	by, err := query.ParseGroupDimension(in.By)
	if err != nil {
		return GroupDialogs{}, sdk.InvalidParams("%v", err)
	}
	metrics, err := query.ParseMetrics(in.Metrics)
	if err != nil {
		return GroupDialogs{}, sdk.InvalidParams("%v", err)
	}
	if in.TopN < 0 {
		return GroupDialogs{}, sdk.InvalidParams("top_n %d: want a positive number, or omit it for %d", in.TopN, defaultTopN)
	}
	topN := in.TopN
	if topN == 0 {
		topN = defaultTopN
	}
	topN = min(topN, maxRows(c))
	q := storeQuerier(d)
	f, err := answer.CompileFilter(q, in.Filter)
	if err != nil {
		return GroupDialogs{}, err
	}
	src := answer.SourceState(d.capture.Status())
	g, err := q.Group(ctx, query.GroupOptions{Filter: f, By: by, Metrics: metrics, TopN: topN})
	if err != nil {
		return GroupDialogs{}, err
	}
	out := GroupDialogs{
		GroupBy:         string(by),
		Metrics:         make([]string, len(metrics)),
		Units:           make(map[string]string, len(metrics)),
		Groups:          make([]DialogGroup, len(g.Groups)),
		OtherCount:      g.OtherCount,
		DistinctValues:  g.DistinctValues,
		TotalMatched:    g.TotalMatched,
		SourceFlags:     src.Flags(),
		CaptureIdentity: src.Identity,
		SchemaVersion:   groupDialogsSchemaVersion,
	}
	for i, m := range metrics {
		out.Metrics[i] = string(m)
		out.Units[string(m)] = m.Unit()
	}
	fence := groupFenced(by)
	for i, gr := range g.Groups {
		v := gr.Value
		switch {
		case gr.Absent:
		case fence:
			v = c.Fence(v)
		default:
			v = answer.Unfenced(v)
		}
		dg := DialogGroup{
			Value:       v,
			Count:       gr.Count,
			Metrics:     make(map[string]*float64, len(gr.Metrics)),
			NotGrounded: make(map[string]string, len(gr.NotGrounded)),
			Population: GroupPopulation{
				Dialogs: gr.Population.Dialogs, Seizures: gr.Population.Seizures, Answered: gr.Population.Answered,
				Delivered: gr.Population.Delivered, CompletedCalls: gr.Population.CompletedCalls,
				PDDMeasured: gr.Population.PDDMeasured, MOSGroundedDialogs: gr.Population.MOSGroundedDialogs,
				Retransmits: gr.Population.Retransmits,
			},
		}
		for m, val := range gr.Metrics {
			dg.Metrics[string(m)] = val
		}
		for m, why := range gr.NotGrounded {
			dg.NotGrounded[string(m)] = why
		}
		out.Groups[i] = dg
	}
	return fitGroups(c, out)
}

// fitGroups moves the smallest groups into other_count until the answer
// fits --mcp-max-response-bytes on the wire (sdk.Call.FitRows), so a wide
// top_n degrades to fewer groups instead of a refused answer. The groups
// plus other_count still equal total_matched.
func fitGroups(c *sdk.Call, out GroupDialogs) (GroupDialogs, error) {
	groups := out.Groups
	build := func(k int) GroupDialogs {
		o := out
		o.Groups = groups[:k]
		for _, g := range groups[k:] {
			o.OtherCount += g.Count
		}
		o.TrimmedGroups = out.TrimmedGroups + len(groups) - k
		return o
	}
	k, err := c.FitPage(len(groups), 0, "group", func(k int) any { return build(k) })
	if err != nil {
		return GroupDialogs{}, err
	}
	return build(k), nil
}

// groupFenced reports whether a dimension's values are sender-written and
// fenced: to_domain, from.user, to.user and ua. next_hop, state, codes,
// addresses and codecs are sipnab's own derivation and stay unfenced:
// fencing them would tell the agent to distrust the analysis.
func groupFenced(by query.Dimension) bool {
	switch by {
	case query.DimToDomain, query.DimFromUser, query.DimToUser, query.DimUA:
		return true
	}
	return false
}
