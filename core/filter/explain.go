package filter

import (
	"fmt"
	"strings"
)

// AliasClause is one clause of an alias's expansion (ExpandAlias): the
// "problems" alias has one per problem it ORs, every other alias one.
// find_problems names the clauses a row matched, each with the values the
// row measured for the fields the clause reads.
type AliasClause struct {
	// Alias is the alias the clause belongs to.
	Alias string
	// Text is the clause in canonical form ("rtp.loss > 5").
	Text string
	// Fields are the fields the clause reads, in order.
	Fields []Field
	f      *Filter
}

// Match reports whether a record satisfies the clause.
func (c *AliasClause) Match(r Record) bool { return c.f.Match(r) }

// AliasClauses splits the named aliases (find_problems' kinds; empty means
// problems) into their clauses, compiled with the run's thresholds. OR-ing
// every clause of an alias matches what the alias matches.
func AliasClauses(kinds []string, th Thresholds) ([]AliasClause, error) {
	if len(kinds) == 0 {
		kinds = []string{"problems"}
	}
	var out []AliasClause
	for _, k := range dedupe(kinds) {
		expr, ok := ExpandAlias(k, th)
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownKind, k)
		}
		for _, part := range strings.Split(expr, " or ") {
			f, err := Compile(part, th)
			if err != nil {
				return nil, fmt.Errorf("compiling alias %s clause %q: %w", k, part, err)
			}
			c := AliasClause{Alias: k, Text: f.String(), f: f}
			for _, conj := range strings.Split(part, " and ") {
				name, _, _ := strings.Cut(strings.TrimSpace(conj), " ")
				if fd, ok := FieldByName(name); ok {
					c.Fields = append(c.Fields, fd)
				}
			}
			out = append(out, c)
		}
	}
	return out, nil
}
