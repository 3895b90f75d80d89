package captures

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/sipnab/sipnab/sdk"
)

// showSchemaVersion is show_evidence's response schema version.
const showSchemaVersion = 1

// Bounds of show_evidence (engine.md §17: evidence bytes shown 1–4096,
// default 256).
const (
	defaultShowBytes = 256
	maxShowBytes     = 4096
	// maxRefs bounds the pointers of one call: each may cost a read of
	// its file up to its ordinal.
	maxRefs = 100
)

type showEvidenceIn struct {
	Refs     []string `json:"refs" desc:"evidence pointers <source>#<ordinal>@<digest> (1 to 100), as answers give them (frame, frames, frame_ref)"`
	MaxBytes *int     `json:"max_bytes,omitempty" default:"256" min:"0" max:"4096" desc:"frame bytes shown as hex per frame, 1-4096 (default 256); 0 shows none"`
}

// EvidenceFrame is one pointer's verification.
type EvidenceFrame struct {
	Pointer string `json:"pointer" desc:"the pointer as given"`
	Status  string `json:"status" enum:"verified|unverified|unresolvable" desc:"verified: read from the file, digest matches; unresolvable: no bytes, or a digest mismatch (never shown)"`
	// Source and Ordinal are absent when the pointer does not parse.
	Source  string `json:"source,omitempty" desc:"the file looked up: the source's final path component"`
	Ordinal uint64 `json:"ordinal,omitempty" desc:"frame number within the file, from 1"`
	// FrameBytes, HexBytesShown, Truncated and Hex come with a resolved
	// frame, Reason with an unresolvable one.
	FrameBytes    *int   `json:"frame_bytes,omitempty" desc:"captured bytes of the frame"`
	HexBytesShown *int   `json:"hex_bytes_shown,omitempty" desc:"frame bytes shown in hex"`
	Truncated     *bool  `json:"truncated,omitempty" desc:"the frame is longer than the bytes shown"`
	Hex           string `json:"hex,omitempty" desc:"the first hex_bytes_shown bytes of the frame, lower-case hex"`
	Reason        string `json:"reason,omitempty" desc:"why the pointer is unresolvable"`
}

// ShowEvidence is show_evidence's answer.
type ShowEvidence struct {
	Requested     int             `json:"requested" desc:"pointers asked for"`
	Resolved      int             `json:"resolved" desc:"frames found (verified or unverified)"`
	Verified      int             `json:"verified" desc:"frames whose bytes hash to the pointer's digest"`
	Summary       string          `json:"summary" desc:"one line: verified / unresolvable counts"`
	Frames        []EvidenceFrame `json:"frames" nonnull:"true" desc:"one per pointer, in the order given"`
	SchemaVersion int             `json:"schema_version" desc:"response schema version"`
}

func showEvidenceTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "show_evidence",
		Title: "Verify evidence pointers",
		Description: "Re-read the frames behind evidence pointers (<source>#<ordinal>@<digest>) from the capture files in the file root " +
			"and check each frame's SHA-256: verified frames show their first max_bytes as hex; a digest mismatch is unresolvable, never shown.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples: []sdk.Example{
			{Title: "Verify the first INVITE's frame", Args: map[string]any{"refs": []string{samplePointer}, "max_bytes": 64}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "no refs, or more than 100"},
		},
	}, func(ctx context.Context, c *sdk.Call, in showEvidenceIn) (ShowEvidence, error) {
		return showEvidence(ctx, d, c, in)
	})
}

func showEvidence(ctx context.Context, d *deps, c *sdk.Call, in showEvidenceIn) (ShowEvidence, error) {
	if err := d.needRoot(); err != nil {
		return ShowEvidence{}, err
	}
	switch n := len(in.Refs); {
	case n == 0:
		return ShowEvidence{}, sdk.Refuse(sdk.KindInvalidArgument, "refs", "refs needs at least one evidence pointer <source>#<ordinal>@<digest>")
	case n > maxRefs:
		return ShowEvidence{}, sdk.Refuse(sdk.KindInvalidArgument, "refs", "refs holds %d pointers; at most %d per call", n, maxRefs)
	}
	show := defaultShowBytes
	if in.MaxBytes != nil {
		show = *in.MaxBytes
	}
	rs := d.resolve(ctx, in.Refs)
	asked := show
	build := func(show int) ShowEvidence {
		out := ShowEvidence{Requested: len(in.Refs), Frames: make([]EvidenceFrame, 0, len(in.Refs)), SchemaVersion: showSchemaVersion}
		unresolvable := 0
		for _, r := range rs {
			f := EvidenceFrame{Pointer: r.pointer, Status: r.status}
			if r.parsed {
				f.Source, f.Ordinal = r.file, r.ref.Ordinal
			}
			if r.status == statusUnresolvable {
				f.Reason = r.reason
				unresolvable++
				out.Frames = append(out.Frames, f)
				continue
			}
			out.Resolved++
			if r.status == statusVerified {
				out.Verified++
			}
			n, shown := len(r.data), min(show, len(r.data))
			trunc := shown < n
			f.FrameBytes, f.HexBytesShown, f.Truncated = &n, &shown, &trunc
			f.Hex = hex.EncodeToString(r.data[:shown])
			out.Frames = append(out.Frames, f)
		}
		out.Summary = fmt.Sprintf("%d of %d pointers verified, %d unresolvable", out.Verified, out.Requested, unresolvable)
		if show < asked {
			out.Summary += fmt.Sprintf("; at most %d bytes of each frame shown (of %d asked) to fit the response cap", show, asked)
		}
		return out
	}
	// The bytes shown per frame shrink to fit --mcp-max-response-bytes
	// (hex_bytes_shown and truncated say so frame by frame); the frames
	// themselves, one per pointer asked for, are never dropped.
	budget, err := c.ResponseBudget(0)
	if err != nil {
		return ShowEvidence{}, err
	}
	fit, err := c.FitRows(show, budget, func(k int) any { return build(k) })
	if err != nil {
		return ShowEvidence{}, sdk.Internal("%v", err)
	}
	return build(fit), nil
}
