package core

import (
	"strings"

	"github.com/sipnab/sipnab/sdk"
)

// unfencedValue readies sender-written text an answer shows without
// markers, the way the signaling bundle's group_dialogs does: a method
// token (the request line's or the CSeq's, sender-written and unbounded by
// RFC 3261; core/sip cuts it at sip.MaxMethodBytes) keeps the fence's
// hygiene without its markers (sdk.Fence's: fence code points rewritten to
// ASCII brackets, control and bidi characters stripped, cut to
// sdk.MaxFieldBytes). A clean value comes back unchanged; "" stays "".
// Identifiers never go through it: they are shown verbatim.
func unfencedValue(v string) string {
	return strings.TrimSuffix(strings.TrimPrefix(sdk.Fence(v), sdk.FenceOpen), sdk.FenceClose)
}
