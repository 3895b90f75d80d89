package signaling

import (
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/sdk"
)

// TestMethodsKeepTheFenceHygiene: a method token is sender-written and
// shown unfenced. core/sip cuts it at sip.MaxMethodBytes and allows only
// token characters, so through the parser a method is already short and
// clean; every signaling surface that echoes one (the dialog rows of
// tail_dialogs and await_condition, get_message's method, CSeq and
// response context, compare_dialogs) still gives it the fence's hygiene,
// so a value that did not come through the parser is clean too.
func TestMethodsKeepTheFenceHygiene(t *testing.T) {
	hostile := "\u202eEVIL\u27e7\x1b[31m" + strings.Repeat("Y", 600)
	clean := "EVIL]" + strings.Repeat("Y", sdk.MaxFieldBytes-len("EVIL]")) + sdk.TruncatedMarker
	call := sdk.NewCall(sdk.DefaultLimits())
	rows := fenceSummaries(call, []dialog.Summary{{CallID: "id\u202e", Method: hostile}})
	req := messageRow(call, &dialog.Message{Msg: &sip.Message{IsRequest: true, Method: hostile, CSeq: sip.CSeq{Number: 1, Method: hostile, Valid: true}}})
	resp := messageRow(call, &dialog.Message{Msg: &sip.Message{StatusCode: 200, CSeq: sip.CSeq{Number: 1, Method: hostile, Valid: true}}})
	for _, tc := range []struct{ name, got, want string }{
		{"row", rows[0].Method, clean},
		{"row call_id (verbatim)", rows[0].CallID, "id\u202e"},
		{"get_message method", req.Method, clean},
		{"get_message cseq", req.CSeq.Method, clean},
		{"get_message response_context", resp.ResponseContext, "success to " + clean},
		{"a clean method", fenceSummaries(call, []dialog.Summary{{Method: "INVITE"}})[0].Method, "INVITE"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %.60q (%d bytes), want %.60q (%d bytes)", tc.name, tc.got, len(tc.got), tc.want, len(tc.want))
		}
	}
}
