package filter

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Pools of values shared by the expression and record generators, so that
// comparisons hit as well as miss.
var (
	strPool   = []string{"alice", "bob", "INVITE", "a b", `x"y`, "it's", `both'"`, "PCMU", "abc@host", "müller", "", `a\b`, `tail\`, "and", "(x)", "1001"}
	rePool    = []string{"^a", "b$", "(?i)alice", `\d+`, "a|b", ".", "^$", `\(x\)`}
	ipPool    = []string{"10.0.0.1", "10.0.0.2", "2001:db8::1", "::ffff:10.0.0.1", "192.168.1.10"}
	ssrcPool  = []uint32{0x1a2b3c4d, 0, 16, 0xffffffff}
	numPool   = []string{"0", "1", "2.5", "-1", "11", "1e3", ".5", "5060", "3.0000000001"}
	numValues = []float64{0, 1, 2.5, -1, 11, 1000, 0.5, 5060, 3}
)

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

func randCase(r *rand.Rand, s string) string {
	b := []byte(s)
	for i := range b {
		if r.IntN(2) == 0 {
			b[i] = strings.ToUpper(string(b[i]))[0]
		}
	}
	return string(b)
}

// writeValue renders v bare when it can and sometimes anyway quoted, with
// either quote.
func writeValue(r *rand.Rand, v string) string {
	if bareOK(v) && r.IntN(2) == 0 {
		return v
	}
	if strings.HasSuffix(v, `\`) {
		return v // a quoted value cannot end in a backslash; the pool's are bare-able
	}
	q := pick(r, []string{`"`, `'`})
	return q + strings.ReplaceAll(v, q, `\`+q) + q
}

func space(r *rand.Rand) string { return pick(r, []string{" ", " ", "  ", "\t", "\n"}) }

func genExpr(r *rand.Rand, depth int) string {
	switch n := r.IntN(10); {
	case n < 2 && depth < 6:
		return "(" + space(r) + genExpr(r, depth+1) + space(r) + ")"
	case n < 4 && depth < 6:
		return genExpr(r, depth+1) + space(r) + randCase(r, pick(r, []string{"and", "or"})) + space(r) + genExpr(r, depth+1)
	case n < 5 && depth < 6:
		return randCase(r, "not") + space(r) + genExpr(r, depth+1)
	case n < 6:
		return pick(r, aliasNames())
	}
	return genComparison(r)
}

func genComparison(r *rand.Rand) string {
	f := Field(1 + r.IntN(NumFields))
	name := f.String()
	var o, v string
	switch f.Type() {
	case TypeBool:
		o, v = pick(r, []string{"==", "!="}), pick(r, []string{"true", "false", "TRUE", "'false'"})
	case TypeNumber:
		o, v = pick(r, []string{"==", "!=", "<", ">", "<=", ">="}), pick(r, numPool)
	default:
		o = pick(r, []string{"==", "!=", "<", ">", "<=", ">=", "=~"})
		switch {
		case o == "=~":
			v = writeValue(r, pick(r, rePool))
		case f == FieldState:
			v = writeValue(r, pick(r, states))
		case f == FieldSrcIP || f == FieldDstIP:
			v = writeValue(r, pick(r, ipPool))
		case f == FieldRTPSSRC:
			s := pick(r, ssrcPool)
			v = pick(r, []string{fmt.Sprintf("0x%x", s), fmt.Sprintf("0X%08X", s), fmt.Sprint(s)})
		default:
			v = writeValue(r, pick(r, strPool))
		}
	}
	sp := pick(r, []string{"", " "})
	return name + sp + o + sp + v
}

func genRecord(r *rand.Rand) *MemRecord {
	m := &MemRecord{}
	for f := Field(1); f < fieldEnd; f++ {
		if r.IntN(4) == 0 {
			continue // absent
		}
		switch {
		case f.Type() == TypeBool:
			m.SetBool(f, r.IntN(2) == 0)
		case f.Type() == TypeNumber:
			m.SetNum(f, pick(r, numValues))
		case f == FieldState:
			m.SetStr(f, pick(r, states))
		case f == FieldSrcIP || f == FieldDstIP:
			m.SetStr(f, pick(r, ipPool))
		case f == FieldRTPSSRC:
			for range r.IntN(3) {
				m.Add(f, formatSSRC(pick(r, ssrcPool)))
			}
		case f.Multi():
			for range r.IntN(3) {
				m.Add(f, pick(r, strPool))
			}
		default:
			m.SetStr(f, pick(r, strPool))
		}
	}
	return m
}

// TestRoundTrip is the property that the canonical form is a fixed point:
// for every generated expression, Compile(f.String()) compiles, prints the
// same text and selects the same records.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	records := make([]*MemRecord, 200)
	for i := range records {
		records[i] = genRecord(r)
	}
	records = append(records, &MemRecord{})
	th := Thresholds{PDDSeconds: 2.5, ShortCallSeconds: 11, LossPct: 1, JitterMs: 0.5, Retransmits: 0}
	matched := 0
	for i := range 3000 {
		expr := genExpr(r, 0)
		f, err := Compile(expr, th)
		if err != nil {
			t.Fatalf("case %d: generated expression %q does not compile: %v", i, expr, err)
		}
		canon := f.String()
		g, err := Compile(canon, th)
		if err != nil {
			t.Fatalf("case %d: canonical form %q of %q does not compile: %v", i, canon, expr, err)
		}
		if g.String() != canon {
			t.Fatalf("case %d: canonical form not stable:\n%q\n%q", i, canon, g.String())
		}
		for j, rec := range records {
			a, b := f.Match(rec), g.Match(rec)
			if a != b {
				t.Fatalf("case %d record %d: %q matches %v, its canonical form %q matches %v", i, j, expr, a, canon, b)
			}
			if a {
				matched++
			}
		}
	}
	// The generator must exercise both outcomes, or the property is empty.
	if total := 3000 * len(records); matched == 0 || matched == total {
		t.Fatalf("matched %d of %d: generator does not discriminate", matched, total)
	}
}
