package tests

// prompts/list and resources/templates/list over stdio on the built binary
// when the tool selection hides what they list: the capabilities follow what
// the build serves, so the lists answer, empty when the selection hides
// everything, never -32601 (mcp-surface §4.1, §4.4).

import (
	"encoding/json"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

func TestPromptsListAnswersEmptyWhenEveryPromptIsHiddenE2E(t *testing.T) {
	prompts, _ := promptTools(t)
	if len(prompts) == 0 {
		t.Fatal("no compiled-in prompt: nothing for this test to hide")
	}
	for _, tc := range []struct {
		selection string
		prompts   string // the exact prompts/list result
	}{
		// Every prompt names a tool outside core.
		{"core", `{"prompts":[]}`},
		{"capture_status,list_dialogs", `{"prompts":[]}`},
	} {
		t.Run(tc.selection, func(t *testing.T) {
			s := startRaw(t, "-N", "--mcp", "--mcp-tools", tc.selection, "-I", testcap.Public("sip-rtp-g711.pcap"))
			a := s.rpc("prompts/list", map[string]any{})
			if a.Error != nil {
				t.Fatalf("prompts/list: error %d %s, want %s", a.Error.Code, a.Error.Message, tc.prompts)
			}
			if string(a.Result) != tc.prompts {
				t.Errorf("prompts/list: got %s, want %s", a.Result, tc.prompts)
			}
			for name := range prompts {
				if g := s.rpc("prompts/get", map[string]any{"name": name}); g.Error == nil {
					t.Errorf("hidden prompt %s answered prompts/get", name)
				}
			}
			tpl := s.rpc("resources/templates/list", map[string]any{})
			var r struct {
				ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
			}
			if tpl.Error != nil || json.Unmarshal(tpl.Result, &r) != nil || r.ResourceTemplates == nil {
				t.Errorf("resources/templates/list: got %+v %s, want a list", tpl.Error, tpl.Result)
			}
		})
	}
}
