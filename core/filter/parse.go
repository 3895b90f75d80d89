package filter

import (
	"errors"
	"net/netip"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the language.
const (
	// MaxDepth is the deepest parenthesis nesting accepted.
	MaxDepth = 50
	// MaxRegexBytes is the longest regular expression accepted after
	// quote processing (1 MiB).
	MaxRegexBytes = 1 << 20
	// MaxExprBytes is the longest expression accepted: one maximal regular
	// expression plus 64 KiB for the rest.
	MaxExprBytes = MaxRegexBytes + 64<<10
	// MaxRegexInsts bounds the estimated compiled size, in instructions,
	// of all the regular expressions of one filter together (about one
	// instruction per literal character, counted repetitions expanded).
	// Go's regexp builds every instruction (a 30 KB pattern of nested {n}
	// took 4.7 s and 700 MB to compile) and matches in time proportional
	// to text length times program size, so the byte limit alone does not
	// bound the cost. At this budget a compile stays under about 80 MB and
	// a quarter of a second; a pattern of MaxRegexBytes is accepted when
	// its program fits.
	MaxRegexInsts = 1 << 18
)

// Compile parses and checks an expression (or a bare alias name) and returns
// the compiled filter. Aliases expand with th. A bad expression returns an
// *Error carrying the position, a caret line and a hint; invalid thresholds
// return a plain error. Compile never panics, whatever the input.
func Compile(expr string, th Thresholds) (*Filter, error) {
	if err := th.Validate(); err != nil {
		return nil, err
	}
	p := &parser{src: expr, th: th}
	n, perr := p.parseAll()
	if perr != nil {
		return nil, perr
	}
	return &Filter{root: n, uses: p.uses}, nil
}

type parser struct {
	src     string
	pos     int
	depth   int
	th      Thresholds
	uses    uint64
	aliases map[string]*node // alias nodes compiled so far, shared

	regexInsts int64 // estimated program size of the patterns so far

	// The last bare value read, for the "quote a value with spaces" hint.
	lastBareStart, lastBareEnd int
}

func (p *parser) fail(pos int, msg, hint string) *Error {
	return &Error{Pos: pos, Msg: msg, Caret: caret(p.src, pos), Hint: hint}
}

func (p *parser) parseAll() (*node, *Error) {
	if len(p.src) > MaxExprBytes {
		return nil, p.fail(MaxExprBytes, "expression longer than "+strconv.Itoa(MaxExprBytes)+" bytes",
			"split the question into several calls")
	}
	p.skipSpace()
	if p.pos == len(p.src) {
		return nil, p.fail(p.pos, "empty expression",
			"write a comparison such as state == Failed or an alias such as problems; omit the filter to match everything")
	}
	p.lastBareStart, p.lastBareEnd = -1, -1
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return nil, p.unexpectedAfterTerm(false)
	}
	return n, nil
}

func (p *parser) parseOr() (*node, *Error) {
	first, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	kids := []*node{first}
	for {
		w, _, end := p.peekWord()
		if !strings.EqualFold(w, "or") {
			break
		}
		p.pos = end
		n, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
	return mkList(kOr, kids), nil
}

func (p *parser) parseAnd() (*node, *Error) {
	first, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	kids := []*node{first}
	for {
		w, _, end := p.peekWord()
		if !strings.EqualFold(w, "and") {
			break
		}
		p.pos = end
		n, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
	return mkList(kAnd, kids), nil
}

// parseNot reads any number of NOT keywords iteratively (no recursion, so a
// long run of them cannot exhaust the stack) and then one atom.
func (p *parser) parseNot() (*node, *Error) {
	negs := 0
	for {
		w, _, end := p.peekWord()
		if !strings.EqualFold(w, "not") {
			break
		}
		negs++
		p.pos = end
	}
	n, err := p.parseAtom()
	if err != nil {
		return nil, err
	}
	if negs%2 == 1 {
		n = mkNot(n)
	}
	return n, nil
}

const atomWant = "expected a comparison, an alias or ("

func (p *parser) parseAtom() (*node, *Error) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return nil, p.fail(p.pos, atomWant+", found end of expression", "")
	}
	start := p.pos
	c := p.src[start]
	switch {
	case c == '(':
		if p.depth >= MaxDepth {
			return nil, p.fail(start, "parentheses nest deeper than "+strconv.Itoa(MaxDepth)+" levels",
				"flatten the expression: and/or chains need no parentheses")
		}
		p.depth++
		p.pos++
		n, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, p.fail(p.pos, "expected ), found end of expression",
				"close the ( opened at position "+strconv.Itoa(start))
		}
		if p.src[p.pos] != ')' {
			return nil, p.unexpectedAfterTerm(true)
		}
		p.pos++
		p.depth--
		return n, nil
	case c == ')':
		hint := ""
		if start > 0 && p.src[start-1] == '(' {
			hint = "parentheses must hold an expression"
		}
		return nil, p.fail(start, atomWant+", found )", hint)
	case c == '"' || c == '\'':
		return nil, p.fail(start, atomWant+", found a quoted value",
			"a comparison starts with a field name: from.user == \"alice\"")
	case !isBareByte(c):
		return nil, p.fail(start, atomWant+", found "+describeByte(c), p.hintForByte(c))
	}
	w := p.bareRun()
	if isKeyword(w) {
		return nil, p.fail(start, atomWant+", found the keyword "+strings.ToLower(w), "")
	}
	p.skipSpace()
	opNext := p.pos < len(p.src) && isOpByte(p.src[p.pos])
	if _, ok := aliasByName(w); ok {
		if opNext {
			hint := "an alias stands alone: write " + w
			if f := suggest(w, fieldNames()); f != "" {
				hint = "did you mean the field " + f + "?"
			}
			return nil, p.fail(start, w+" is an alias, not a field", hint)
		}
		return p.aliasNode(w, start)
	}
	f, ok := FieldByName(w)
	if !ok {
		if opNext {
			return nil, p.fail(start, "unknown field "+quoteShort(w), fieldHint(w))
		}
		hint := fieldHint(w)
		if a := suggest(w, aliasNames()); a != "" {
			hint = "did you mean the alias " + a + "?"
		}
		return nil, p.fail(start, "unknown field or alias "+quoteShort(w), hint)
	}
	if !opNext {
		hint := "write " + w + " == <value>"
		if f.Type() == TypeBool {
			hint = w + " is a boolean field: write " + w + " == true"
		}
		at := p.pos
		if at >= len(p.src) {
			return nil, p.fail(at, "expected an operator after "+w+", found end of expression", hint)
		}
		return nil, p.fail(at, "expected an operator after "+w+", found "+p.describeAt(at), hint)
	}
	return p.parseComparison(f, w)
}

func (p *parser) parseComparison(f Field, name string) (*node, *Error) {
	opStart := p.pos
	o, err := p.parseOp()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	valStart := p.pos
	val, bare, err := p.parseValue(opText[o])
	if err != nil {
		return nil, err
	}
	n := &node{kind: kCmp, field: f, op: o, pop: o}
	if o == opNe {
		n.pop, n.neg = opEq, true
	}
	info := f.Info()
	switch info.Type {
	case TypeBool:
		if o != opEq && o != opNe {
			return nil, p.fail(opStart, name+" is a boolean field: only == and != apply", "write "+name+" == true or "+name+" == false")
		}
		switch strings.ToLower(val) {
		case "true":
			n.b = true
		case "false":
			n.b = false
		default:
			return nil, p.fail(valStart, name+" is a boolean field: expected true or false, found "+quoteShort(val),
				"write "+name+" == true or "+name+" == false")
		}
		n.mode = modeBool
	case TypeNumber:
		if o == opMatch {
			return nil, p.fail(opStart, "=~ applies only to string fields; "+name+" is a number", "compare numbers with == != < > <= >=")
		}
		v, ok := parseNumber(val)
		if !ok {
			return nil, p.fail(valStart, name+" is a number: "+quoteShort(val)+" is not a number", numberHint(name, opText[o], info.Unit, val))
		}
		n.num = v
		n.mode = modeNum
	case TypeString:
		if o == opMatch {
			re, perr := p.compileRegex(val, valStart, bare)
			if perr != nil {
				return nil, perr
			}
			n.str, n.re = val, re
			if f.Multi() {
				n.mode, n.one = modeMulti, re.MatchString
			} else {
				n.mode = modeRe
			}
			break
		}
		switch f {
		case FieldState:
			if !isState(val) {
				hint := "states are case-sensitive: " + strings.Join(states, ", ")
				if s := suggest(val, states); s != "" {
					hint = "did you mean " + s + "? " + hint
				}
				return nil, p.fail(valStart, "unknown state "+quoteShort(val), hint)
			}
			n.str, n.mode = val, modeStr
		case FieldSrcIP, FieldDstIP:
			a, aerr := netip.ParseAddr(val)
			if aerr != nil {
				hint := name + " holds an address such as 10.0.0.1 or 2001:db8::1; use =~ for a pattern"
				if ap, perr := netip.ParseAddrPort(val); perr == nil {
					hint = name + " holds the address only: write " + name + " == " + ap.Addr().String() + " and compare the port with " + strings.TrimSuffix(name, ".ip") + ".port"
				} else if strings.Contains(val, "/") {
					hint = "prefixes are not supported: compare a range, " + name + " >= 10.0.0.0 and " + name + " <= 10.255.255.255, or use =~"
				}
				return nil, p.fail(valStart, quoteShort(val)+" is not an IP address", hint)
			}
			n.ip, n.mode = a.Unmap(), modeIP
		case FieldRTPSSRC:
			v, ok := parseSSRC(val)
			if !ok {
				return nil, p.fail(valStart, quoteShort(val)+" is not an SSRC",
					"write an SSRC as 0x followed by up to 8 hex digits (0x1a2b3c4d) or as a decimal number; use =~ for a pattern")
			}
			n.ssrc, n.mode = v, modeMulti
			n.one = ssrcTester(n.pop, v)
		default:
			n.str = val
			if f.Multi() {
				n.mode = modeMulti
				n.one = strTester(n.pop, val)
			} else {
				n.mode = modeStr
			}
		}
	}
	p.uses |= 1 << f
	return n, nil
}

func strTester(o op, lit string) func(string) bool {
	return func(v string) bool { return strTest(o, v, lit) }
}

func ssrcTester(o op, lit uint32) func(string) bool {
	return func(v string) bool {
		x, ok := parseSSRC(v)
		if !ok {
			return false
		}
		c := 0
		if x < lit {
			c = -1
		} else if x > lit {
			c = 1
		}
		return cmpTest(o, c)
	}
}

// compileRegex checks and compiles the pattern of a =~ comparison. The
// pattern is parsed first and its program size estimated from the parse
// tree, so that a short pattern with nested counted repetition cannot make
// the compiler build millions of instructions: the patterns of one
// expression share a budget of MaxRegexInsts.
func (p *parser) compileRegex(val string, at int, bare bool) (*regexp.Regexp, *Error) {
	if len(val) > MaxRegexBytes {
		return nil, p.fail(at, "regular expression longer than "+strconv.Itoa(MaxRegexBytes)+" bytes", "")
	}
	hint := "the syntax is Go RE2 (no backreferences or lookaround)"
	if bare {
		hint += "; quote a pattern containing spaces, parentheses, quotes or = ! < >"
	}
	tree, err := syntax.Parse(val, syntax.Perl)
	if err != nil {
		return nil, p.fail(at, "bad regular expression: "+regexMsg(err), hint)
	}
	size := regexSize(tree)
	p.regexInsts += size
	if p.regexInsts > MaxRegexInsts {
		return nil, p.fail(at, "regular expressions too complex: about "+strconv.FormatInt(p.regexInsts, 10)+
			" instructions, over the limit of "+strconv.Itoa(MaxRegexInsts)+" for one filter",
			"use fewer or smaller counted repetitions ({n}) and alternations, or split the question")
	}
	re, err := regexp.Compile(val)
	if err != nil {
		return nil, p.fail(at, "bad regular expression: "+regexMsg(err), hint)
	}
	return re, nil
}

// regexSize estimates the number of instructions in the compiled program
// of a parsed regular expression the way regexp/syntax sizes it, counting
// every expansion of a counted repetition. The tree is at most 1000 deep
// (regexp/syntax refuses deeper), so the recursion is bounded; sums
// saturate instead of overflowing.
func regexSize(re *syntax.Regexp) int64 {
	const ceiling = 1 << 40
	var size int64
	switch re.Op {
	case syntax.OpLiteral:
		size = int64(len(re.Rune))
	case syntax.OpCapture, syntax.OpStar:
		size = 2 + regexSize(re.Sub[0])
	case syntax.OpPlus, syntax.OpQuest:
		size = 1 + regexSize(re.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			size += regexSize(sub)
			if size > ceiling {
				return ceiling
			}
		}
		if re.Op == syntax.OpAlternate {
			size += int64(len(re.Sub)) - 1
		}
	case syntax.OpRepeat:
		sub := regexSize(re.Sub[0])
		n := int64(max(re.Max, re.Min))
		if sub > ceiling/(n+1) {
			return ceiling
		}
		switch {
		case re.Max < 0 && re.Min == 0: // x{0,} = x*
			size = 2 + sub
		case re.Max < 0: // x{2,} = xx(x)*
			size = 1 + int64(re.Min)*sub
		default: // x{2,5} = xx(x(x(x)?)?)?
			size = int64(re.Max)*sub + int64(re.Max-re.Min)
		}
	}
	return max(1, size)
}

// regexMsg renders a regexp error as its code and the offending text, cut
// short: the standard message repeats the whole pattern, up to a megabyte.
func regexMsg(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		expr := se.Expr
		if len(expr) > 64 {
			cut := 64
			for cut > 0 && !utf8.RuneStart(expr[cut]) {
				cut--
			}
			expr = expr[:cut] + "..."
		}
		return string(se.Code) + ": `" + expr + "`"
	}
	msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return msg
}

func (p *parser) parseOp() (op, *Error) {
	s, i := p.src, p.pos
	two := ""
	if i+2 <= len(s) {
		two = s[i : i+2]
	}
	switch two {
	case "==":
		p.pos += 2
		return opEq, nil
	case "!=":
		p.pos += 2
		return opNe, nil
	case "<=":
		p.pos += 2
		return opLe, nil
	case ">=":
		p.pos += 2
		return opGe, nil
	case "=~":
		p.pos += 2
		return opMatch, nil
	case "!~":
		return 0, p.fail(i, "unknown operator !~", "negate a match with not: not (field =~ pattern)")
	case "=<":
		return 0, p.fail(i, "unknown operator =<", "did you mean <=?")
	case "=>":
		return 0, p.fail(i, "unknown operator =>", "did you mean >=?")
	case "<>":
		return 0, p.fail(i, "unknown operator <>", "did you mean !=?")
	}
	switch s[i] {
	case '<':
		p.pos++
		return opLt, nil
	case '>':
		p.pos++
		return opGt, nil
	case '=':
		return 0, p.fail(i, "unknown operator =", "equality is ==")
	}
	return 0, p.fail(i, "unknown operator "+string(s[i]), "operators are == != < > <= >= =~")
}

// parseValue reads a bare or quoted value after the operator opTok. bare
// reports whether it was bare.
func (p *parser) parseValue(opTok string) (val string, bare bool, _ *Error) {
	s := p.src
	start := p.pos
	if start >= len(s) {
		return "", false, p.fail(start, "expected a value after "+opTok+", found end of expression", "")
	}
	c := s[start]
	if c == '"' || c == '\'' {
		v, err := p.quoted(c)
		return v, false, err
	}
	if !isBareByte(c) {
		hint := "values may be bare or quoted"
		switch {
		case c == '(' || c == ')':
			hint = "quote a value containing parentheses"
		case isOpByte(c):
			hint = "a comparison takes one operator; quote a value starting with " + string(c)
		}
		return "", false, p.fail(start, "expected a value after "+opTok+", found "+describeByte(c), hint)
	}
	v := p.bareRun()
	if isKeyword(v) {
		return "", false, p.fail(start, "expected a value after "+opTok+", found the keyword "+strings.ToLower(v),
			"quote it to compare with the word: \""+v+"\"")
	}
	p.lastBareStart, p.lastBareEnd = start, p.pos
	return v, true, nil
}

// quoted reads a value in quote q. Inside, a backslash escapes only q; any
// other backslash is kept as is.
func (p *parser) quoted(q byte) (string, *Error) {
	s := p.src
	start := p.pos
	i := start + 1
	escaped := false
	for i < len(s) {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == q:
			escaped = true
			i += 2
			continue
		case s[i] == q:
			p.pos = i + 1
			body := s[start+1 : i]
			if escaped {
				body = strings.ReplaceAll(body, `\`+string(q), string(q))
			}
			return body, nil
		}
		i++
	}
	hint := "close it with " + string(q)
	if strings.Contains(s[start+1:], `\`+string(q)) {
		hint += "; a backslash escapes only the quote, so a quoted value cannot end with a backslash (write it bare)"
	}
	return "", p.fail(start, "unterminated quoted value", hint)
}

// unexpectedAfterTerm reports what follows a complete term when it is not
// and, or, ) or the end.
func (p *parser) unexpectedAfterTerm(inParens bool) *Error {
	at := p.pos
	want := "expected and, or or end of expression"
	if inParens {
		want = "expected and, or or )"
	}
	c := p.src[at]
	if c == ')' {
		return p.fail(at, "unexpected )", "no ( is open here")
	}
	found := p.describeAt(at)
	hint := ""
	switch {
	case strings.HasPrefix(p.src[at:], "&&") || c == '&':
		hint = "use and"
	case strings.HasPrefix(p.src[at:], "||") || c == '|':
		hint = "use or"
	case isOpByte(c):
		hint = "a comparison takes one operator; join comparisons with and / or"
	case c == '"' || c == '\'':
		hint = "join conditions with and / or"
	case isBareByte(c):
		w, _, end := p.peekWord()
		switch {
		case p.lastBareEnd >= 0 && p.lastBareEnd < at && strings.TrimSpace(p.src[p.lastBareEnd:at]) == "" && !p.startsTerm(w):
			hint = "quote a value containing spaces: " + quoteForHint(p.src[p.lastBareStart:end])
		default:
			hint = "join conditions with and / or"
		}
	}
	return p.fail(at, want+", found "+found, hint)
}

// startsTerm reports whether w reads as the start of a new condition (a
// field, an alias or not), for telling a missing and/or from a value with a
// space.
func (p *parser) startsTerm(w string) bool {
	if _, ok := FieldByName(w); ok {
		return true
	}
	if _, ok := aliasByName(w); ok {
		return true
	}
	return strings.EqualFold(w, "not")
}

func quoteForHint(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\""
}

// describeAt names the token at byte offset at for an error message.
func (p *parser) describeAt(at int) string {
	if at >= len(p.src) {
		return "end of expression"
	}
	c := p.src[at]
	if isBareByte(c) {
		end := at
		for end < len(p.src) && isBareByte(p.src[end]) {
			end++
		}
		return quoteShort(p.src[at:end])
	}
	if isOpByte(c) {
		end := at
		for end < len(p.src) && isOpByte(p.src[end]) && end-at < 3 {
			end++
		}
		return strconv.Quote(p.src[at:end])
	}
	return describeByte(c)
}

func describeByte(c byte) string {
	switch {
	case c == '"' || c == '\'':
		return "a quoted value"
	case c < 0x20 || c == 0x7f:
		return "control character " + strconv.QuoteRune(rune(c))
	}
	return strconv.Quote(string(c))
}

func (p *parser) hintForByte(c byte) string {
	if isOpByte(c) {
		return "a comparison starts with a field name: state == Failed"
	}
	return ""
}

// isBareByte reports whether c may appear in a bare value or a name: any
// byte except whitespace, control characters, parentheses, quotes and the
// operator characters = ! < >.
func isBareByte(c byte) bool {
	if c <= 0x20 || c == 0x7f {
		return false
	}
	switch c {
	case '(', ')', '"', '\'', '=', '!', '<', '>':
		return false
	}
	return true
}

func isOpByte(c byte) bool { return c == '=' || c == '!' || c == '<' || c == '>' }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// isKeyword reports whether s is and, or or not in any case.
func isKeyword(s string) bool {
	return strings.EqualFold(s, "and") || strings.EqualFold(s, "or") || strings.EqualFold(s, "not")
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && isSpace(p.src[p.pos]) {
		p.pos++
	}
}

// bareRun consumes and returns the run of bare bytes at the position.
func (p *parser) bareRun() string {
	start := p.pos
	for p.pos < len(p.src) && isBareByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// peekWord returns the bare run after any whitespace without consuming it.
func (p *parser) peekWord() (w string, start, end int) {
	i := p.pos
	for i < len(p.src) && isSpace(p.src[i]) {
		i++
	}
	start = i
	for i < len(p.src) && isBareByte(p.src[i]) {
		i++
	}
	return p.src[start:i], start, i
}

// parseNumber reads a decimal number: an optional sign, digits with an
// optional fraction (or a fraction alone), and an optional exponent. Hex,
// underscores, inf and nan are refused, as is a value out of float64 range.
func parseNumber(s string) (float64, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		ed := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			ed++
		}
		if ed == 0 {
			return 0, false
		}
	}
	if i != len(s) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// numberHint explains a bad number, pointing out a unit written after it.
func numberHint(name, opTok, unit, val string) string {
	unitText := map[string]string{"s": "seconds", "ms": "milliseconds", "%": "percent"}[unit]
	i := 0
	for i < len(val) && (val[i] >= '0' && val[i] <= '9' || val[i] == '.' || val[i] == '-' || val[i] == '+') {
		i++
	}
	if i > 0 && i < len(val) {
		if unitText != "" {
			return "numbers carry no unit: " + name + " is in " + unitText + ", write " + name + " " + opTok + " " + val[:i]
		}
		return "numbers carry no unit: write " + val[:i]
	}
	if unitText != "" {
		return "write a decimal number in " + unitText + ", e.g. " + name + " > 2.5"
	}
	return "write a decimal number, e.g. " + name + " > 3"
}

func fieldHint(w string) string {
	if f := suggest(w, fieldNames()); f != "" {
		return "did you mean " + f + "?"
	}
	return "fields: " + strings.Join(fieldNames(), ", ")
}

func fieldNames() []string {
	out := make([]string, 0, NumFields)
	for f := Field(1); f < fieldEnd; f++ {
		out = append(out, fieldTable[f].Name)
	}
	return out
}

// aliasNode returns the node for alias name, compiling its expansion once
// per Compile call and sharing it between occurrences.
func (p *parser) aliasNode(name string, at int) (*node, *Error) {
	if n, ok := p.aliases[name]; ok {
		return n, nil // its fields are in p.uses already
	}
	text, _ := ExpandAlias(name, p.th)
	sub := &parser{src: text, th: p.th}
	exp, err := sub.parseAll()
	if err != nil {
		return nil, p.fail(at, "alias "+name+" expands to an invalid expression: "+err.Msg, "check the run's thresholds")
	}
	n := &node{kind: kAlias, name: name, kids: []*node{exp}}
	if p.aliases == nil {
		p.aliases = make(map[string]*node, 4)
	}
	p.aliases[name] = n
	p.uses |= sub.uses
	return n, nil
}

// quoteShort quotes s for a message, cut to 64 bytes on a rune boundary so
// that a hostile megabyte-long word cannot inflate the error.
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}
