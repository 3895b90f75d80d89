package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// TestErrorBodiesCarryAStableCode: every error has a stable string code
// (its kind, or the default of its JSON-RPC code), only a -32602 is a
// refusal a tool answers as isError, and the body omits what does not
// apply.
func TestErrorBodiesCarryAStableCode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		refusal bool
		body    string
	}{
		{"plain invalid params", InvalidParams("limit %d: want a positive number", -1), true,
			`{"code":"invalid_argument","message":"limit -1: want a positive number"}`},
		{"unknown id names its argument", UnknownID("call_id", "unknown call_id %q", "x@y"), true,
			`{"code":"unknown_id","message":"unknown call_id \"x@y\"","argument":"call_id"}`},
		{"gate", NotEnabled("filename", "file tools are disabled"), true,
			`{"code":"not_enabled","message":"file tools are disabled","argument":"filename"}`},
		{"filter at position 0 keeps it", Refuse(KindInvalidFilter, "filter", "bad").At(0), true,
			`{"code":"invalid_filter","message":"bad","argument":"filter","position":0}`},
		{"valid set", Refuse(KindInvalidArgument, "fields", "unknown field").Accepting([]string{"call_id", "state"}), true,
			`{"code":"invalid_argument","message":"unknown field","argument":"fields","valid":["call_id","state"]}`},
		{"wrapped refusal is still one", fmt.Errorf("ctx: %w", UnknownID("rule_id", "unknown")), true,
			`{"code":"unknown_id","message":"unknown","argument":"rule_id"}`},
		{"internal", Internal("disk"), false, `{"code":"internal","message":"disk"}`},
		{"unavailable", Unavailable("at capacity"), false, `{"code":"unavailable","message":"at capacity"}`},
		{"foreign error is internal", errors.New("boom"), false, `{"code":"internal","message":"boom"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := AsError(tc.err)
			if e.Refusal() != tc.refusal {
				t.Errorf("Refusal() = %v, want %v", e.Refusal(), tc.refusal)
			}
			b, err := json.Marshal(e.Body())
			if err != nil || string(b) != tc.body {
				t.Errorf("body %s, want %s", b, tc.body)
			}
		})
	}
}
