package core

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/sdk"
)

// rtpStatsSchemaVersion is rtp_stats' response schema version (each stream
// carries media.SchemaVersion, the version of the stream shape).
const rtpStatsSchemaVersion = 1

type rtpStatsIn struct {
	CallID   string   `json:"call_id,omitempty" desc:"one call's streams and media diagnosis; absent: sweep all streams"`
	MinMOS   *float64 `json:"min_mos,omitempty" min:"1" max:"5" desc:"sweep: grounded MOS at least this (ungrounded skipped, counted)"`
	MaxMOS   *float64 `json:"max_mos,omitempty" min:"1" max:"5" desc:"sweep: grounded MOS at most this (ungrounded skipped, counted)"`
	Orphaned *bool    `json:"orphaned,omitempty" desc:"sweep: true only orphans, false only streams of a dialog"`
	Limit    int      `json:"limit,omitempty" default:"50" desc:"sweep: rows per page"`
	Cursor   string   `json:"cursor,omitempty" desc:"sweep: next_cursor of the previous page"`
	// Fields projects each stream row; naming quality_intervals opts in.
	Fields []string `json:"fields,omitempty" desc:"stream fields to keep; ssrc kept"`
	// QualityIntervals adds each stream's per-interval scores (large).
	QualityIntervals bool `json:"quality_intervals,omitempty" desc:"add per-interval scores (large)"`
	MaxResponseBytes int  `json:"max_response_bytes,omitempty" default:"--mcp-max-response-bytes" min:"1" desc:"answer byte cap; rows past it wait for next_cursor"`
}

// RTPStats is rtp_stats' answer. For one call it carries call_id, the
// call's streams (all of them) and its media diagnosis; for a sweep, one
// page of the capture's streams in first_seen order. Both are pages.
type RTPStats struct {
	// CallID is the call asked about; absent in a sweep.
	CallID string `json:"call_id,omitempty" desc:"Call-ID asked about; absent in a sweep"`
	// Streams are RTP streams, oldest first (the shape --json-run writes).
	// Codec names come from the SDP and are fenced, as is the RTCP CNAME.
	Streams []media.StreamInfo `json:"streams" nonnull:"true" desc:"RTP streams in first_seen order"`
	// Diagnosis is the call's media diagnosis; absent in a sweep.
	Diagnosis *analysis.MediaDiagnosis `json:"diagnosis,omitempty" desc:"media diagnosis of the call; absent in a sweep"`
	// UngroundedExcluded counts streams a MOS bound skipped because their
	// score is a placeholder or absent (mos_grounded false).
	UngroundedExcluded int `json:"ungrounded_excluded" desc:"streams a MOS bound skipped because their score is not grounded"`
	// StreamsOmitted counts a call's streams left out to fit the byte
	// budget (call_id mode has no cursor); truncated is true then.
	StreamsOmitted int `json:"streams_omitted,omitempty" desc:"call_id: streams left out to fit the byte budget; name fewer fields or raise max_response_bytes"`
	sdk.Page
}

var _ = addTool(rtpStatsTool)

func rtpStatsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "rtp_stats",
		Title: "RTP stream quality",
		Description: "RTP quality (loss, jitter, MOS) of one call, or a paged sweep of every stream " +
			"filtered by min_mos/max_mos and orphaned. Interval scores only with quality_intervals.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Every RTP stream with its loss, jitter and MOS", Args: nil},
			{Title: "The streams of one call", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "min_mos or max_mos with call_id (the bounds filter a sweep)"},
			{Code: sdk.CodeInvalidParams, When: "orphaned, limit or cursor with call_id"},
			{Code: sdk.CodeInvalidParams, When: "an unknown call_id (no dialog and no stream)"},
			{Code: sdk.CodeInvalidParams, When: "min_mos above max_mos"},
			{Code: sdk.CodeInvalidParams, When: "a cursor that is not this listing's: malformed, altered, or from another capture, tool or filter"},
			{Code: sdk.CodeInvalidParams, When: "an unknown name in fields (the valid ones are listed)"},
			{Code: sdk.CodeInvalidParams, When: "a max_response_bytes too small for one stream"},
		},
	}, func(ctx context.Context, c *sdk.Call, in rtpStatsIn) (RTPStats, error) {
		if err := projectStreams(c, in); err != nil {
			return RTPStats{}, err
		}
		if in.CallID != "" {
			return rtpStatsCall(d, c, in)
		}
		return rtpStatsSweep(d, c, in)
	})
}

func rtpStatsCall(d *deps, c *sdk.Call, in rtpStatsIn) (RTPStats, error) {
	if in.MinMOS != nil || in.MaxMOS != nil {
		return RTPStats{}, sdk.InvalidParams("min_mos and max_mos filter a sweep: drop call_id to sweep, or drop the bounds to see one call")
	}
	if in.Orphaned != nil || in.Limit != 0 || in.Cursor != "" {
		return RTPStats{}, sdk.InvalidParams("orphaned, limit and cursor page a sweep: drop call_id to sweep")
	}
	src := answer.SourceState(d.capture.Status())
	store := mediaOf(d.capture)
	det, known := d.capture.Dialogs().GetWith(in.CallID, dialog.Options{NoMessages: true})
	streams := store.StreamsFor(in.CallID)
	if !known && len(streams) == 0 {
		return RTPStats{}, sdk.UnknownID("call_id", "unknown call_id %q: no dialog and no stream with this Call-ID (list_dialogs lists them)", in.CallID)
	}
	facts := analysis.DialogFacts{CallID: in.CallID}
	if known {
		facts = analysis.FactsFrom(det)
	}
	dd := analysis.Diagnose(facts, store, analysisOptions(d))
	diag := fenceDiagnosis(c, dd.Media)
	for i := range streams {
		fenceStream(c, &streams[i])
	}
	build := func(k int) RTPStats {
		out := RTPStats{
			CallID:         in.CallID,
			Streams:        append([]media.StreamInfo{}, streams[:k]...),
			Diagnosis:      &diag,
			StreamsOmitted: len(streams) - k,
			Page:           sdk.NewPage(k, len(streams), false, "", src, rtpStatsSchemaVersion),
		}
		if k < len(streams) {
			t := true
			out.Truncated = &t
		}
		return out
	}
	k, err := c.FitPage(len(streams), in.MaxResponseBytes, "stream", func(k int) any { return build(k) })
	if err != nil {
		return RTPStats{}, err
	}
	return build(k), nil
}

// projectStreams arranges the stream rows' projection: the fields named
// (validated against the stream fields), and quality_intervals only when
// asked for (the quality_intervals argument, or the field named), since
// they are most of a stream's bytes.
func projectStreams(c *sdk.Call, in rtpStatsIn) error {
	valid := sdk.FieldNames[media.StreamInfo]()
	if err := sdk.ValidateFields(in.Fields, valid); err != nil {
		return err
	}
	fields := in.Fields
	if len(fields) == 0 {
		if in.QualityIntervals {
			return nil
		}
		for _, f := range valid {
			if f != "quality_intervals" && f != "quality_intervals_dropped" {
				fields = append(fields, f)
			}
		}
	} else if in.QualityIntervals && !slices.Contains(fields, "quality_intervals") {
		fields = append(slices.Clip(fields), "quality_intervals", "quality_intervals_dropped")
	}
	if !slices.Contains(fields, "ssrc") {
		fields = append(slices.Clip(fields), "ssrc")
	}
	return c.Project("streams", fields, valid)
}

// streamKey is a stream's sweep sort key, "<first_seen>|0x<SSRC>@<src>><dst>":
// cursors compare as text, so the fixed-width time orders first and the key
// breaks ties.
func streamKey(s *media.StreamInfo) string {
	return sdk.TimeCursor(s.FirstSeen, s.SSRC+"@"+s.Src+">"+s.Dst)
}

// optText is an optional argument's value as a cursor binds it: "" when
// absent.
func optText[T any](v *T) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(*v)
}

func rtpStatsSweep(d *deps, c *sdk.Call, in rtpStatsIn) (RTPStats, error) {
	if in.MinMOS != nil && in.MaxMOS != nil && *in.MinMOS > *in.MaxMOS {
		return RTPStats{}, sdk.InvalidParams("min_mos %g is above max_mos %g: no stream can match", *in.MinMOS, *in.MaxMOS)
	}
	src := answer.SourceState(d.capture.Status())
	pos, err := c.BindCursor(in.Cursor, src.Identity.Instance,
		"min_mos", optText(in.MinMOS), "max_mos", optText(in.MaxMOS), "orphaned", optText(in.Orphaned))
	if err != nil {
		return RTPStats{}, err
	}
	after := ""
	if pos != "" {
		cur, err := sdk.ParseCursor(pos)
		if err != nil {
			return RTPStats{}, err
		}
		if cur.Key == "" {
			// A bare timestamp pages strictly after that instant: every
			// key at that instant sorts before this bound.
			after = sdk.TimeCursor(cur.Time, "\U0010FFFF")
		} else {
			after = sdk.TimeCursor(cur.Time, cur.Key)
		}
	}
	limit := c.Limit(in.Limit)
	bounded := in.MinMOS != nil || in.MaxMOS != nil

	all := mediaOf(d.capture).All()
	type row struct {
		key string
		i   int
	}
	matched := make([]row, 0, len(all))
	out := RTPStats{Streams: []media.StreamInfo{}}
	for i := range all {
		s := &all[i]
		if in.Orphaned != nil && s.Orphaned != *in.Orphaned {
			continue
		}
		if bounded {
			if !s.MOSGrounded || s.MOS == nil {
				out.UngroundedExcluded++
				continue
			}
			if (in.MinMOS != nil && *s.MOS < *in.MinMOS) || (in.MaxMOS != nil && *s.MOS > *in.MaxMOS) {
				continue
			}
		}
		matched = append(matched, row{streamKey(s), i})
	}
	sort.Slice(matched, func(a, b int) bool { return matched[a].key < matched[b].key })

	var page []media.StreamInfo
	var keys []string
	more := false
	for _, r := range matched {
		if !sdk.After(r.key, after) {
			continue
		}
		if len(page) == limit {
			more = true
			break
		}
		s := all[r.i]
		fenceStream(c, &s)
		page = append(page, s)
		keys = append(keys, r.key)
	}
	build := func(k int) RTPStats {
		o := out
		o.Streams = append([]media.StreamInfo{}, page[:k]...)
		last, m, next := c.PageEnd(pos, keys, k, more)
		o.Page = sdk.NewPage(k, len(matched), m, next, src, rtpStatsSchemaVersion)
		o.Page.ResumeAt(src, last)
		return o
	}
	k, err := c.FitPage(len(page), in.MaxResponseBytes, "stream", func(k int) any { return build(k) })
	if err != nil {
		return RTPStats{}, err
	}
	return build(k), nil
}

// fenceStream fences the sender-written values of a stream: codec names
// (they come from the SDP rtpmap) and the RTCP CNAME. It copies the slices
// and pointers it changes.
func fenceStream(c *sdk.Call, s *media.StreamInfo) {
	if s.Codec != "" {
		s.Codec = c.Fence(s.Codec)
	}
	if len(s.PayloadTypes) > 0 {
		pts := make([]media.PTCount, len(s.PayloadTypes))
		copy(pts, s.PayloadTypes)
		for i := range pts {
			if pts[i].Codec != "" {
				pts[i].Codec = c.Fence(pts[i].Codec)
			}
		}
		s.PayloadTypes = pts
	}
	if s.EndpointReported != nil && s.EndpointReported.CNAME != "" {
		er := *s.EndpointReported
		er.CNAME = c.Fence(er.CNAME)
		s.EndpointReported = &er
	}
}

// fenceDiagnosis fences the codec names a media diagnosis quotes (codec
// asymmetry: they come from the SDP). Addresses stay verbatim; hints are
// sipnab's own text.
func fenceDiagnosis(c *sdk.Call, m analysis.MediaDiagnosis) analysis.MediaDiagnosis {
	if a := m.CodecAsymmetry; a != nil {
		m.CodecAsymmetry = &analysis.Asymmetry{Forward: c.Fence(a.Forward), Reverse: c.Fence(a.Reverse)}
	}
	return m
}
