package signaling

import (
	"strings"

	"github.com/sipnab/sipnab/sdk"
)

// unfencedValue readies sender-written text that an answer shows without
// markers: a group_dialogs value of a dimension that stays unfenced (the
// codec is the SDP rtpmap encoding name, the method the request line's
// token, neither bounded by any RFC) and every sender-written value of
// get_dialog_report's JSON (a report carries the provenance note, never
// markers, mcp-surface §2.5). The value keeps the fence's hygiene without
// its markers: fence code points rewritten to ASCII brackets, control and
// bidi characters stripped, the value cut to sdk.MaxFieldBytes with
// sdk.TruncatedMarker, so an unfenced value can neither forge a marker,
// reorder a transcript nor spend the context window. A clean value (a
// state, a code, an address, a registered codec name) comes back
// unchanged; "" stays "".
func unfencedValue(v string) string {
	return strings.TrimSuffix(strings.TrimPrefix(sdk.Fence(v), sdk.FenceOpen), sdk.FenceClose)
}

// unfencedValues is unfencedValue over a list, into a new slice (nil stays
// nil).
func unfencedValues(vs []string) []string {
	if vs == nil {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = unfencedValue(v)
	}
	return out
}
