package vcon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/vcon"
	"github.com/sipnab/sipnab/sdk"
)

// analyzeSchemaVersion is analyze_vcon's response schema version.
const analyzeSchemaVersion = 1

// maxContainerBase64 bounds container_base64 (the request's own cap comes
// first; this one bounds the decode).
const maxContainerBase64 = 32 << 20

type analyzeVConIn struct {
	Container       sdk.Object `json:"container,omitempty" desc:"a vCon container (JSON object) holding a sip-message-trace attachment; not with container_base64"`
	ContainerBase64 string     `json:"container_base64,omitempty" desc:"the same container's JSON bytes, base64 (standard or URL alphabet, padded or not); not with container"`
	Limit           int        `json:"limit,omitempty" default:"50" desc:"dialog rows (1..--mcp-max-rows)"`
}

// AnalyzeVCon is analyze_vcon's answer.
type AnalyzeVCon struct {
	SchemaVersion int `json:"schema_version" desc:"response schema version (1)"`
	// ContainerUUID is the container's uuid, verbatim ("" when none).
	ContainerUUID string `json:"container_uuid,omitempty" desc:"the container's uuid"`
	// Traces, FramesRebuilt and the skipped messages account for the
	// rebuild.
	Traces          int            `json:"traces" desc:"sip-message-trace attachments read"`
	FramesRebuilt   int            `json:"frames_rebuilt" desc:"SIP messages rebuilt as UDP datagrams and analysed"`
	MessagesSkipped int            `json:"messages_skipped" desc:"trace messages not rebuilt (unreadable time, address or body, too large, past 20000)"`
	Skipped         []vcon.Skipped `json:"skipped" nonnull:"true" desc:"the first 16 skipped messages and why"`
	// Dialogs are the scratch analysis's rows, oldest first, fenced like
	// list_dialogs'.
	Dialogs      []dialog.Summary `json:"dialogs" nonnull:"true" desc:"the rebuilt SIP's dialogs as list_dialogs rows (state, final status, timing, PDD...), oldest first; sender-written values fenced"`
	Returned     int              `json:"returned" desc:"rows in this answer"`
	TotalMatched int              `json:"total_matched" desc:"dialogs the rebuilt SIP holds"`
	Truncated    bool             `json:"truncated" desc:"more dialogs than limit (the rest are not listed: raise limit)"`
	// Note says what the analysis is and is not.
	Note string `json:"note" desc:"what this analysis is: the container's SIP alone, apart from the loaded capture; no RTP (a container's audio is not packets)"`
}

func analyzeVConTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "analyze_vcon",
		Title: "Analyse a vCon container's SIP",
		Description: "Rebuilds a vCon container's sip-message-trace (as export_vcon writes it) into a scratch analysis apart from the loaded " +
			"capture and answers its dialogs as list_dialogs rows (state, final status, timing). container or container_base64, not both. " +
			"Signaling only: no RTP is rebuilt.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "A container with one INVITE answered 486", Args: map[string]any{"container": exampleContainer}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "both or neither of container and container_base64"},
			{Code: sdk.CodeInvalidParams, When: "container_base64 that is not base64 of a JSON object, or larger than 32 MiB"},
			{Code: sdk.CodeInvalidParams, When: "a container with no sip-message-trace attachment"},
			{Code: sdk.CodeUnavailable, When: "the call was cancelled while the scratch analysis read"},
		},
	}, func(ctx context.Context, c *sdk.Call, in analyzeVConIn) (AnalyzeVCon, error) {
		return analyzeVCon(ctx, d, c, in)
	})
}

func analyzeVCon(ctx context.Context, d *deps, c *sdk.Call, in analyzeVConIn) (AnalyzeVCon, error) {
	doc := map[string]any(in.Container)
	switch {
	case in.Container != nil && in.ContainerBase64 != "":
		return AnalyzeVCon{}, sdk.InvalidParams("give container or container_base64, not both: two containers have two analyses")
	case in.Container == nil && in.ContainerBase64 == "":
		return AnalyzeVCon{}, sdk.InvalidParams("give container (a vCon object) or container_base64 (its JSON bytes, base64)")
	case in.ContainerBase64 != "":
		if len(in.ContainerBase64) > maxContainerBase64 {
			return AnalyzeVCon{}, sdk.Refuse(sdk.KindInvalidArgument, "container_base64", "container_base64 is %d bytes, over %d", len(in.ContainerBase64), maxContainerBase64)
		}
		raw, err := decodeBase64(in.ContainerBase64)
		if err != nil {
			return AnalyzeVCon{}, sdk.Refuse(sdk.KindInvalidArgument, "container_base64", "container_base64 is not base64: %v", err)
		}
		if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
			return AnalyzeVCon{}, sdk.Refuse(sdk.KindInvalidArgument, "container_base64", "container_base64 does not hold a JSON object")
		}
	}
	rb := vcon.Rebuild(doc)
	if rb.Traces == 0 {
		return AnalyzeVCon{}, sdk.InvalidParams("the container has no %s attachment: nothing to rebuild (export_vcon writes one)", vcon.PurposeTrace)
	}
	// A scratch engine of its own, as compare_captures reads a file: the
	// loaded capture is untouched and the scratch one is closed after.
	sc := engine.New(engine.Config{Expand: capture.ExpandOptions{Stdin: bytes.NewReader(rb.Pcap)}}, nil)
	defer sc.Close()
	if err := sc.LoadFiles(ctx, []string{capture.StdinPath}); err != nil {
		return AnalyzeVCon{}, sdk.Internal("reading the rebuilt SIP: %v", err)
	}
	select {
	case <-sc.Done():
	case <-ctx.Done():
		return AnalyzeVCon{}, sdk.Unavailable("analyze_vcon: %v", ctx.Err())
	}
	sc.Wait()
	var ms analysis.MediaSource
	if m := sc.Media(); m != nil {
		ms = m
	}
	q := query.For(sc.Dialogs(), ms, d.th)
	p, err := q.List(ctx, query.ListOptions{Order: dialog.ByCreated, Limit: c.Limit(in.Limit)})
	if err != nil {
		return AnalyzeVCon{}, sdk.Internal("listing the rebuilt dialogs: %v", err)
	}
	rows := make([]dialog.Summary, len(p.Rows))
	for i := range p.Rows {
		rows[i] = answer.FencedRow(c, p.Rows[i])
	}
	out := AnalyzeVCon{SchemaVersion: analyzeSchemaVersion, ContainerUUID: answer.Unfenced(rb.UUID), Traces: rb.Traces,
		FramesRebuilt: rb.Frames, MessagesSkipped: rb.SkippedTotal, Skipped: rb.Skipped,
		TotalMatched: p.TotalMatched, Truncated: p.More,
		Note: "the container's SIP alone, rebuilt as UDP datagrams into a scratch analysis apart from the loaded capture; no RTP is rebuilt, so media verdicts are absent"}
	for i := range out.Skipped {
		out.Skipped[i].Reason = answer.Unfenced(out.Skipped[i].Reason)
	}
	k, err := c.FitPage(len(rows), 0, "dialog", func(k int) any {
		o := out
		o.Dialogs, o.Returned = rows[:k], k
		return o
	})
	if err != nil {
		return AnalyzeVCon{}, err
	}
	out.Dialogs, out.Returned = rows[:k], k
	out.Truncated = out.Truncated || k < len(rows)
	return out, nil
}

// decodeBase64 reads standard or URL-alphabet base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	var firstErr error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil {
			return b, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// exampleContainer is analyze_vcon's example: a container holding one
// INVITE answered 486 Busy Here, as export_vcon writes its trace.
var exampleContainer = map[string]any{
	"vcon": "0.4.0", "uuid": "01928e10-193e-8231-b9a2-279e0d16bc46", "created_at": "2026-01-01T00:00:01Z",
	"attachments": []any{map[string]any{
		"purpose": "sip-message-trace", "start": "2026-01-01T00:00:00Z", "party": 0, "dialog": 0, "encoding": "json",
		"body": map[string]any{"messages": []any{
			map[string]any{"time": "2026-01-01T00:00:00Z", "src": "192.0.2.1:5060", "dst": "192.0.2.2:5060",
				"text": "INVITE sip:bob@192.0.2.2 SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK1\r\nFrom: <sip:alice@192.0.2.1>;tag=a\r\nTo: <sip:bob@192.0.2.2>\r\nCall-ID: ex-1@192.0.2.1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"},
			map[string]any{"time": "2026-01-01T00:00:01Z", "src": "192.0.2.2:5060", "dst": "192.0.2.1:5060",
				"text": "SIP/2.0 486 Busy Here\r\nVia: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK1\r\nFrom: <sip:alice@192.0.2.1>;tag=a\r\nTo: <sip:bob@192.0.2.2>;tag=b\r\nCall-ID: ex-1@192.0.2.1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"},
		}},
	}},
}
