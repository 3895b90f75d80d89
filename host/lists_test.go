package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sipnab/sipnab/sdk"
)

// plainBundle has one tool and no prompts, resources or templates.
type plainBundle struct{}

func (plainBundle) Info() sdk.Info {
	return sdk.Info{ID: "plain", Summary: "one tool", ByteBudget: sdk.Budget{Default: 100000, WithOutputSchemas: 100000}}
}

func (plainBundle) Provision(context.Context, sdk.Env) ([]sdk.Tool, error) {
	return []sdk.Tool{sdk.NewTool(sdk.Descriptor{Name: "plain_ping", Description: "answers pong",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld}},
		func(context.Context, *sdk.Call, emptyIn) (sizeOut, error) { return sizeOut{Data: "pong"}, nil })}, nil
}

// TestListsAnswerEmptyWhenTheSelectionHidesEverything: the prompts and
// resources capabilities follow what the build serves, so when the
// selection hides every prompt, resource and template (the test bundle is
// compiled in but not selected), initialize still declares them and
// prompts/list, resources/list and resources/templates/list answer empty
// lists, never -32601; a hidden prompt cannot be fetched. A build with no
// prompt, resource or template declares neither capability.
func TestListsAnswerEmptyWhenTheSelectionHidesEverything(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bundles   []sdk.Bundle
		selection string
		declared  bool
		prompts   int
		resources int
		templates int
	}{
		{"everything selected", []sdk.Bundle{&testBundle{id: "t"}, plainBundle{}}, "full", true, 1, 2, 1},
		{"every prompt and resource hidden", []sdk.Bundle{&testBundle{id: "t"}, plainBundle{}}, "plain", true, 0, 0, 0},
		{"one tool of the test bundle", []sdk.Bundle{&testBundle{id: "t"}, plainBundle{}}, "plain,t_big", true, 0, 2, 1},
		{"nothing to serve", []sdk.Bundle{plainBundle{}}, "full", false, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startStdio(t, []string{"-N", "--mcp", "--mcp-tools", tc.selection}, tc.bundles, nil)
			caps, _ := s.initialized["result"].(map[string]any)["capabilities"].(map[string]any)
			_, prompts := caps["prompts"]
			_, resources := caps["resources"]
			if prompts != tc.declared || resources != tc.declared {
				t.Fatalf("capabilities %v: prompts %v, resources %v, want both %v", caps, prompts, resources, tc.declared)
			}
			for _, l := range []struct {
				method, key string
				want        int
			}{
				{"prompts/list", "prompts", tc.prompts},
				{"resources/list", "resources", tc.resources},
				{"resources/templates/list", "resourceTemplates", tc.templates},
			} {
				m := s.call(l.method, map[string]any{})
				if !tc.declared {
					if code, _ := errCode(m); code != -32601 {
						t.Errorf("%s without the capability: got %v, want -32601", l.method, m)
					}
					continue
				}
				res, ok := m["result"].(map[string]any)
				if !ok {
					t.Errorf("%s: got %v, want a result", l.method, m)
					continue
				}
				// An empty list is [], not null or absent.
				raw, _ := json.Marshal(res[l.key])
				list, isList := res[l.key].([]any)
				if !isList || len(list) != l.want {
					t.Errorf("%s: got %s %s, want a list of %d", l.method, l.key, raw, l.want)
				}
			}
			if tc.declared && tc.prompts == 0 {
				if code, _ := errCode(s.call("prompts/get", map[string]any{"name": "uses-echo"})); code == 0 {
					t.Errorf("a hidden prompt was fetched")
				}
			}
		})
	}
}
