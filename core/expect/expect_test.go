package expect

import (
	"errors"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/filter"
)

func compileAll(rules []Rule) ([]Compiled, error) {
	return Compile(rules, func(expr string) (*filter.Filter, error) {
		return filter.Compile(expr, filter.DefaultThresholds())
	})
}

// TestParseTOML: integer and float values, optional keys, both array
// names (never together), and errors naming where the file went wrong.
func TestParseTOML(t *testing.T) {
	rules, err := ParseTOML([]byte(`
# gate
[[rule]]
name = "asr"
metric = "asr"
op = ">="
value = 60
min_sample = 10

[[rule]]
metric = "mos_p10"
op = ">"
value = 3.6
grounded_only = false
scope = "filter:method == INVITE"
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || *rules[0].Value != 60 || *rules[0].MinSample != 10 || rules[0].GroundedOnly != nil ||
		*rules[1].Value != 3.6 || *rules[1].GroundedOnly || rules[1].Scope != "filter:method == INVITE" {
		t.Errorf("got %+v %+v", rules[0], rules[1])
	}
	if r, err := ParseTOML([]byte("[[rules]]\nmetric = \"count\"\nop = \">\"\nvalue = 0\n")); err != nil || len(r) != 1 {
		t.Errorf("[[rules]]: %v %v", r, err)
	}
	for _, tc := range []struct{ toml, says string }{
		{"[[rule]]\nmetric = \"count\"\n[[rules]]\nmetric = \"count\"\n", "both"},
		{"[[rule]]\nmetric = \"count\"\nop = \">\"\nvalue = \"high\"\n", "rules_toml line 4"},
		{"[[rule]]\nmetrc = \"count\"\n", "unknown key \"rule.metrc\""},
		{"[[rule]\n", "rules_toml line 1"},
		{strings.Repeat("#", MaxSuiteBytes+1), "over"},
	} {
		_, err := ParseTOML([]byte(tc.toml))
		var de *DefectError
		if !errors.As(err, &de) || de.Index != -1 || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%.40q: got %v, want a suite defect saying %q", tc.toml, err, tc.says)
		}
	}
}

// TestCompileNamesTheDefectiveRule: every defect names its rule's index.
func TestCompileNamesTheDefectiveRule(t *testing.T) {
	v := 1.0
	ok := Rule{Metric: "count", Op: ">=", Value: &v}
	neg := -1
	yes := true
	for _, tc := range []struct {
		bad   Rule
		index int
		says  string
	}{
		{Rule{Metric: "count", Op: "=>", Value: &v}, 1, "op"},
		{Rule{Metric: "count", Op: ">", Value: &v, MinSample: &neg}, 1, "negative"},
		{Rule{Metric: "mos_p-1", Op: ">", Value: &v}, 1, "mos_p<N>"},
		{Rule{Metric: "mos_p+5", Op: ">", Value: &v}, 1, "mos_p<N>"},
		{Rule{Metric: "", Op: ">", Value: &v}, 1, "missing"},
		{Rule{Metric: "lint_errors", Op: ">", Value: &v, GroundedOnly: &yes}, 1, "grounded_only"},
		{Rule{Metric: "count", Op: ">", Value: &v, Scope: "filter:"}, 1, "needs an expression"},
		{Rule{Metric: "count", Op: ">", Value: &v, Scope: "filter:nosuchfield == 1"}, 1, "scope filter"},
	} {
		_, err := compileAll([]Rule{ok, tc.bad})
		var de *DefectError
		if !errors.As(err, &de) || de.Index != tc.index || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: got %v, want rule %d saying %q", tc.bad, err, tc.index, tc.says)
		}
	}
	if c, err := compileAll([]Rule{ok, {Metric: "mos_p0", Op: "<", Value: &v}, {Metric: "mos_p100", Op: "<", Value: &v}}); err != nil || c[1].pct != 0 || c[2].pct != 100 || !c[1].grounded {
		t.Errorf("mos_p0/p100: %+v %v", c, err)
	}
}

// TestCompareIsExact: == and != compare exactly, as engine.md §15 says.
func TestCompareIsExact(t *testing.T) {
	tenth, fifth := 0.1, 0.2 // variables: constant arithmetic is exact
	for _, tc := range []struct {
		op   string
		v, t float64
		want bool
	}{
		{">=", 2, 2, true}, {">", 2, 2, false}, {"<=", 2, 2, true}, {"<", 1.99, 2, true},
		{"==", tenth + fifth, 0.3, false}, {"!=", tenth + fifth, 0.3, true}, {"==", 4.36, 4.36, true},
	} {
		if got := compare(tc.op, tc.v, tc.t); got != tc.want {
			t.Errorf("%v %s %v = %v", tc.v, tc.op, tc.t, got)
		}
	}
}

// FuzzParseTOML: hostile suite bytes give a defect or rules, never a panic.
func FuzzParseTOML(f *testing.F) {
	f.Add([]byte("[[rule]]\nmetric = \"count\"\nop = \">\"\nvalue = 1\n"))
	f.Add([]byte("[[rule]]\nvalue = 1e400\n"))
	f.Add([]byte("a = [[[[[[[[[["))
	f.Fuzz(func(t *testing.T, b []byte) {
		rules, err := ParseTOML(b)
		if err == nil {
			_, _ = compileAll(rules)
		}
	})
}
