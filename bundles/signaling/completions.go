package signaling

import (
	"context"
	"strings"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/lint"
)

// Completions (completion/complete) for the signaling templates' variables:
// rule ids, aliases, filter fields and reference topics. The values are
// read from the tables the tools use at every request, never cached; the
// host caps the list (100 values, lowered by --mcp-max-rows) and reports
// the total.

// completer answers completion for one template variable: the values that
// start with the typed prefix, in the table's order. Any other variable
// answers nothing: offering one argument's vocabulary for another would
// make a client fill it in.
func completer(variable string, values func() []string) func(ctx context.Context, v, prefix string) []string {
	return func(_ context.Context, v, prefix string) []string {
		if v != variable {
			return nil
		}
		return withPrefix(values(), prefix)
	}
}

// withPrefix keeps the values starting with prefix, in order.
func withPrefix(values []string, prefix string) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}

// ruleIDs are the 43 lint rule ids in catalogue order.
func ruleIDs() []string { return lint.IDs() }

// aliasNames are the 10 filter aliases in documentation order.
func aliasNames() []string {
	as := filter.Aliases()
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Name
	}
	return out
}

// fieldNames are the filter fields in documentation order.
func fieldNames() []string {
	fs := filter.Fields()
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}
