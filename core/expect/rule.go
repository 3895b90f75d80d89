// Package expect judges a capture against an expectation suite, the rules
// of a checked-in sipnab.expect.toml (engine.md §15): a metric (count, asr
// in percent, lint_errors, mos_p<N>), an operator and a threshold, over a
// scope (a filter, or a lint severity). It moves sipnab from an incident
// tool to a check that runs on every commit. It knows nothing of MCP: the
// security bundle's evaluate_expectations calls it, and a CLI flag can.
//
// Three failure modes get a gate deleted rather than fixed, and each has
// an answer here: passing on data never judged (an empty population fails
// as "unevaluable:"), failing on a sample too small to mean anything
// (min_sample skips), and lying about coverage (a suite where every rule
// skipped is not_evaluated, exit code 2). The verdict tests the sample:
// count always produces a value, and count == 0 must not pass on an empty
// capture. Rule defects are errors naming the rule, never a pass or fail.
package expect

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/lint"
)

// Bounds of a suite.
const (
	// MaxRules is the most rules one suite may hold.
	MaxRules = 256
	// MaxSuiteBytes bounds the TOML read.
	MaxSuiteBytes = 256 << 10
	// MaxNameBytes bounds a rule's name.
	MaxNameBytes = 128
)

// The metrics.
const (
	MetricCount      = "count"
	MetricASR        = "asr"
	MetricLintErrors = "lint_errors"
	// MetricMOSPrefix starts mos_p<N>, N in 0..100 (p0 is the worst
	// stream).
	MetricMOSPrefix = "mos_p"
)

// Ops are the comparison operators, in the order documented.
var Ops = []string{">=", ">", "<=", "<", "==", "!="}

// Rule is one expectation as written (TOML or JSON). Value is required;
// MinSample and GroundedOnly are absent unless written.
type Rule struct {
	Name         string   `json:"name,omitempty" toml:"name" desc:"label echoed in the result"`
	Metric       string   `json:"metric" toml:"metric" desc:"count, asr (percent), lint_errors or mos_p<N> (N 0-100, p0 = worst stream)"`
	Op           string   `json:"op" toml:"op" enum:">=|>|<=|<|==|!=" desc:"comparison; == and != are exact"`
	Value        *float64 `json:"value" toml:"value" desc:"threshold"`
	Scope        string   `json:"scope,omitempty" toml:"scope" desc:"filter:<expr or alias>, or severity:<error|warning|notice|info> (lint_errors only)"`
	MinSample    *int     `json:"min_sample,omitempty" toml:"min_sample" desc:"skip the rule when its sample is smaller; >= 1 also tolerates an empty population"`
	GroundedOnly *bool    `json:"grounded_only,omitempty" toml:"grounded_only" desc:"MOS only: score only streams whose codec impairment is published (default true)"`
}

// DefectError is a rule the suite cannot judge: an unknown metric, a bad
// scope, filter or severity, a scope or option the metric does not take,
// a percentile over 100, a missing value. Index is the rule's 0-based
// position (-1 for the suite itself).
type DefectError struct {
	Index int
	Msg   string
}

func (e *DefectError) Error() string {
	if e.Index < 0 {
		return "expectation suite: " + e.Msg
	}
	return fmt.Sprintf("rule %d: %s", e.Index, e.Msg)
}

func defect(i int, format string, a ...any) error {
	return &DefectError{Index: i, Msg: fmt.Sprintf(format, a...)}
}

// suiteFile is sipnab.expect.toml: an array of tables named rule (or
// rules, the name the MCP argument uses), never both.
type suiteFile struct {
	Rule  []Rule `toml:"rule"`
	Rules []Rule `toml:"rules"`
}

// ParseTOML reads a sipnab.expect.toml's bytes. Unknown keys are defects:
// a misspelt min_sample ignored would be a gate that checks something
// else than its author wrote.
func ParseTOML(data []byte) ([]Rule, error) {
	if len(data) > MaxSuiteBytes {
		return nil, defect(-1, "rules_toml is %d bytes, over %d", len(data), MaxSuiteBytes)
	}
	var f suiteFile
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) && len(sm.Errors) > 0 {
			e := &sm.Errors[0]
			row, _ := e.Position()
			return nil, defect(-1, "rules_toml line %d: unknown key %q (a rule takes name, metric, op, value, scope, min_sample, grounded_only)", row, clip(strings.Join(e.Key(), ".")))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, defect(-1, "rules_toml line %d column %d: %s", row, col, de.Error())
		}
		return nil, defect(-1, "rules_toml: %v", err)
	}
	if len(f.Rule) > 0 && len(f.Rules) > 0 {
		return nil, defect(-1, "rules_toml holds both [[rule]] and [[rules]]: write one array")
	}
	if len(f.Rules) > 0 {
		return f.Rules, nil
	}
	return f.Rule, nil
}

// Compiled is a checked rule (Compile).
type Compiled struct {
	Rule
	index      int
	pct        int // mos_p<N>'s N
	f          *filter.Filter
	sev        lint.Severity
	hasSev     bool
	minSample  int
	grounded   bool
	scopeLabel string
}

// Compile checks every rule; compile is the one filter compiler (the
// query layer's, aliases expanded with the run's thresholds). The first
// defect is returned, naming its rule.
func Compile(rules []Rule, compile func(string) (*filter.Filter, error)) ([]Compiled, error) {
	if len(rules) == 0 {
		return nil, defect(-1, "no rules: a suite that judges nothing cannot pass or fail")
	}
	if len(rules) > MaxRules {
		return nil, defect(-1, "%d rules, over %d", len(rules), MaxRules)
	}
	out := make([]Compiled, 0, len(rules))
	for i, r := range rules {
		c := Compiled{Rule: r, index: i, grounded: true}
		if len(r.Name) > MaxNameBytes {
			return nil, defect(i, "name is %d bytes, over %d", len(r.Name), MaxNameBytes)
		}
		switch {
		case r.Metric == MetricCount, r.Metric == MetricASR, r.Metric == MetricLintErrors:
		case strings.HasPrefix(r.Metric, MetricMOSPrefix):
			n, err := strconv.Atoi(strings.TrimPrefix(r.Metric, MetricMOSPrefix))
			if err != nil || n < 0 || strings.HasPrefix(strings.TrimPrefix(r.Metric, MetricMOSPrefix), "+") {
				return nil, defect(i, "metric %q: want mos_p<N> with N a whole number 0 to 100", clip(r.Metric))
			}
			if n > 100 {
				return nil, defect(i, "metric %q: percentile %d is over 100", clip(r.Metric), n)
			}
			c.pct = n
		case r.Metric == "":
			return nil, defect(i, "metric is missing: want count, asr, lint_errors or mos_p<N>")
		default:
			return nil, defect(i, "unknown metric %q: want count, asr, lint_errors or mos_p<N>", clip(r.Metric))
		}
		if !validOp(r.Op) {
			return nil, defect(i, "op %q: want one of %s", clip(r.Op), strings.Join(Ops, " "))
		}
		if r.Value == nil {
			return nil, defect(i, "value is missing")
		}
		if math.IsNaN(*r.Value) || math.IsInf(*r.Value, 0) {
			return nil, defect(i, "value must be a finite number")
		}
		if r.MinSample != nil {
			if *r.MinSample < 0 {
				return nil, defect(i, "min_sample %d is negative", *r.MinSample)
			}
			c.minSample = *r.MinSample
		}
		if r.GroundedOnly != nil {
			if !c.isMOS() {
				return nil, defect(i, "grounded_only applies to mos_p<N> only, not %s", r.Metric)
			}
			c.grounded = *r.GroundedOnly
		}
		switch kind, arg, _ := strings.Cut(r.Scope, ":"); {
		case r.Scope == "":
			c.scopeLabel = ""
		case kind == "filter":
			if strings.TrimSpace(arg) == "" {
				return nil, defect(i, "scope %q: filter: needs an expression or alias", clip(r.Scope))
			}
			f, err := compile(arg)
			if err != nil {
				return nil, defect(i, "scope filter: %v", err)
			}
			c.f, c.scopeLabel = f, r.Scope
		case kind == "severity":
			if r.Metric != MetricLintErrors {
				return nil, defect(i, "scope severity: applies to lint_errors only, not %s", r.Metric)
			}
			sev, ok := lint.ParseSeverity(arg)
			if !ok {
				return nil, defect(i, "scope %q: unknown severity; want %s", clip(r.Scope), strings.Join(lint.SeverityNames(), ", "))
			}
			c.sev, c.hasSev, c.scopeLabel = sev, true, r.Scope
		default:
			return nil, defect(i, "scope %q: want filter:<expr> or severity:<level>", clip(r.Scope))
		}
		out = append(out, c)
	}
	return out, nil
}

func (c *Compiled) isMOS() bool { return strings.HasPrefix(c.Metric, MetricMOSPrefix) }

func validOp(op string) bool {
	for _, o := range Ops {
		if op == o {
			return true
		}
	}
	return false
}

// compare applies op; == and != are exact (engine.md §15).
func compare(op string, v, t float64) bool {
	switch op {
	case ">=":
		return v >= t
	case ">":
		return v > t
	case "<=":
		return v <= t
	case "<":
		return v < t
	case "==":
		return v == t
	case "!=":
		return v != t
	}
	return false
}

func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)[1 : len(strconv.Quote(s))-1]
}
