package captures

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/sdk"
)

// compareSchemaVersion is compare_captures' response schema version.
const compareSchemaVersion = 1

// compareDefaultTopN is top_n when absent.
const compareDefaultTopN = 50

type compareCapturesIn struct {
	A          string   `json:"a" desc:"the first capture: a file name in the file root (list_captures)"`
	B          string   `json:"b" desc:"the second capture, another file in the root"`
	Dimensions []string `json:"dimensions,omitempty" default:"[state, response_code]" desc:"aggregate_dialogs dimensions to compare: state, response_code, method, from.user, to.user, ua, src.ip, dst.ip, rtp.codec (default state and response_code)"`
	TopN       int      `json:"top_n,omitempty" default:"50" min:"0" desc:"buckets per dimension, largest movement first; 0 means 50, clamped to --mcp-max-rows"`
}

// CaptureSide is what one file's scratch read gave.
type CaptureSide struct {
	Filename string `json:"filename" desc:"file name in the file root"`
	Packets  uint64 `json:"packets" desc:"frames read"`
	Dialogs  int    `json:"dialogs" desc:"dialogs held after the read"`
	Streams  int    `json:"streams" desc:"RTP streams held after the read"`
	// DialogsDropped counts dialogs evicted or refused at the dialog cap
	// (100000, dialog.DefaultMaxDialogs, not the operator's --limit) or the
	// store's byte budget: absent from the counts.
	DialogsDropped uint64 `json:"dialogs_dropped" desc:"dialogs evicted or refused at the 100000-dialog cap or the byte budget: not counted"`
	ReadError      string `json:"read_error,omitempty" desc:"why the read stopped before the end of the file"`
}

// CompareBucket is one value of a dimension on both sides.
type CompareBucket struct {
	Value string `json:"value" desc:"the dimension's value; (none) for dialogs without one"`
	A     int    `json:"a" desc:"dialogs with the value in a (0 when absent there)"`
	B     int    `json:"b" desc:"dialogs with the value in b (0 when absent there)"`
	Delta int    `json:"delta" desc:"b - a"`
}

// CompareOther sums the buckets past top_n.
type CompareOther struct {
	Buckets int `json:"buckets" desc:"values past top_n"`
	A       int `json:"a" desc:"their dialogs in a"`
	B       int `json:"b" desc:"their dialogs in b"`
	Delta   int `json:"delta" desc:"b - a over them"`
}

// CompareDimension is one dimension's comparison.
type CompareDimension struct {
	Dimension      string          `json:"dimension" desc:"the dimension"`
	Buckets        []CompareBucket `json:"buckets" nonnull:"true" desc:"values ranked by absolute movement |b - a|, largest first (ties by value)"`
	Other          CompareOther    `json:"other" desc:"the values past top_n, summed"`
	DistinctValues int             `json:"distinct_values" desc:"values seen on either side"`
}

// CompareCaptures is compare_captures' answer.
type CompareCaptures struct {
	A             CaptureSide        `json:"a" desc:"the first capture's read"`
	B             CaptureSide        `json:"b" desc:"the second capture's read"`
	Dimensions    []CompareDimension `json:"dimensions" nonnull:"true" desc:"one per dimension asked for"`
	Summary       string             `json:"summary" desc:"one line: dialogs on each side and the largest movement"`
	Note          string             `json:"note" desc:"how the files were read"`
	SchemaVersion int                `json:"schema_version" desc:"response schema version"`
}

const compareNote = "Each file is read whole into a scratch capture of its own (the loaded capture and every cursor are untouched), " +
	"with the default engine settings: SIP on every port (no --portrange gate), the 100000-dialog cap. " +
	"Two captures never share a Call-ID, so aggregates are compared, not dialogs; a value absent on one side counts 0."

func compareCapturesTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "compare_captures",
		Title: "Compare two capture files",
		Description: "Read two capture files of the file root into scratch captures (the loaded one untouched) and compare their dialog counts per " +
			"aggregate_dialogs dimension (default state, response_code), buckets ranked by |b - a|: what changed between before and after.",
		Annotations: sdk.Annotations{Effect: sdk.Writes, Idempotency: sdk.Idempotent, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples: []sdk.Example{{Title: "Another capture of the root against the sample, by state and method",
			Args: map[string]any{"a": secondCapture, "b": sampleCapture, "dimensions": []string{"state", "method"}}}},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "an unknown dimension (checked before either file is opened), a name that is not one file of the root, the same file twice"},
			{Code: sdk.CodeInternal, When: "a side that holds no dialog and stopped on a read error (every bucket would read as a collapse to zero)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in compareCapturesIn) (CompareCaptures, error) {
		return compareCaptures(ctx, d, c, in)
	})
}

func compareCaptures(ctx context.Context, d *deps, c *sdk.Call, in compareCapturesIn) (CompareCaptures, error) {
	if err := d.needRoot(); err != nil {
		return CompareCaptures{}, err
	}
	// The vocabulary first: reading two captures is the most expensive
	// thing the surface does.
	names := in.Dimensions
	if len(names) == 0 {
		names = []string{string(query.DimState), string(query.DimResponseCode)}
	}
	var dims []query.Dimension
	for _, n := range names {
		dim, err := query.ParseDimension(n)
		if err != nil {
			return CompareCaptures{}, sdk.Refuse(sdk.KindInvalidArgument, "dimensions", "%s", strings.Replace(err.Error(), "group_by", "dimension", 1))
		}
		if slices.Contains(dims, dim) {
			return CompareCaptures{}, sdk.Refuse(sdk.KindInvalidArgument, "dimensions", "dimension %s is named twice", dim)
		}
		dims = append(dims, dim)
	}
	if in.TopN < 0 {
		return CompareCaptures{}, sdk.InvalidParams("top_n must be positive, got %d", in.TopN)
	}
	top := in.TopN
	if top == 0 {
		top = compareDefaultTopN
	}
	top = min(top, c.Limits().MaxRows)
	for _, n := range []string{in.A, in.B} {
		if err := sdk.CheckName(n); err != nil {
			return CompareCaptures{}, err
		}
	}
	if in.A == in.B {
		return CompareCaptures{}, sdk.Refuse(sdk.KindInvalidArgument, "b", "a and b name the same file %q: compare two captures", answer.Clip(in.A))
	}
	fa, err := d.root.Open(in.A)
	if err != nil {
		return CompareCaptures{}, err
	}
	defer fa.Close()
	fb, err := d.root.Open(in.B)
	if err != nil {
		return CompareCaptures{}, err
	}
	defer fb.Close()
	if sa, err1 := fa.Stat(); err1 == nil {
		if sb, err2 := fb.Stat(); err2 == nil && os.SameFile(sa, sb) {
			return CompareCaptures{}, sdk.Refuse(sdk.KindInvalidArgument, "b", "a and b are the same file (%q and %q are one file): compare two captures", answer.Clip(in.A), answer.Clip(in.B))
		}
	}
	th := filter.DefaultThresholds()
	type side struct {
		out CaptureSide
		agg []query.Aggregate
	}
	read := func(name string, f *os.File) (side, error) {
		s := side{out: CaptureSide{Filename: name}}
		sc := engine.New(engine.Config{Expand: capture.ExpandOptions{Stdin: f}}, nil)
		defer sc.Close()
		if err := sc.LoadFiles(ctx, []string{capture.StdinPath}); err != nil {
			s.out.ReadError = clipReason(err.Error())
		} else {
			select {
			case <-sc.Done():
			case <-ctx.Done():
				return side{}, sdk.Unavailable("compare_captures: %v", ctx.Err())
			}
			sc.Wait()
		}
		st := sc.Status()
		s.out.Packets, s.out.Dialogs = st.FramesRead, sc.Dialogs().Len()
		s.out.DialogsDropped = st.Dialogs.Evicted + st.Dialogs.Refused
		if st.Media != nil {
			s.out.Streams = st.Media.Streams
		}
		if len(st.Errors) > 0 && s.out.ReadError == "" {
			s.out.ReadError = clipReason(strings.Replace(strings.Join(st.Errors, "; "), capture.StdinName, name, -1))
		}
		if s.out.Dialogs == 0 && s.out.ReadError != "" {
			return side{}, sdk.Internal("compare_captures: %s holds no dialog and its read failed: %s", answer.Clip(name), s.out.ReadError)
		}
		var ms analysis.MediaSource
		if m := sc.Media(); m != nil {
			ms = m
		}
		q := query.For(sc.Dialogs(), ms, th)
		for _, dim := range dims {
			a, err := q.Aggregate(ctx, nil, dim, 0)
			if err != nil {
				return side{}, sdk.Internal("compare_captures: counting %s of %s: %v", dim, answer.Clip(name), err)
			}
			s.agg = append(s.agg, a)
		}
		return s, nil
	}
	a, err := read(in.A, fa)
	if err != nil {
		return CompareCaptures{}, err
	}
	b, err := read(in.B, fb)
	if err != nil {
		return CompareCaptures{}, err
	}
	ranked := make([][]CompareBucket, len(dims))
	for i, dim := range dims {
		type key struct {
			v      string
			absent bool
		}
		counts := map[key]*CompareBucket{}
		var order []key
		add := func(bs []query.Bucket, sideB bool) {
			for _, bk := range bs {
				k := key{bk.Value, bk.Absent}
				cb, ok := counts[k]
				if !ok {
					cb = &CompareBucket{Value: bk.Value}
					counts[k] = cb
					order = append(order, k)
				}
				if sideB {
					cb.B += bk.Count
				} else {
					cb.A += bk.Count
				}
			}
		}
		add(a.agg[i].Buckets, false)
		add(b.agg[i].Buckets, true)
		all := make([]CompareBucket, 0, len(order))
		for _, k := range order {
			cb := counts[k]
			cb.Delta = cb.B - cb.A
			switch {
			case k.absent:
			case dim.SenderWritten():
				cb.Value = c.Fence(cb.Value)
			case dim == query.DimMethod:
				cb.Value = answer.Unfenced(cb.Value)
			}
			all = append(all, *cb)
		}
		slices.SortFunc(all, func(x, y CompareBucket) int {
			if c := cmp.Compare(abs(y.Delta), abs(x.Delta)); c != 0 {
				return c
			}
			return cmp.Compare(x.Value, y.Value)
		})
		ranked[i] = all
	}
	// build keeps the k largest movements of each dimension (k <= top_n),
	// the rest summed in other.
	build := func(k int) CompareCaptures {
		out := CompareCaptures{A: a.out, B: b.out, Dimensions: make([]CompareDimension, 0, len(dims)), Note: compareNote, SchemaVersion: compareSchemaVersion}
		var biggest *CompareBucket
		var biggestDim query.Dimension
		for i, dim := range dims {
			all := ranked[i]
			cd := CompareDimension{Dimension: string(dim), Buckets: all, DistinctValues: len(all)}
			if len(all) > k {
				for _, r := range all[k:] {
					cd.Other.Buckets++
					cd.Other.A += r.A
					cd.Other.B += r.B
				}
				cd.Other.Delta = cd.Other.B - cd.Other.A
				cd.Buckets = all[:k]
			}
			if len(all) > 0 && (biggest == nil || abs(all[0].Delta) > abs(biggest.Delta)) {
				biggest, biggestDim = &all[0], dim
			}
			out.Dimensions = append(out.Dimensions, cd)
		}
		out.Summary = fmt.Sprintf("%s: %d dialogs, %s: %d dialogs", in.A, a.out.Dialogs, in.B, b.out.Dialogs)
		if biggest != nil && biggest.Delta != 0 {
			out.Summary += fmt.Sprintf("; largest movement: %s %s %+d (%d → %d)", biggestDim, biggest.Value, biggest.Delta, biggest.A, biggest.B)
		} else {
			out.Summary += "; no bucket moved"
		}
		if k < top && slices.ContainsFunc(ranked, func(r []CompareBucket) bool { return len(r) > k }) {
			out.Summary += fmt.Sprintf("; %d buckets per dimension kept (of top_n %d) to fit the response cap, the rest in other", k, top)
		}
		return out
	}
	// Fewer buckets per dimension when the answer would pass
	// --mcp-max-response-bytes (the rest still counted in other).
	k, err := c.FitPage(top, 0, "bucket per dimension", func(k int) any { return build(k) })
	if err != nil {
		return CompareCaptures{}, err
	}
	return build(k), nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
