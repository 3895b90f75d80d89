// Package answer holds what every bundle's answers share, so no bundle
// keeps a copy (a bundle never imports another bundle; bundles/internal is
// their common ground): the source flags and capture identity an answer
// carries, the refusals of a Call-ID the capture does not hold and of a
// filter that does not compile, and the hygiene of sender-written values an
// answer shows without fence markers.
package answer

import (
	"errors"
	"strings"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/sdk"
)

// SourceState converts the engine's status to the sdk's source state: the
// flags every capture-derived answer carries (source_exhausted,
// source_stopped_early, loading) and the capture identity.
func SourceState(st engine.Status) sdk.SourceState {
	return sdk.SourceState{
		Exhausted:    st.SourceExhausted,
		StoppedEarly: st.SourceStoppedEarly,
		Loading:      st.Loading,
		Identity:     Identity(st.Identity),
	}
}

// Identity converts the engine's capture identity to the sdk's.
func Identity(id engine.Identity) sdk.CaptureIdentity {
	return sdk.CaptureIdentity{Node: id.Node, Instance: id.Instance,
		DialogGeneration: id.DialogGeneration, StreamGeneration: id.StreamGeneration}
}

// MaxEchoBytes caps an argument a refusal echoes back.
const MaxEchoBytes = 128

// Clip cuts an argument a refusal echoes to MaxEchoBytes, marking the cut
// with "...".
func Clip(s string) string {
	if len(s) > MaxEchoBytes {
		return s[:MaxEchoBytes] + "..."
	}
	return s
}

// UnknownCallRefusal documents, in a tool's descriptor, the refusal
// UnknownCall returns.
var UnknownCallRefusal = sdk.Refusal{Code: sdk.CodeInvalidParams, When: "an unknown call_id (list_dialogs lists them)"}

// UnknownCall is the refusal of a Call-ID the capture holds no dialog for,
// naming the argument that carried it (call_id, call_id_a, ...) and the
// tool that lists the valid ones. The Call-ID is echoed cut to
// MaxEchoBytes.
func UnknownCall(arg, callID string) error {
	return sdk.UnknownID(arg, "unknown %s %q: no dialog with this Call-ID (list_dialogs lists them)", arg, Clip(callID))
}

// CompileFilter compiles a tool's filter argument with the capture's query
// layer; a bad expression is an invalid-params refusal carrying the
// compiler's message, position and caret line.
func CompileFilter(q *query.Querier, expr string) (*filter.Filter, error) {
	f, err := q.Compile(expr)
	if err != nil {
		var fe *filter.Error
		if errors.As(err, &fe) {
			return nil, sdk.Refuse(sdk.KindInvalidFilter, "filter", "invalid filter: %s\n%s", fe.Error(), fe.Caret).At(fe.Pos)
		}
		return nil, sdk.Refuse(sdk.KindInvalidFilter, "filter", "invalid filter: %v", err)
	}
	return f, nil
}

// Unfenced readies sender-written text that an answer shows without
// markers: a method token (the request line's or the CSeq's, unbounded by
// RFC 3261), a group_dialogs value of a dimension that stays unfenced, an
// evidence note of a report. The value gets the fence's hygiene without its
// markers (sdk.Fence: the one sanitizer, internal/textsafe; fence code
// points rewritten to ASCII brackets, terminal escapes, control, bidi and
// other format characters dropped, cut to sdk.MaxFieldBytes with
// sdk.TruncatedMarker), so an unfenced value can neither forge a marker,
// reorder a transcript nor spend the context window. A clean value comes
// back unchanged; "" stays "". Identifiers never go through it: they are
// shown verbatim.
func Unfenced(v string) string {
	return strings.TrimSuffix(strings.TrimPrefix(sdk.Fence(v), sdk.FenceOpen), sdk.FenceClose)
}

// UnfencedAll is Unfenced over a list, into a new slice (nil stays nil).
func UnfencedAll(vs []string) []string {
	if vs == nil {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = Unfenced(v)
	}
	return out
}

// FenceAll fences each sender-written value of a list through the call
// (which arranges the provenance note), into a new slice (nil stays nil).
func FenceAll(c *sdk.Call, vs []string) []string {
	if vs == nil {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = c.Fence(v)
	}
	return out
}
