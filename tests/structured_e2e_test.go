package tests

// With --mcp-output-schemas, structuredContent is attached only to an answer
// of the tool's own output type (mcp-surface §2.9): a rendered document
// (markdown, text, render_ladder) and get_capture_report's yang-json, whose
// JSON follows the sipnab-diagnosis YANG module (docs/yang), carry none.
// MCP requires conforming structuredContent whenever a tool advertises an
// outputSchema, so these three tools advertise none (sdk Descriptor.Renders);
// TestOutputSchemasHoldOnTheLiveWire validates their json answers against
// the answer type's schema.

import (
	"encoding/json"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

func TestStructuredContentOnlyForTheOutputTypeE2E(t *testing.T) {
	s := startRaw(t, "-N", "--mcp", "--mcp-output-schemas", "-I", testcap.Public("sip-rtp-g711.pcap"))
	s.waitLoaded()
	// The report tool's output schema, as tools/list sends it.
	_, line := s.request("tools/list", map[string]any{})
	var list struct {
		Result struct {
			Tools []struct {
				Name         string `json:"name"`
				OutputSchema *struct {
					Properties map[string]any `json:"properties"`
					Required   []string       `json:"required"`
				} `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &list); err != nil {
		t.Fatal(err)
	}
	schemas := map[string][]string{}
	props := map[string]map[string]any{}
	for _, tl := range list.Result.Tools {
		switch tl.Name {
		case "get_capture_report", "render_ladder", "get_dialog_report":
			if tl.OutputSchema != nil {
				t.Errorf("%s may answer with a document, yet advertises an outputSchema", tl.Name)
			}
		}
		if tl.OutputSchema != nil {
			schemas[tl.Name] = tl.OutputSchema.Required
			props[tl.Name] = tl.OutputSchema.Properties
		}
	}
	m, _ := s.ok("list_dialogs", map[string]any{"fields": []string{"call_id"}})
	callID := m["dialogs"].([]any)[0].(map[string]any)["call_id"].(string)

	for _, tc := range []struct {
		tool       string
		args       map[string]any
		structured bool
	}{
		{"get_capture_report", map[string]any{}, true},
		{"get_capture_report", map[string]any{"format": "json"}, true},
		{"get_capture_report", map[string]any{"format": "yang-json"}, false},
		{"get_capture_report", map[string]any{"format": "markdown"}, false},
		{"get_capture_report", map[string]any{"format": "text"}, false},
		{"render_ladder", map[string]any{"call_id": callID}, false},
		{"get_dialog_report", map[string]any{"call_id": callID}, true},
		{"get_dialog_report", map[string]any{"call_id": callID, "format": "markdown"}, false},
	} {
		t.Run(tc.tool+" "+jsonNumOrString(tc.args["format"]), func(t *testing.T) {
			r := s.call(tc.tool, tc.args)
			if r.Err != nil || r.IsError {
				t.Fatalf("%+v %s", r.Err, r.Response)
			}
			if got := len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null"; got != tc.structured {
				t.Fatalf("structuredContent present %v, want %v", got, tc.structured)
			}
			if !tc.structured {
				return
			}
			if string(r.StructuredContent) != r.Content[0].Text {
				t.Errorf("structuredContent is not the text block")
			}
			var obj map[string]any
			if err := json.Unmarshal(r.StructuredContent, &obj); err != nil {
				t.Fatal(err)
			}
			for _, req := range schemas[tc.tool] {
				if _, ok := obj[req]; !ok {
					t.Errorf("structuredContent lacks %q, required by the output schema", req)
				}
			}
			for k := range obj {
				if props[tc.tool] == nil {
					break // no outputSchema advertised
				}
				if _, ok := props[tc.tool][k]; !ok {
					t.Errorf("structuredContent holds %q, which the output schema does not name", k)
				}
			}
		})
	}
	// yang-json: the document, then the flags, then the note.
	r := s.call("get_capture_report", map[string]any{"format": "yang-json"})
	var doc, flags map[string]any
	if len(r.Content) < 2 || json.Unmarshal([]byte(r.Content[0].Text), &doc) != nil || json.Unmarshal([]byte(r.Content[1].Text), &flags) != nil {
		t.Fatalf("yang-json blocks: %s", r.Response)
	}
	if _, ok := doc["sipnab-diagnosis:report"]; !ok {
		t.Errorf("first block: %v", doc)
	}
	if _, ok := flags["sipnab-diagnosis:source"]; !ok {
		t.Errorf("second block: %v", flags)
	}
}

func jsonNumOrString(v any) string {
	if v == nil {
		return "default"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
