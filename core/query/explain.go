package query

import (
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
)

// Matched is one alias clause a dialog matched, with what the dialog
// measured for it: find_problems' evidence per row.
type Matched struct {
	// Alias is the problem alias (find_problems kinds).
	Alias string `json:"alias" desc:"problem alias"`
	// Clause is the alias clause that matched, with the run's threshold
	// ("rtp.loss > 5").
	Clause string `json:"clause" desc:"clause matched"`
	// Measured are the row's values of the clause's fields
	// ("rtp.loss=64.286").
	Measured string `json:"measured" desc:"row's values"`
}

// Explain returns the clauses a row matches, each with its measured
// values; nil when none matches.
func (q *Querier) Explain(row *dialog.Summary, clauses []filter.AliasClause) []Matched {
	r := q.Record(row)
	if m := q.maintained(); m != nil {
		// the facts that selected the row (find_problems' page), not a
		// second reading of its streams and diagnosis
		if e, mf, ok := m.factsFor(row); ok {
			r.extraVal, r.mfVal = e, mf
			r.extra, r.mf = &r.extraVal, &r.mfVal
			r.loaded |= loadedExtra
		}
	}
	var out []Matched
	for i := range clauses {
		c := &clauses[i]
		if !c.Match(r) {
			continue
		}
		var vals []string
		for _, f := range c.Fields {
			vals = append(vals, f.String()+"="+measured(r, f))
		}
		out = append(out, Matched{Alias: c.Alias, Clause: c.Text, Measured: strings.Join(vals, " ")})
	}
	return out
}

// measured renders a record's value of a field ("absent" when not
// measured, which a matching clause never reads).
func measured(r *Record, f filter.Field) string {
	switch f.Type() {
	case filter.TypeNumber:
		if v, ok := r.Num(f); ok {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
	case filter.TypeBool:
		if v, ok := r.Bool(f); ok {
			return strconv.FormatBool(v)
		}
	default:
		if v, ok := r.Str(f); ok {
			return v
		}
	}
	return "absent"
}
