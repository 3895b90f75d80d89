package host

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

// TestReferencePagesExpandWithTheRunsThresholds: sipnab://reference/<topic>
// is reference.Page with the run's thresholds, byte for byte.
func TestReferencePagesExpandWithTheRunsThresholds(t *testing.T) {
	custom := filter.Thresholds{PDDSeconds: 4.5, ShortCallSeconds: 7, LossPct: 2, JitterMs: 30, Retransmits: 9}
	tp := referenceResourceTemplate(custom)
	for _, topic := range reference.Topics() {
		t.Run(topic, func(t *testing.T) {
			got, err := tp.Read(context.Background(), "sipnab://reference/"+topic, map[string]string{"topic": topic})
			want, _ := reference.Page(topic, custom)
			if err != nil || got.Text != want {
				t.Errorf("got %d bytes, %v; want reference.Page with the run's thresholds", len(got.Text), err)
			}
		})
	}
	got, _ := tp.Read(context.Background(), "", map[string]string{"topic": reference.TopicFilter})
	if !strings.Contains(got.Text, "`pdd > 4.5`") {
		t.Error("filter-language page does not expand with the run's thresholds")
	}
}

// TestUnknownReferenceTopicIsInvalidParamsListingTheTopics: a topic that
// names nothing is bad input (-32602) listing the topics, its echo clipped.
func TestUnknownReferenceTopicIsInvalidParamsListingTheTopics(t *testing.T) {
	tp := referenceResourceTemplate(filter.DefaultThresholds())
	for _, topic := range []string{"codecs", strings.Repeat("x", 300)} {
		_, err := tp.Read(context.Background(), "", map[string]string{"topic": topic})
		e := sdk.AsError(err)
		if err == nil || e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, "filter-language, mos-and-codecs") || len(e.Message) > 250 {
			t.Errorf("topic of %d bytes: got %v, want -32602 listing the topics", len(topic), err)
		}
	}
}

// TestReferenceTopicsComplete: completion offers the topics by prefix and
// nothing for another variable.
func TestReferenceTopicsComplete(t *testing.T) {
	tp := referenceResourceTemplate(filter.DefaultThresholds())
	for _, tc := range []struct {
		variable, prefix string
		want             []string
	}{
		{"topic", "", []string{"filter-language", "mos-and-codecs"}},
		{"topic", "m", []string{"mos-and-codecs"}},
		{"topic", "zzz", nil},
		{"call_id", "", nil},
	} {
		if got := tp.Complete(context.Background(), tc.variable, tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("%s %q: got %v, want %v", tc.variable, tc.prefix, got, tc.want)
		}
	}
}

// filterBundle has one tool taking a filter and one that does not.
type filterBundle struct{}

func (filterBundle) Info() sdk.Info {
	return sdk.Info{ID: "f", Summary: "filter tools", ByteBudget: sdk.Budget{Default: 100000, WithOutputSchemas: 100000}}
}

func (filterBundle) Provision(context.Context, sdk.Env) ([]sdk.Tool, error) {
	type withFilter struct {
		Filter string `json:"filter,omitempty" desc:"filter expression"`
	}
	type noFilter struct {
		CallID string `json:"call_id" desc:"Call-ID"`
	}
	type out struct {
		N int `json:"n" desc:"count"`
	}
	ro := sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld}
	return []sdk.Tool{
		sdk.NewTool(sdk.Descriptor{Name: "f_list", Title: "list", Description: "lists", Annotations: ro},
			func(context.Context, *sdk.Call, withFilter) (out, error) { return out{}, nil }),
		sdk.NewTool(sdk.Descriptor{Name: "f_one", Title: "one", Description: "one", Annotations: ro},
			func(context.Context, *sdk.Call, noFilter) (out, error) { return out{}, nil }),
	}, nil
}

// TestReferencePagesAndTheirInstructionServedWithAFilterTool: the
// reference template and the handshake sentence naming
// sipnab://reference/filter-language come with a loaded tool that takes a
// filter, and neither without one.
func TestReferencePagesAndTheirInstructionServedWithAFilterTool(t *testing.T) {
	reg := testRegistry(t, filterBundle{})
	for _, tc := range []struct {
		name     string
		selected map[string]bool
		want     bool
	}{
		{"a filter tool", map[string]bool{"f_list": true}, true},
		{"both", map[string]bool{"f_list": true, "f_one": true}, true},
		{"no filter tool", map[string]bool{"f_one": true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newMCPHost(hostOptions{log: newTestLogger(), reg: reg, selected: tc.selected, entries: []string{"x"}})
			served := false
			for _, te := range h.res.templates {
				served = served || te.tpl.URITemplate == referenceTemplate
			}
			if served != tc.want {
				t.Errorf("reference template served: got %v, want %v", served, tc.want)
			}
			if got := selectsFilterTool(reg, tc.selected); got != tc.want {
				t.Errorf("selectsFilterTool: got %v, want %v", got, tc.want)
			}
			if got := filtersNote(tc.want); strings.Contains(got, "sipnab://reference/filter-language") != tc.want {
				t.Errorf("instructions note %q", got)
			}
		})
	}
}
