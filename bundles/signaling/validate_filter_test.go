package signaling

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

type sgValidate struct {
	SchemaVersion int    `json:"schema_version"`
	Expr          string `json:"expr"`
	Valid         bool   `json:"valid"`
	Canonical     string `json:"canonical"`
	Error         *struct {
		Message  string `json:"message"`
		Position int    `json:"position"`
		Caret    string `json:"caret"`
		Hint     string `json:"hint"`
	} `json:"error"`
	TotalMatched *int `json:"total_matched"`
	TotalDialogs int  `json:"total_dialogs"`
}

// TestValidateFilter: counts checked against tshark's per-Call-ID view of
// b2bua-asterisk.pcapng (12 Call-IDs; opening methods SUBSCRIBE 5,
// PUBLISH 3, INVITE 2, REGISTER 2), and parse failures answered as
// successful calls with valid false and total_matched null.
func TestValidateFilter(t *testing.T) {
	c := sgLoad(t, testcap.Public("b2bua-asterisk.pcapng"))
	cases := []struct {
		expr      string
		valid     bool
		matched   int
		pos       int    // parse failures
		msg, hint string // substrings
	}{
		{expr: "method == INVITE", valid: true, matched: 2},
		{expr: "method == SUBSCRIBE or method == PUBLISH", valid: true, matched: 8},
		{expr: "not method == INVITE", valid: true, matched: 10},
		// The SUBSCRIBEs and PUBLISHes end 489 or 401 (tshark's per-Call-ID
		// responses): 8 Failed dialogs.
		{expr: "state == Failed", valid: true, matched: 8},
		{expr: "problems and state == Failed", valid: true, matched: 8},
		{expr: "method == OPTIONS", valid: true, matched: 0},
		{expr: "method == ", pos: 10, msg: "expected a value"},
		{expr: "state == failed", pos: 9, msg: "state", hint: "Failed"},
		{expr: "from_user == alice", pos: 0, msg: "unknown field", hint: "from.user"},
		{expr: "(method == INVITE", pos: 17, msg: ")"},
		{expr: "", pos: 0, msg: "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			var got sgValidate
			r := sgCall(t, c, "validate_filter", map[string]any{"expr": tc.expr}, &got)
			if got.Valid != tc.valid || got.Expr != tc.expr || got.TotalDialogs != 12 || got.SchemaVersion != validateFilterSchemaVersion {
				t.Fatalf("got %+v", got)
			}
			if tc.valid {
				if got.TotalMatched == nil || *got.TotalMatched != tc.matched || got.Error != nil || got.Canonical == "" {
					t.Errorf("total_matched %v error %v canonical %q, want %d, none, set", got.TotalMatched, got.Error, got.Canonical, tc.matched)
				}
				return
			}
			var raw map[string]json.RawMessage
			_ = json.Unmarshal([]byte(r.Blocks[0]), &raw)
			if v, ok := raw["total_matched"]; !ok || string(v) != "null" {
				t.Errorf("total_matched %s (present %v), want an explicit null", v, ok)
			}
			if got.Error == nil {
				t.Fatal("no error")
			}
			if got.Error.Position != tc.pos || !strings.Contains(got.Error.Message, tc.msg) || !strings.Contains(got.Error.Hint, tc.hint) {
				t.Errorf("error %+v, want position %d, message with %q, hint with %q", got.Error, tc.pos, tc.msg, tc.hint)
			}
			if lines := strings.Split(got.Error.Caret, "\n"); len(lines) != 2 || strings.Index(lines[1], "^") != tc.pos {
				t.Errorf("caret %q: want the expression and ^ under position %d", got.Error.Caret, tc.pos)
			}
		})
	}
	// Missing expr is a bad call, not a parse failure.
	if _, err := sgInvoke(t, c, "validate_filter", map[string]any{}, sdk.Limits{}); sgCode(err) != sdk.CodeInvalidParams {
		t.Errorf("missing expr: got %v, want -32602", err)
	}
}

// TestValidateFilterAgreesWithTheTools: a valid expression's count is the
// count search_by_time and group_dialogs report for it (one compiler).
func TestValidateFilterAgreesWithTheTools(t *testing.T) {
	c := sgLoad(t, testcap.Public("sip-routing-error.pcapng"))
	for _, expr := range []string{"state == Failed", "method == INVITE and not state == Failed", "msg_count > 3", "ua =~ '(?i)x-lite'"} {
		t.Run(expr, func(t *testing.T) {
			var v sgValidate
			sgCall(t, c, "validate_filter", map[string]any{"expr": expr}, &v)
			var g sgGroups
			sgCall(t, c, "group_dialogs", map[string]any{"by": "method", "filter": expr, "metrics": []string{"count"}}, &g)
			var s sgTimePage
			sgCall(t, c, "search_by_time", map[string]any{"start": "1970-01-01T00:00:00Z", "filter": expr}, &s)
			if v.TotalMatched == nil || *v.TotalMatched != g.TotalMatched || s.TotalMatched == nil || *s.TotalMatched != g.TotalMatched {
				t.Errorf("validate_filter %v, group_dialogs %d, search_by_time %v", v.TotalMatched, g.TotalMatched, s.TotalMatched)
			}
		})
	}
}
