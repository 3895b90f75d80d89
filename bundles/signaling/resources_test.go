package signaling

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/sdk"
)

// resRegistered registers the signaling bundle the way the host does, with
// extra services (e.g. the run's filter.Thresholds), and returns it.
func resRegistered(t *testing.T, services ...any) sdk.Registered {
	t.Helper()
	c := engine.New(engine.Config{}, nil)
	reg, err := sdk.Register(context.Background(), []sdk.Bundle{Bundle{}}, func(sdk.Info) sdk.Env {
		return sdk.NewEnv(sdk.EnvOptions{Services: append([]any{c}, services...)})
	}, sdk.RegistryOptions{SkipBudgets: true})
	if err != nil {
		t.Fatal(err)
	}
	return reg.Bundles()[0]
}

func resTemplate(t *testing.T, b sdk.Registered, uri string) sdk.ResourceTemplate {
	t.Helper()
	for _, tp := range b.Templates {
		if tp.URITemplate == uri {
			return tp
		}
	}
	t.Fatalf("template %s not registered", uri)
	return sdk.ResourceTemplate{}
}

func resTool(t *testing.T, b sdk.Registered, name string) sdk.Tool {
	t.Helper()
	for _, tl := range b.Tools {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("tool %s not registered", name)
	return sdk.Tool{}
}

func resRead(t *testing.T, tp sdk.ResourceTemplate, name, value string) (sdk.ResourceContent, error) {
	t.Helper()
	return tp.Read(context.Background(), "", map[string]string{name: value})
}

// TestSignalingTemplates: the four templates, none subscribable (their
// content cannot change during a run), each with a completion.
func TestSignalingTemplates(t *testing.T) {
	b := resRegistered(t)
	var got []string
	for _, tp := range b.Templates {
		got = append(got, tp.URITemplate)
		if tp.Revision != nil {
			t.Errorf("%s is subscribable; its content never changes during a run", tp.URITemplate)
		}
		if tp.Complete == nil || tp.Read == nil || tp.MIMEType == "" || tp.Description == "" {
			t.Errorf("%s: incomplete template %+v", tp.URITemplate, tp)
		}
	}
	want := []string{"sipnab://lint/{rule_id}", "sipnab://filter/{alias}", "sipnab://filter/field/{field}"}
	if !slices.Equal(got, want) {
		t.Errorf("got templates %v, want %v", got, want)
	}
	if len(b.Resources) != 0 {
		t.Errorf("got %d fixed resources, want none", len(b.Resources))
	}
}

// TestLintResourceIsExplainRule: every rule id's resource is explain_rule's
// answer byte for byte; an unknown id is the same refusal.
func TestLintResourceIsExplainRule(t *testing.T) {
	b := resRegistered(t)
	tp, tool := resTemplate(t, b, lintTemplate), resTool(t, b, "explain_rule")
	ids := lint.IDs()
	if len(ids) != 43 {
		t.Fatalf("got %d rule ids, want 43", len(ids))
	}
	for _, id := range append(ids, "SIP-NO-SUCH-RULE") {
		t.Run(id, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"rule_id": id})
			r, toolErr := tool.Invoke(context.Background(), args, sdk.DefaultLimits())
			got, err := resRead(t, tp, varRuleID, id)
			if toolErr != nil {
				if err == nil || sdk.AsError(err).Message != sdk.AsError(toolErr).Message || sdk.AsError(err).Code != sdk.CodeInvalidParams {
					t.Fatalf("tool refused with %v, resource answered %v", toolErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != r.Blocks[0] {
				t.Errorf("got  %s\nwant %s", got.Text, r.Blocks[0])
			}
		})
	}
}

// TestFilterResourceFollowsTheRunThresholds: sipnab://filter/<alias> is
// filter.ExpandAlias with the thresholds the host provides, every time it
// is read.
func TestFilterResourceFollowsTheRunThresholds(t *testing.T) {
	custom := filter.Thresholds{PDDSeconds: 4.5, ShortCallSeconds: 7, LossPct: 2, JitterMs: 30, Retransmits: 9}
	tests := []struct {
		name     string
		services []any
		th       filter.Thresholds
		alias    string
		want     string
	}{
		{"defaults without a host setting", nil, filter.DefaultThresholds(), "slow-setup", "pdd > 11"},
		{"the run's PDD threshold", []any{custom}, custom, "slow-setup", "pdd > 4.5"},
		{"the run's short-call threshold", []any{custom}, custom, "short-calls", "state == Completed and duration < 7"},
		{"problems with every threshold", []any{custom}, custom, "problems",
			"state == Failed or one_way == true or rtp.loss > 2 or rtp.jitter > 30 or nat_mismatch == true or retransmits > 9 or pdd > 4.5 or codec_asymmetry == true or ptime_asymmetry == true or payload_asymmetry == true or duration_asymmetry == true or late_media == true"},
		{"a flag alias", []any{custom}, custom, "one-way", "one_way == true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp := resTemplate(t, resRegistered(t, tc.services...), filterTemplate)
			got, err := resRead(t, tp, varAlias, tc.alias)
			if err != nil {
				t.Fatal(err)
			}
			var e AliasExpansion
			if err := json.Unmarshal([]byte(got.Text), &e); err != nil {
				t.Fatal(err)
			}
			want, _ := filter.ExpandAlias(tc.alias, tc.th)
			if e.Expression != want || e.Expression != tc.want {
				t.Errorf("got %q, want %q (ExpandAlias %q)", e.Expression, tc.want, want)
			}
			if e.Alias != tc.alias || e.Selects == "" || e.Thresholds.PDDSeconds != tc.th.PDDSeconds || e.Thresholds.Retransmits != tc.th.Retransmits {
				t.Errorf("got %+v", e)
			}
		})
	}
	t.Run("unknown alias lists the aliases", func(t *testing.T) {
		_, err := resRead(t, resTemplate(t, resRegistered(t), filterTemplate), varAlias, "slow_setup")
		if e := sdk.AsError(err); err == nil || e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, "slow-setup, short-calls") {
			t.Errorf("got %v, want -32602 listing the aliases", err)
		}
	})
}

func TestFieldResource(t *testing.T) {
	tp := resTemplate(t, resRegistered(t), fieldTemplate)
	tests := []struct {
		field string
		want  string
	}{
		{"pdd", `{"name":"pdd","type":"number","multi":false,"unit":"s","doc":"Post-dial delay in seconds, from the routed INVITE (after a 401/407, the credentialed retry) to the first 18x (100 Trying excluded); the caller's wait after a challenge is not counted; absent when not measured."}`},
		{"rtp.codec", `"multi":true`},
		{"state", `"values":["Trying","Ringing","InCall","Completed","Cancelled","Failed","Redirected","Registered","Expired","Pending","Active","Terminated","Transferring"]`},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			got, err := resRead(t, tp, varField, tc.field)
			if err != nil || !strings.Contains(got.Text, tc.want) {
				t.Errorf("got %s, %v; want it to contain %s", got.Text, err, tc.want)
			}
		})
	}
	if _, err := resRead(t, tp, varField, "rtp"); err == nil || !strings.Contains(err.Error(), "rtp.codec") {
		t.Errorf("unknown field: got %v, want a refusal listing the fields", err)
	}
}

func TestSignalingCompletions(t *testing.T) {
	b := resRegistered(t)
	tests := []struct {
		name     string
		template string
		variable string
		prefix   string
		want     []string
	}{
		{"every rule id", lintTemplate, varRuleID, "", lint.IDs()},
		{"rule ids by prefix", lintTemplate, varRuleID, "SDP-", withPrefix(lint.IDs(), "SDP-")},
		{"every alias", filterTemplate, varAlias, "", []string{"problems", "slow-setup", "short-calls", "one-way", "nat-issues",
			"codec-asym", "ptime-asym", "payload-asym", "duration-asym", "late-media"}},
		{"aliases by prefix", filterTemplate, varAlias, "s", []string{"slow-setup", "short-calls"}},
		{"fields by prefix", fieldTemplate, varField, "rtp.", []string{"rtp.codec", "rtp.ssrc", "rtp.mos", "rtp.jitter", "rtp.loss", "rtp.packets", "rtp.orphaned"}},
		{"no match", filterTemplate, varAlias, "zzz", []string{}},
		{"unknown variable", filterTemplate, "call_id", "", nil},
		{"another template's variable", lintTemplate, varAlias, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := resTemplate(t, b, tc.template).Complete(context.Background(), tc.variable, tc.prefix)
			if !slices.Equal(got, tc.want) || (tc.want == nil) != (got == nil) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if n := len(withPrefix(lint.IDs(), "SDP-")); n == 0 || n == 43 {
		t.Errorf("the SDP- prefix selects %d rules; the case cannot tell a filter from none", n)
	}
	if n := len(fieldNames()); n != filter.NumFields {
		t.Errorf("got %d field names, want %d", n, filter.NumFields)
	}
}

// TestPrompts: the four prompts, each naming the tools its steps call.
func TestPrompts(t *testing.T) {
	ps := resRegistered(t).Prompts
	want := map[string][]string{
		"carrier-escalation":       {"capture_status", "group_dialogs", "list_dialogs", "get_call_tree", "build_evidence_package"},
		"codec-interop-audit":      {"capture_status", "list_dialogs", "check_codec_negotiation", "group_dialogs", "rtp_stats", "media_diagnostics"},
		"post-change-verification": {"capture_status", "list_captures", "compare_captures", "evaluate_expectations", "timeline"},
		"triage-outage":            {"capture_status", "find_problems", "triage_call", "get_dialog", "show_evidence"},
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d prompts, want %d", len(ps), len(want))
	}
	for _, p := range ps {
		t.Run(p.Name, func(t *testing.T) {
			if !slices.Equal(p.Tools, want[p.Name]) {
				t.Errorf("tools: got %v, want %v", p.Tools, want[p.Name])
			}
			at := -1
			for _, tool := range p.Tools {
				i := strings.Index(p.Text, tool)
				if i < 0 {
					t.Errorf("the text never names %s", tool)
				}
				if i < at && tool != "list_dialogs" {
					t.Errorf("%s comes before the step it follows", tool)
				}
				at = max(at, i)
			}
			if p.Description == "" {
				t.Error("no description")
			}
		})
	}
	if !strings.Contains(workflowPrompts()[2].Text, "sipnab://reference/mos-and-codecs") {
		t.Error("codec-interop-audit does not point at the mos-and-codecs reference")
	}
}

// TestUnknownTemplateValuesAreInvalidParams: a URI of a known template
// whose value names nothing (sipnab://lint/NOPE, sipnab://filter/nope, an
// unknown field) is bad input: -32602 listing what
// exists (mcp-surface §2.6; MCP SEP-2164 settles resource-not-found on
// -32602), never -32603, which reads as "server broken". A URI no template
// matches is the host's (-32002, mcp-go's resource-not-found).
func TestUnknownTemplateValuesAreInvalidParams(t *testing.T) {
	b := resRegistered(t)
	for _, tc := range []struct{ template, name, value, lists string }{
		{lintTemplate, varRuleID, "NOPE", "SIP-3261-8.1.1.7-BRANCH-COOKIE"},
		{filterTemplate, varAlias, "nope", "slow-setup"},
		{fieldTemplate, varField, "nope", "rtp.loss"},
	} {
		t.Run(tc.template, func(t *testing.T) {
			_, err := resRead(t, resTemplate(t, b, tc.template), tc.name, tc.value)
			if e := sdk.AsError(err); err == nil || e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tc.lists) {
				t.Errorf("got %v, want -32602 listing %s", err, tc.lists)
			}
		})
	}
}
