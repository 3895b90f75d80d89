package host

import (
	"context"
	"strings"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

// referenceTemplate is sipnab://reference/{topic}: the reference pages of
// core/reference (the filter language with this run's alias thresholds, what
// a MOS is here). The host serves them whenever the selection loads a tool
// that takes a filter, whichever bundle it comes from: the description of
// every such tool and the handshake instructions point at
// sipnab://reference/filter-language, and those tools sit in more than one
// bundle, so the page must not depend on which bundle is loaded.
const referenceTemplate = reference.URIPrefix + "{topic}"

// maxReferenceArg is how much of an unknown topic a refusal echoes.
const maxReferenceArg = 128

func referenceResourceTemplate(th filter.Thresholds) sdk.ResourceTemplate {
	return sdk.ResourceTemplate{
		URITemplate: referenceTemplate,
		Name:        "reference page",
		MIMEType:    "text/markdown",
		Description: "Reference text: filter-language (grammar, fields, operators, aliases with this run's thresholds), " +
			"mos-and-codecs (what a MOS is here, grounding, which codecs are grounded).",
		Read: func(_ context.Context, _ string, vars map[string]string) (sdk.ResourceContent, error) {
			topic := vars["topic"]
			text, ok := reference.Page(topic, th)
			if !ok {
				if len(topic) > maxReferenceArg {
					topic = topic[:maxReferenceArg] + "..."
				}
				return sdk.ResourceContent{}, sdk.InvalidParams("unknown reference topic %q; the topics are: %s", topic, strings.Join(reference.Topics(), ", "))
			}
			return sdk.ResourceContent{Text: text}, nil
		},
		Complete: func(_ context.Context, variable, prefix string) []string {
			if variable != "topic" {
				return nil
			}
			var out []string
			for _, t := range reference.Topics() {
				if strings.HasPrefix(t, prefix) {
					out = append(out, t)
				}
			}
			return out
		},
	}
}

// selectsFilterTool reports whether a selected tool takes a filter argument
// (an input property named filter).
func selectsFilterTool(reg *sdk.Registry, selected map[string]bool) bool {
	for _, b := range reg.Bundles() {
		for _, t := range b.Tools {
			if !selected[t.Name] || t.InputSchema() == nil {
				continue
			}
			for _, p := range t.InputSchema().Properties {
				if p.Name == "filter" {
					return true
				}
			}
		}
	}
	return false
}
