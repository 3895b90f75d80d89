package media

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/sdk"
)

// reconcileOrphansSchemaVersion is reconcile_orphans' response schema
// version.
const reconcileOrphansSchemaVersion = 1

// Orphan reasons (mcp-surface.md §3.5, engine.md §7).
const (
	// ReasonRelayAsserted: a media relay's control traffic named the
	// stream, and no dialog holds it. This build observes no relay control
	// protocol (rtpengine ng is not decoded), so no stream has it.
	ReasonRelayAsserted = "relay-asserted-but-no-dialog"
	// ReasonSignaledNoDialog: a SIP SDP named an end of the stream, and the
	// dialog store does not hold that Call-ID (evicted, or refused).
	ReasonSignaledNoDialog = "signaled-but-no-dialog"
	// ReasonNeverNamed: no SDP the capture holds named either end.
	ReasonNeverNamed = "never-named"
)

type reconcileOrphansIn struct {
	Limit            int    `json:"limit,omitempty" default:"50" desc:"rows per page"`
	Cursor           string `json:"cursor,omitempty" desc:"next_cursor of the previous page"`
	MaxResponseBytes int    `json:"max_response_bytes,omitempty" default:"--mcp-max-response-bytes" min:"1" desc:"answer byte cap; rows past it wait for next_cursor"`
}

// ReconcileOrphans is reconcile_orphans' answer: one page of the RTP
// streams no dialog claims, in first_seen order, each with the reason.
type ReconcileOrphans struct {
	Orphans []Orphan `json:"orphans" nonnull:"true" desc:"orphaned streams in first_seen order, with the reason"`
	// TotalOrphans counts every orphan, on every page.
	TotalOrphans int `json:"total_orphans" desc:"orphaned streams in the capture, every page"`
	// RelayWasConsulted is always false: this server holds no live relay
	// reconciler, so never-named reads "nobody asked", not "the relay
	// said it does not know".
	RelayWasConsulted bool `json:"relay_was_consulted" desc:"always false: no relay was asked"`
	// Note says what the reasons cannot cover.
	Note string `json:"note" desc:"what this answer cannot see"`
	sdk.Page
}

// Orphan is one stream without a dialog.
type Orphan struct {
	SSRC      string    `json:"ssrc" desc:"RTP SSRC, 0x and 8 hex digits"`
	Src       string    `json:"src" desc:"sender ip:port"`
	Dst       string    `json:"dst" desc:"receiver ip:port"`
	Packets   uint64    `json:"packets" desc:"packets received"`
	FirstSeen time.Time `json:"first_seen" desc:"arrival of the first packet"`
	Frame     string    `json:"frame,omitempty" desc:"evidence pointer of the first packet"`
	Reason    string    `json:"reason" enum:"relay-asserted-but-no-dialog|signaled-but-no-dialog|never-named" desc:"why no dialog holds the stream"`
	// AssertedBy says who named the stream's endpoint: signaled (a SIP
	// SDP) or media-relay; absent when never named.
	AssertedBy string `json:"asserted_by,omitempty" enum:"signaled|media-relay" desc:"who named its endpoint; absent when never named"`
	// AssertedCallID is the Call-ID whose SDP named the endpoint.
	AssertedCallID string `json:"asserted_call_id,omitempty" desc:"Call-ID whose SDP named the endpoint"`
	// NamedEndpoint is the stream end the SDP named.
	NamedEndpoint string `json:"named_endpoint,omitempty" desc:"the stream end the SDP named, ip:port"`
	// NamedAt is when the SDP naming it was captured.
	NamedAt           *time.Time `json:"named_at,omitempty" desc:"capture time of the SDP that named it"`
	RelayWasConsulted bool       `json:"relay_was_consulted" desc:"always false: no relay was asked"`
	Note              string     `json:"note" desc:"what the reason rests on"`
}

// orphanNote is the top-level note: what no reason can cover here.
const orphanNote = "sipnab reads SDP from SIP only: a stream an SDP in another protocol named (MGCP, H.248, RTSP) reads never-named. " +
	"No media relay's control traffic is decoded or queried, so relay-asserted-but-no-dialog does not occur and relay control retry counts are not measured."

func reconcileOrphansTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "reconcile_orphans",
		Title: "Why RTP streams have no dialog",
		Description: "Pages the RTP streams no dialog holds, each with its reason: signaled-but-no-dialog (an SDP named it, " +
			"its dialog is gone) or never-named (nobody asked a relay: relay_was_consulted false).",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Every orphaned stream and why"},
			{Title: "The first ten", Args: map[string]any{"limit": 10}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "a cursor that is not this listing's: malformed, altered, or from another capture or tool"},
			{Code: sdk.CodeInvalidParams, When: "a max_response_bytes too small for one orphan"},
		},
	}, func(ctx context.Context, c *sdk.Call, in reconcileOrphansIn) (ReconcileOrphans, error) {
		return reconcileOrphans(d, c, in)
	})
}

// orphanRow is one orphan with its sort key.
type orphanRow struct {
	key string
	o   Orphan
}

func reconcileOrphans(d *deps, c *sdk.Call, in reconcileOrphansIn) (ReconcileOrphans, error) {
	src := answer.SourceState(d.capture.Status())
	pos, err := c.BindCursor(in.Cursor, src.Identity.Instance)
	if err != nil {
		return ReconcileOrphans{}, err
	}
	limit := c.Limit(in.Limit)
	rows, err := collectOrphans(d)
	if err != nil {
		return ReconcileOrphans{}, err
	}
	var page []Orphan
	var keys []string
	more := false
	for i := range rows {
		if !sdk.After(rows[i].key, pos) {
			continue
		}
		if len(page) == limit {
			more = true
			break
		}
		page = append(page, rows[i].o)
		keys = append(keys, rows[i].key)
	}
	build := func(k int) ReconcileOrphans {
		last, m, next := c.PageEnd(pos, keys, k, more)
		out := ReconcileOrphans{
			Orphans:      append([]Orphan{}, page[:k]...),
			TotalOrphans: len(rows),
			Note:         orphanNote,
			Page:         sdk.NewPage(k, len(rows), m, next, src, reconcileOrphansSchemaVersion),
		}
		out.Page.ResumeAt(src, last)
		return out
	}
	k, err := c.FitPage(len(page), in.MaxResponseBytes, "orphan", func(k int) any { return build(k) })
	if err != nil {
		return ReconcileOrphans{}, err
	}
	return build(k), nil
}

// collectOrphans walks every stream once: a stream the store holds as
// orphaned (no SDP named either end, core/media binds any stream whose end
// a SIP SDP announced, before or after its first packet) is never-named; a
// stream bound to a Call-ID the dialog store does not hold is
// signaled-but-no-dialog. Sorted by the cursor key.
func collectOrphans(d *deps) ([]orphanRow, error) {
	store := d.capture.Media()
	if store == nil {
		return nil, nil
	}
	evicted := store.Stats().EndpointsEvicted
	held := map[string]bool{} // Call-ID -> the dialog store holds it
	var rows []orphanRow
	err := store.Each(func(s *media.StreamInfo) error {
		if s.Kind == "fax" {
			return nil // T.38 is not RTP (no SSRC to reconcile)
		}
		var o Orphan
		switch {
		case s.Orphaned:
			o = neverNamed(s, evicted)
		default:
			has, ok := held[s.AssociatedDialog]
			if !ok {
				_, has = d.capture.Dialogs().Lookup(s.AssociatedDialog)
				held[s.AssociatedDialog] = has
			}
			if has {
				return nil
			}
			o = signaledNoDialog(store, s)
		}
		rows = append(rows, orphanRow{key: sdk.TimeCursor(s.FirstSeen, s.SSRC+"@"+s.Src+">"+s.Dst), o: o})
		return nil
	})
	sort.Slice(rows, func(i, j int) bool { return rows[i].key < rows[j].key })
	return rows, err
}

func baseOrphan(s *media.StreamInfo) Orphan {
	return Orphan{SSRC: s.SSRC, Src: s.Src, Dst: s.Dst, Packets: s.Packets, FirstSeen: s.FirstSeen, Frame: s.Frame}
}

func neverNamed(s *media.StreamInfo, endpointsEvicted uint64) Orphan {
	o := baseOrphan(s)
	o.Reason = ReasonNeverNamed
	o.Note = fmt.Sprintf("no SIP SDP in the capture named %s or %s; found by RTP heuristics (%d packets of version 2, one SSRC, a steady payload type and consecutive sequence numbers); "+
		"no relay was asked: nobody asked", s.Src, s.Dst, media.MinSequential)
	if endpointsEvicted > 0 {
		o.Note += fmt.Sprintf("; %d SDP media endpoints were forgotten at the stream store's endpoint cap, and this stream's may be one", endpointsEvicted)
	}
	return o
}

func signaledNoDialog(store *media.Store, s *media.StreamInfo) Orphan {
	o := baseOrphan(s)
	o.Reason = ReasonSignaledNoDialog
	o.AssertedBy = s.DialogAssertion
	o.AssertedCallID = s.AssociatedDialog
	for _, ep := range store.EndpointsFor(s.AssociatedDialog) {
		if ep.Address == s.Src || ep.Address == s.Dst {
			o.NamedEndpoint = ep.Address
			at := ep.At.UTC()
			o.NamedAt = &at
			break
		}
	}
	o.Note = "an SDP of this Call-ID named the stream's endpoint, but the dialog store does not hold the Call-ID: " +
		"evicted at its cap (--limit, --max-store-mb; capture_status counts evictions) or never admitted"
	return o
}
