package filter

import (
	"math"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// Filter is a compiled expression. It is immutable: Match may be called from
// any number of goroutines at once. A nil *Filter matches every record (the
// "no filter given" case), and its String is "".
type Filter struct {
	root *node
	uses uint64 // bit f set when field f is read (aliases included)
}

// Match reports whether the record satisfies the expression. It allocates
// nothing and never panics; a nil Record is a record with every field absent.
// Its cost grows with the expression, and for =~ with the text's length
// times the pattern's program size (bounded by MaxRegexInsts): a caller
// scanning a large store should check its context between records.
func (f *Filter) Match(r Record) bool {
	if f == nil {
		return true
	}
	if r == nil {
		r = absentRecord{}
	}
	return f.root.eval(r)
}

// String returns the canonical form of the expression: keywords in
// lowercase, one space around operators and keywords, parentheses only where
// precedence needs them, "not not" removed, nested and/or flattened, aliases
// by name, numbers in shortest form, SSRCs as 0x%08x, IP addresses in
// canonical form, values bare when they can be and double-quoted otherwise.
// Compile(f.String(), sameThresholds) yields a filter with the same String
// and the same matches.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	var b strings.Builder
	f.root.write(&b, precOr)
	return b.String()
}

// Uses reports whether the expression reads field fd (through an alias
// too). An adapter can skip computing a costly field no filter reads.
func (f *Filter) Uses(fd Field) bool {
	if f == nil || !fd.Valid() {
		return false
	}
	return f.uses&(1<<fd) != 0
}

// And returns a filter matching records that every non-nil filter matches.
// Nil filters (match everything) are skipped; with none left it returns nil.
func And(fs ...*Filter) *Filter { return combine(kAnd, fs) }

// Or returns a filter matching records that any of the filters matches. A
// nil filter matches everything, so Or with a nil argument returns nil.
func Or(fs ...*Filter) *Filter {
	for _, f := range fs {
		if f == nil {
			return nil
		}
	}
	return combine(kOr, fs)
}

func combine(k kind, fs []*Filter) *Filter {
	var kids []*node
	var uses uint64
	for _, f := range fs {
		if f != nil {
			kids = append(kids, f.root)
			uses |= f.uses
		}
	}
	if len(kids) == 0 {
		return nil
	}
	return &Filter{root: mkList(k, kids), uses: uses}
}

type absentRecord struct{}

func (absentRecord) Str(Field) (string, bool)           { return "", false }
func (absentRecord) Num(Field) (float64, bool)          { return 0, false }
func (absentRecord) Bool(Field) (bool, bool)            { return false, false }
func (absentRecord) Each(Field, func(string) bool) bool { return false }

type kind uint8

const (
	kAnd kind = iota + 1
	kOr
	kNot
	kCmp
	kAlias
)

// Op is a comparison operator.
type op uint8

const (
	opEq op = iota + 1
	opNe
	opLt
	opGt
	opLe
	opGe
	opMatch
)

var opText = [...]string{opEq: "==", opNe: "!=", opLt: "<", opGt: ">", opLe: "<=", opGe: ">=", opMatch: "=~"}

// mode says how a comparison reads and compares its value.
type mode uint8

const (
	modeStr   mode = iota + 1 // single string, byte-wise comparison
	modeRe                    // single string, regular expression
	modeIP                    // single string holding an IP address
	modeNum                   // number
	modeBool                  // boolean
	modeMulti                 // multi-valued string field through Each and one
)

type node struct {
	kind kind
	kids []*node // and/or: two or more; not and alias: exactly one

	name string // alias name

	field Field
	op    op   // as written
	pop   op   // the positive operator tested (opEq for opNe)
	neg   bool // op is != : the result is the negation of the == test
	mode  mode
	str   string // string literal, or the regex source
	num   float64
	b     bool
	ip    netip.Addr
	ssrc  uint32
	re    *regexp.Regexp
	one   func(string) bool // modeMulti: tests one value; built once at compile
}

func (n *node) eval(r Record) bool {
	switch n.kind {
	case kAnd:
		for _, k := range n.kids {
			if !k.eval(r) {
				return false
			}
		}
		return true
	case kOr:
		for _, k := range n.kids {
			if k.eval(r) {
				return true
			}
		}
		return false
	case kNot:
		return !n.kids[0].eval(r)
	case kAlias:
		return n.kids[0].eval(r)
	case kCmp:
		return n.cmp(r)
	}
	return false
}

// cmp evaluates a comparison. An absent value makes the positive test false,
// so every operator but != is false on it and != is true.
func (n *node) cmp(r Record) bool {
	var hit bool
	switch n.mode {
	case modeStr:
		v, ok := r.Str(n.field)
		hit = ok && strTest(n.pop, v, n.str)
	case modeRe:
		v, ok := r.Str(n.field)
		hit = ok && n.re.MatchString(v)
	case modeIP:
		v, ok := r.Str(n.field)
		hit = ok && ipTest(n.pop, v, n.ip)
	case modeNum:
		v, ok := r.Num(n.field)
		hit = ok && !math.IsNaN(v) && numTest(n.pop, v, n.num)
	case modeBool:
		v, ok := r.Bool(n.field)
		hit = ok && v == n.b
	case modeMulti:
		hit = r.Each(n.field, n.one)
	}
	return hit != n.neg
}

// Epsilon is the tolerance of number equality: a == b when
// |a-b| <= Epsilon * max(1, |a|, |b|). The ordering operators agree with it:
// a < b is a < b and not a == b; a <= b is a < b or a == b.
const Epsilon = 1e-9

func numEq(a, b float64) bool {
	return math.Abs(a-b) <= Epsilon*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func numTest(o op, v, lit float64) bool {
	switch o {
	case opEq:
		return numEq(v, lit)
	case opLt:
		return v < lit && !numEq(v, lit)
	case opGt:
		return v > lit && !numEq(v, lit)
	case opLe:
		return v < lit || numEq(v, lit)
	case opGe:
		return v > lit || numEq(v, lit)
	}
	return false
}

func strTest(o op, v, lit string) bool {
	switch o {
	case opEq:
		return v == lit
	case opLt:
		return v < lit
	case opGt:
		return v > lit
	case opLe:
		return v <= lit
	case opGe:
		return v >= lit
	}
	return false
}

func cmpTest(o op, c int) bool {
	switch o {
	case opEq:
		return c == 0
	case opLt:
		return c < 0
	case opGt:
		return c > 0
	case opLe:
		return c <= 0
	case opGe:
		return c >= 0
	}
	return false
}

// ipTest compares the record's address text with lit as addresses (an
// IPv4-mapped IPv6 address equals its IPv4 form). Text that is not an
// address matches nothing.
func ipTest(o op, v string, lit netip.Addr) bool {
	a, err := netip.ParseAddr(v)
	if err != nil {
		return false
	}
	return cmpTest(o, a.Unmap().Compare(lit))
}

// parseSSRC reads an SSRC written 0x<hex> (any case, 1 to 8 digits) or as a
// decimal number up to 4294967295.
func parseSSRC(s string) (uint32, bool) {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		h := s[2:]
		// Leading zeros beyond 8 digits are allowed, value must fit 32 bits.
		for len(h) > 8 && h[0] == '0' {
			h = h[1:]
		}
		if len(h) == 0 || len(h) > 8 {
			return 0, false
		}
		var v uint32
		for i := 0; i < len(h); i++ {
			c := h[i]
			var d byte
			switch {
			case c >= '0' && c <= '9':
				d = c - '0'
			case c >= 'a' && c <= 'f':
				d = c - 'a' + 10
			case c >= 'A' && c <= 'F':
				d = c - 'A' + 10
			default:
				return 0, false
			}
			v = v<<4 | uint32(d)
		}
		return v, true
	}
	if len(s) == 0 || len(s) > 10 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + uint64(s[i]-'0')
	}
	if v > math.MaxUint32 {
		return 0, false
	}
	return uint32(v), true
}

// Operator precedence for String: a child is parenthesised when its
// precedence is below what its position needs.
const (
	precOr = iota + 1
	precAnd
	precNot
	precAtom
)

func (n *node) prec() int {
	switch n.kind {
	case kOr:
		return precOr
	case kAnd:
		return precAnd
	case kNot:
		return precNot
	}
	return precAtom
}

func (n *node) write(b *strings.Builder, need int) {
	if n.prec() < need {
		b.WriteByte('(')
		n.write(b, precOr)
		b.WriteByte(')')
		return
	}
	switch n.kind {
	case kOr, kAnd:
		sep, kidNeed := " or ", precAnd
		if n.kind == kAnd {
			sep, kidNeed = " and ", precNot
		}
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(sep)
			}
			k.write(b, kidNeed)
		}
	case kNot:
		b.WriteString("not ")
		n.kids[0].write(b, precAtom)
	case kAlias:
		b.WriteString(n.name)
	case kCmp:
		b.WriteString(n.field.String())
		b.WriteByte(' ')
		b.WriteString(opText[n.op])
		b.WriteByte(' ')
		b.WriteString(n.valueText())
	}
}

func (n *node) valueText() string {
	if n.op == opMatch {
		return quoteValue(n.str)
	}
	switch n.field.Type() {
	case TypeNumber:
		return formatNum(n.num)
	case TypeBool:
		return strconv.FormatBool(n.b)
	}
	switch n.field {
	case FieldSrcIP, FieldDstIP:
		return quoteValue(n.ip.String()) // a zone may hold any text
	case FieldRTPSSRC:
		return formatSSRC(n.ssrc)
	}
	return quoteValue(n.str)
}

// formatNum renders a number in the shortest form that reads back exactly.
func formatNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// formatSSRC renders an SSRC as a Record must: 0x and 8 lowercase hex digits.
func formatSSRC(v uint32) string {
	const hex = "0123456789abcdef"
	var b [10]byte
	b[0], b[1] = '0', 'x'
	for i := 9; i >= 2; i-- {
		b[i] = hex[v&0xf]
		v >>= 4
	}
	return string(b[:])
}

// quoteValue writes a string value bare when it reads back unchanged, and
// quoted otherwise: double quotes unless the value holds a double quote and
// no single quote. Inside quotes a backslash escapes only the quote.
func quoteValue(s string) string {
	if bareOK(s) {
		return s
	}
	q := byte('"')
	if strings.IndexByte(s, '"') >= 0 && strings.IndexByte(s, '\'') < 0 {
		q = '\''
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for i := 0; i < len(s); i++ {
		if s[i] == q {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte(q)
	return b.String()
}

// bareOK reports whether s can be written as a bare value.
func bareOK(s string) bool {
	if s == "" || isKeyword(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isBareByte(s[i]) {
			return false
		}
	}
	return true
}

// mkList builds an and/or node, flattening children of the same kind and
// collapsing a single child.
func mkList(k kind, kids []*node) *node {
	if len(kids) == 1 {
		return kids[0]
	}
	flat := make([]*node, 0, len(kids))
	for _, c := range kids {
		if c.kind == k {
			flat = append(flat, c.kids...)
		} else {
			flat = append(flat, c)
		}
	}
	return &node{kind: k, kids: flat}
}

// mkNot negates a node; not not x is x.
func mkNot(n *node) *node {
	if n.kind == kNot {
		return n.kids[0]
	}
	return &node{kind: kNot, kids: []*node{n}}
}
