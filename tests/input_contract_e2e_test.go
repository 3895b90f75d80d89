package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// refusal returns the text of a refused call, whether it came as a
// JSON-RPC error or as a tool result with isError set, and whether the call
// was refused at all.
func refusal(r toolResult) (string, bool) {
	switch {
	case r.Err != nil:
		return r.Err.Message, true
	case r.IsError && len(r.Content) > 0:
		return r.Content[0].Text, true
	}
	return "", false
}

// TestInputSchemasAreClosedAndBoundedE2E: tools/list says
// additionalProperties false on every tool's arguments, and gives a limit
// its minimum 1 and its default 50 but no maximum (above --mcp-max-rows a
// limit is clamped, not refused).
func TestInputSchemasAreClosedAndBoundedE2E(t *testing.T) {
	s := startRaw(t, "-N", "--mcp", "-I", sampleCapture())
	_, line := s.request("tools/list", map[string]any{})
	var env struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					AdditionalProperties *bool                     `json:"additionalProperties"`
					Properties           map[string]map[string]any `json:"properties"`
				} `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		t.Fatal(err)
	}
	limits := 0
	for _, tl := range env.Result.Tools {
		if ap := tl.InputSchema.AdditionalProperties; ap == nil || *ap {
			t.Errorf("%s: additionalProperties %v, want false", tl.Name, ap)
		}
		if l, ok := tl.InputSchema.Properties["limit"]; ok {
			limits++
			if l["minimum"] != 1.0 || l["default"] != 50.0 || l["maximum"] != nil {
				t.Errorf("%s: limit minimum %v default %v maximum %v, want 1, 50 and none", tl.Name, l["minimum"], l["default"], l["maximum"])
			}
		}
	}
	if len(env.Result.Tools) < 9 || limits < 3 {
		t.Errorf("%d tools, %d with a limit: want the whole surface", len(env.Result.Tools), limits)
	}
}

// TestArgumentsAndCursorsAreRefusedNotGuessedE2E: through the binary, an
// unknown argument is refused naming the valid ones and the closest; a
// limit of 0 or -1 is refused naming the range up to --mcp-max-rows; a
// limit above it is clamped and the answer says limit_applied (text and
// structuredContent); a cursor is refused by another tool, with another
// filter, and by a server holding another capture instance of the same
// file, while paging on with it visits every dialog exactly once.
func TestArgumentsAndCursorsAreRefusedNotGuessedE2E(t *testing.T) {
	capture := testcap.Public("b2bua-asterisk.pcapng")
	a := startRaw(t, "-N", "--mcp", "--mcp-max-rows", "5", "-I", capture)
	a.waitLoaded()
	b := startRaw(t, "-N", "--mcp", "-I", capture)
	b.waitLoaded()

	first, _ := a.ok("list_dialogs", map[string]any{"limit": 1, "filter": "method == INVITE"})
	cursor, _ := first["next_cursor"].(string)
	if cursor == "" {
		t.Fatalf("no next_cursor on a page of 1: %v", first)
	}
	instanceA := first["capture_identity"].(map[string]any)["instance"].(string)
	bStatus, _ := b.ok("capture_status", nil)
	instanceB := bStatus["capture_identity"].(map[string]any)["instance"].(string)

	for _, tc := range []struct {
		name string
		s    *rawSession
		tool string
		args map[string]any
		want string
	}{
		{"unknown argument", a, "list_dialogs", map[string]any{"limt": 5},
			`unknown argument "limt" (did you mean "limit"?); valid: filter, limit, cursor, fields, max_response_bytes`},
		{"unknown argument of a tool taking one", a, "triage_call", map[string]any{"callid": "x"},
			`unknown argument "callid" (did you mean "call_id"?); valid: call_id`},
		{"limit 0", a, "list_dialogs", map[string]any{"limit": 0},
			`argument "limit": got 0; valid: 1 to 5 (--mcp-max-rows; a larger one is clamped to it)`},
		{"limit -1", a, "find_problems", map[string]any{"limit": -1},
			`argument "limit": got -1; valid: 1 to 5 (--mcp-max-rows; a larger one is clamped to it)`},
		{"cursor from another tool", a, "find_problems", map[string]any{"filter": "method == INVITE", "cursor": cursor},
			"cursor belongs to list_dialogs, not find_problems: pass it back to list_dialogs, or omit cursor to start find_problems"},
		{"cursor with another filter", a, "list_dialogs", map[string]any{"filter": "state == Failed", "cursor": cursor},
			`cursor belongs to list_dialogs with filter "method == INVITE"; this call asks filter "state == Failed": a cursor continues only the listing that issued it; omit cursor to start this one`},
		{"cursor from another capture instance", b, "list_dialogs", map[string]any{"filter": "method == INVITE", "cursor": cursor},
			"cursor is from capture instance " + instanceA + ", and this is instance " + instanceB + ": a cursor does not outlive its capture; omit cursor to start again"},
		{"cursor built by hand", a, "list_dialogs", map[string]any{"cursor": "2019-01-01T00:00:00Z|x"},
			`invalid cursor "2019-01-01T00:00:00Z|x": not a next_cursor this server issued`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.s.on(t).call(tc.tool, tc.args)
			got, refused := refusal(r)
			if !refused || !strings.Contains(got, tc.want) {
				t.Errorf("got refused=%v %q\nwant a refusal containing %q\n%s", refused, got, tc.want, r.Response)
			}
		})
	}

	t.Run("a limit above --mcp-max-rows is clamped and said", func(t *testing.T) {
		m, r := a.on(t).ok("list_dialogs", map[string]any{"limit": 50})
		var sc map[string]any
		if err := json.Unmarshal(r.StructuredContent, &sc); err != nil {
			t.Fatalf("structuredContent: %v", err)
		}
		if m["returned"] != 5.0 || m["limit_applied"] != 5.0 || sc["limit_applied"] != 5.0 {
			t.Errorf("returned %v, limit_applied %v in the text and %v in structuredContent; want 5, 5, 5", m["returned"], m["limit_applied"], sc["limit_applied"])
		}
		if m, _ := a.on(t).ok("list_dialogs", map[string]any{"limit": 5}); m["limit_applied"] != nil {
			t.Errorf("a limit within the ceiling says limit_applied %v", m["limit_applied"])
		}
	})

	t.Run("paging on with the cursor visits every dialog once", func(t *testing.T) {
		all, _ := b.on(t).ok("list_dialogs", map[string]any{"filter": "method == INVITE", "limit": 1000})
		want := len(all["dialogs"].([]any))
		seen := map[string]int{}
		page, next := first, cursor
		for pages := 0; ; pages++ {
			for _, d := range page["dialogs"].([]any) {
				seen[d.(map[string]any)["call_id"].(string)]++
			}
			if next == "" || pages > want {
				break
			}
			page, _ = a.on(t).ok("list_dialogs", map[string]any{"filter": "method == INVITE", "limit": 1, "cursor": next})
			next, _ = page["next_cursor"].(string)
		}
		if len(seen) != want || want < 2 {
			t.Errorf("paged %d distinct dialogs, want %d (at least 2)", len(seen), want)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s returned %d times", id, n)
			}
		}
	})
}
