package signaling

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/bundles/internal/provision"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/sdk"
)

// The signaling bundle's resources (mcp-surface §4.1): lint rules, filter
// alias expansions and filter fields (the host serves the reference pages,
// sipnab://reference/{topic}, whatever the selection). None of them
// changes during a run, so none is subscribable (a subscription that can
// never fire reads like a quiet network). Each is rendered by the function
// its tool uses: sipnab://lint/<rule-id> is ExplainRule, the body of
// explain_rule; sipnab://filter/<alias> is filter.ExpandAlias, which
// find_problems and every filter compile.

// maxResourceBytes is the ceiling of one resources/read (MAX_RESOURCE_BYTES).
const maxResourceBytes = 8 << 20

// Resource templates and their variables.
const (
	lintTemplate   = "sipnab://lint/{rule_id}"
	filterTemplate = "sipnab://filter/{alias}"
	fieldTemplate  = "sipnab://filter/field/{field}"

	varRuleID = "rule_id"
	varAlias  = "alias"
	varField  = "field"
)

// runThresholds returns the thresholds the filter aliases expand with in
// this run: the host's filter.Thresholds service when it provides one
// (--pdd-threshold and its siblings), filter's defaults otherwise, which is
// what every filter compiles with until the host provides it.
func runThresholds(env sdk.Env) filter.Thresholds { return provision.Thresholds(env) }

// addResources registers the templates. Every one resolves (a template is
// advertised only when its URIs can), and each completes its variable.
func addResources(env sdk.Env, _ *deps) {
	th := func() filter.Thresholds { return runThresholds(env) }
	env.AddResourceTemplate(sdk.ResourceTemplate{
		URITemplate: lintTemplate,
		Name:        "lint rule",
		MIMEType:    "application/json",
		Description: "One lint rule, exactly as explain_rule answers it: what it checks, severity, basis, RFC section. An unknown id lists all 43.",
		Read: func(_ context.Context, _ string, vars map[string]string) (sdk.ResourceContent, error) {
			return lintRuleResource(vars[varRuleID])
		},
		Complete: completer(varRuleID, ruleIDs),
	})
	env.AddResourceTemplate(sdk.ResourceTemplate{
		URITemplate: filterTemplate,
		Name:        "filter alias",
		MIMEType:    "application/json",
		Description: "What a filter alias (problems, slow-setup, ...) expands to with this run's thresholds: the very expression find_problems and every filter compile.",
		Read: func(_ context.Context, _ string, vars map[string]string) (sdk.ResourceContent, error) {
			return aliasResource(vars[varAlias], th())
		},
		Complete: completer(varAlias, aliasNames),
	})
	env.AddResourceTemplate(sdk.ResourceTemplate{
		URITemplate: fieldTemplate,
		Name:        "filter field",
		MIMEType:    "application/json",
		Description: "One field of the filter language: its type, unit and meaning.",
		Read: func(_ context.Context, _ string, vars map[string]string) (sdk.ResourceContent, error) {
			return fieldResource(vars[varField])
		},
		Complete: completer(varField, fieldNames),
	})
}

// jsonContent serializes v as a resource body, refusing one over the read
// ceiling.
func jsonContent(v any) (sdk.ResourceContent, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return sdk.ResourceContent{}, sdk.Internal("rendering the resource: %v", err)
	}
	return textContent(string(b))
}

func textContent(s string) (sdk.ResourceContent, error) {
	if len(s) > maxResourceBytes {
		return sdk.ResourceContent{}, sdk.InvalidParams("rendering of %d bytes exceeds the %d bytes a resource read carries", len(s), maxResourceBytes)
	}
	return sdk.ResourceContent{Text: s}, nil
}

// lintRuleResource is sipnab://lint/<rule-id>: ExplainRule serialized, the
// same bytes explain_rule answers.
func lintRuleResource(id string) (sdk.ResourceContent, error) {
	ex, err := ExplainRule(id)
	if err != nil {
		return sdk.ResourceContent{}, err
	}
	return jsonContent(ex)
}

// AliasExpansion is the body of sipnab://filter/<alias>.
type AliasExpansion struct {
	// Alias is the alias name.
	Alias string `json:"alias"`
	// Expression is what the alias stands for with this run's thresholds,
	// in canonical form: the text find_problems and every filter compile.
	Expression string `json:"expression"`
	// Selects says in words which dialogs it selects.
	Selects string `json:"selects"`
	// Thresholds are the run's settings the expansion used.
	Thresholds AliasThresholds `json:"thresholds"`
}

// AliasThresholds are the run's filter thresholds, with their units.
type AliasThresholds struct {
	PDDSeconds       float64 `json:"pdd_seconds"`
	ShortCallSeconds float64 `json:"short_call_seconds"`
	LossPct          float64 `json:"loss_pct"`
	JitterMs         float64 `json:"jitter_ms"`
	Retransmits      int     `json:"retransmits"`
}

// aliasResource expands an alias now, with th: never cached, so it always
// shows what a filter compiled at this moment would use.
func aliasResource(name string, th filter.Thresholds) (sdk.ResourceContent, error) {
	expr, ok := filter.ExpandAlias(name, th)
	if !ok {
		return sdk.ResourceContent{}, sdk.InvalidParams("unknown alias %q; the aliases are: %s", answer.Clip(name), strings.Join(aliasNames(), ", "))
	}
	var doc string
	for _, a := range filter.Aliases() {
		if a.Name == name {
			doc = a.Doc
		}
	}
	return jsonContent(AliasExpansion{Alias: name, Expression: expr, Selects: doc, Thresholds: AliasThresholds{
		PDDSeconds: th.PDDSeconds, ShortCallSeconds: th.ShortCallSeconds, LossPct: th.LossPct,
		JitterMs: th.JitterMs, Retransmits: th.Retransmits}})
}

// FieldDoc is the body of sipnab://filter/field/<field>.
type FieldDoc struct {
	// Name as written in an expression.
	Name string `json:"name"`
	// Type is string, number or boolean.
	Type string `json:"type"`
	// Multi: the field can hold several values for one dialog, and a
	// comparison matches when any one matches.
	Multi bool `json:"multi"`
	// Unit of a number field (s, ms, %); absent otherwise.
	Unit string `json:"unit,omitempty"`
	// Doc says what the field holds.
	Doc string `json:"doc"`
	// Values lists the accepted values where the set is closed (state).
	Values []string `json:"values,omitempty"`
}

func fieldResource(name string) (sdk.ResourceContent, error) {
	f, ok := filter.FieldByName(name)
	if !ok {
		return sdk.ResourceContent{}, sdk.InvalidParams("unknown filter field %q; the fields are: %s", answer.Clip(name), strings.Join(fieldNames(), ", "))
	}
	info := f.Info()
	doc := FieldDoc{Name: info.Name, Type: info.Type.String(), Multi: info.Multi, Unit: info.Unit, Doc: info.Doc}
	if info.Name == "state" {
		doc.Values = filter.States()
	}
	return jsonContent(doc)
}
