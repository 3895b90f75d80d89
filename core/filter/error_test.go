package filter

import (
	"errors"
	"strings"
	"testing"
)

func compileErr(t *testing.T, expr string) *Error {
	t.Helper()
	f, err := Compile(expr, defTh)
	if err == nil {
		t.Fatalf("Compile(%q) = %q, want an error", expr, f.String())
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("Compile(%q): got %T %v, want *Error", expr, err, err)
	}
	return pe
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name, expr string
		pos        int
		msg, hint  string // substrings
	}{
		{"empty", "", 0, "empty expression", "omit the filter"},
		{"blank", "   \t", 4, "empty expression", ""},
		{"unknown field", "from_user == alice", 0, `unknown field "from_user"`, "did you mean from.user?"},
		{"unknown field by last component", "jitter > 50", 0, `unknown field "jitter"`, "did you mean rtp.jitter?"},
		{"unknown field no guess", "zz == 1", 0, `unknown field "zz"`, "fields: from.user, to.user"},
		{"field case", "From.User == a", 0, `unknown field "From.User"`, "did you mean from.user?"},
		{"unknown alias", "one-wya", 0, `unknown field or alias "one-wya"`, "did you mean the alias one-way?"},
		{"alias used as field", "one-way == true", 0, "one-way is an alias, not a field", "did you mean the field one_way?"},
		{"unknown state", "state == failed", 9, `unknown state "failed"`, "did you mean Failed? states are case-sensitive: Trying, Ringing, InCall"},
		{"unknown state no guess", "state == Zzz", 9, `unknown state "Zzz"`, "Transferring"},
		{"bool field alone", "one_way and pdd > 1", 8, "expected an operator after one_way", "one_way == true"},
		{"field alone at end", "pdd", 3, "expected an operator after pdd, found end of expression", "pdd == <value>"},
		{"single equals", "pdd = 3", 4, "unknown operator =", "equality is =="},
		{"not match operator", "ua !~ x", 3, "unknown operator !~", "not (field =~ pattern)"},
		{"reversed le", "pdd =< 3", 4, "unknown operator =<", "<="},
		{"reversed ge", "pdd => 3", 4, "unknown operator =>", ">="},
		{"sql not equal", "pdd <> 3", 4, "unknown operator <>", "!="},
		{"missing operator", "pdd 3", 4, `expected an operator after pdd, found "3"`, ""},
		{"missing value", "pdd >", 5, "expected a value after >, found end of expression", ""},
		{"double operator", "pdd == == 3", 7, `expected a value after ==, found "="`, "one operator"},
		{"value is keyword", "method == and", 10, "found the keyword and", `"and"`},
		{"value with parenthesis", "ua == PBX(1)", 9, `expected and, or or end of expression, found "("`, ""},
		{"value starting with parenthesis", "ua == (x)", 6, `expected a value after ==, found "("`, "quote a value containing parentheses"},
		{"number with unit", "pdd > 3s", 6, `pdd is a number: "3s" is not a number`, "numbers carry no unit: pdd is in seconds, write pdd > 3"},
		{"number with ms unit", "rtp.jitter > 30ms", 13, "not a number", "rtp.jitter is in milliseconds, write rtp.jitter > 30"},
		{"percent", "rtp.loss >= 5%", 12, "not a number", "in percent"},
		{"hex number", "pdd > 0x10", 6, "not a number", ""},
		{"inf", "pdd > inf", 6, `"inf" is not a number`, ""},
		{"out of range", "pdd > 1e999", 6, "not a number", ""},
		{"regex on number", "pdd =~ 3", 4, "=~ applies only to string fields; pdd is a number", ""},
		{"regex on bool", "one_way =~ t", 8, "one_way is a boolean field: only == and != apply", ""},
		{"order on bool", "one_way < true", 8, "only == and != apply", "one_way == true or one_way == false"},
		{"bad bool", "one_way == yes", 11, `expected true or false, found "yes"`, ""},
		{"bad regex", "ua =~ 'a(b'", 6, "bad regular expression: missing closing ): `a(b`", "Go RE2"},
		{"regex backreference", `ua =~ '(a)\1'`, 6, "bad regular expression: invalid escape sequence", "no backreferences"},
		{"bad ip", "src.ip == 10.0.0", 10, `"10.0.0" is not an IP address`, "use =~ for a pattern"},
		{"ip with port", "dst.ip == 10.0.0.1:5060", 10, "is not an IP address", "dst.ip == 10.0.0.1 and compare the port with dst.port"},
		{"ip prefix", "src.ip == 10.0.0.0/8", 10, "is not an IP address", "prefixes are not supported"},
		{"bad ssrc", "rtp.ssrc == 0xZZ", 12, `"0xZZ" is not an SSRC`, "0x1a2b3c4d"},
		{"ssrc too big", "rtp.ssrc == 0x123456789", 12, "is not an SSRC", ""},
		{"ssrc decimal too big", "rtp.ssrc == 4294967296", 12, "is not an SSRC", ""},
		{"unterminated double", `ua == "abc`, 6, "unterminated quoted value", `close it with "`},
		{"unterminated single", `ua == 'abc`, 6, "unterminated quoted value", "close it with '"},
		{"quoted value ending in backslash", `ua == "C:\"`, 6, "unterminated quoted value", "cannot end with a backslash"},
		{"space in bare value", "from.user == John Smith", 18, `found "Smith"`, `quote a value containing spaces: "John Smith"`},
		{"missing and", "pdd > 1 state == Failed", 8, `expected and, or or end of expression, found "state"`, "join conditions with and / or"},
		{"double ampersand", "pdd > 1 && pdd < 3", 8, `found "&&"`, "use and"},
		{"double pipe", "pdd > 1 || pdd < 3", 8, `found "||"`, "use or"},
		{"chained comparison", "pdd > 1 < 3", 8, `found "<"`, "one operator"},
		{"trailing and", "pdd > 1 and", 11, "expected a comparison, an alias or (, found end of expression", ""},
		{"leading or", "or pdd > 1", 0, "found the keyword or", ""},
		{"dangling not", "not", 3, "found end of expression", ""},
		{"empty parentheses", "()", 1, "found )", "parentheses must hold an expression"},
		{"unclosed parenthesis", "(pdd > 1", 8, "expected ), found end of expression", "close the ( opened at position 0"},
		{"unopened parenthesis", "pdd > 1)", 7, "unexpected )", "no ( is open here"},
		{"junk in parentheses", "(pdd > 1 x)", 9, `expected and, or or ), found "x"`, ""},
		{"quoted field", `"pdd" > 1`, 0, "found a quoted value", "starts with a field name"},
		{"operator first", "== 3", 0, `found "="`, "starts with a field name"},
		{"control character", "pdd > 1\x01", 7, `found control character '\x01'`, ""},
		{"control character in value", "ua == a\x00b", 7, `found control character '\x00'`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pe := compileErr(t, tc.expr)
			if pe.Pos != tc.pos {
				t.Errorf("Pos got %d, want %d (%s)", pe.Pos, tc.pos, pe.Msg)
			}
			if !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("Msg got %q, want it to contain %q", pe.Msg, tc.msg)
			}
			if !strings.Contains(pe.Hint, tc.hint) {
				t.Errorf("Hint got %q, want it to contain %q", pe.Hint, tc.hint)
			}
			// The caret sits under Pos on a one-line rendering.
			lines := strings.Split(pe.Caret, "\n")
			if len(lines) != 2 || !strings.HasSuffix(lines[1], "^") || strings.Trim(lines[1], " ^") != "" {
				t.Fatalf("Caret got %q", pe.Caret)
			}
			if col := len(lines[1]) - 1; col != len([]rune(tc.expr[:pe.Pos])) {
				t.Errorf("caret at column %d, want %d", col, len([]rune(tc.expr[:pe.Pos])))
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	pe := compileErr(t, "from.user == alice and pdd < x")
	want := &Error{
		Pos:   29,
		Msg:   `pdd is a number: "x" is not a number`,
		Caret: "from.user == alice and pdd < x\n                             ^",
		Hint:  "write a decimal number in seconds, e.g. pdd > 2.5",
	}
	if *pe != *want {
		t.Errorf("got %#v\nwant %#v", pe, want)
	}
	if got, w := pe.Error(), `parsing filter: pdd is a number: "x" is not a number at position 29 (write a decimal number in seconds, e.g. pdd > 2.5)`; got != w {
		t.Errorf("Error() got %q, want %q", got, w)
	}
	// Control characters print as spaces, non-ASCII counts as one column.
	pe = compileErr(t, "ua == \"ü\"\tand x")
	if want := "ua == \"ü\" and x\n" + strings.Repeat(" ", 14) + "^"; pe.Caret != want {
		t.Errorf("Caret got %q, want %q", pe.Caret, want)
	}
	// A long expression is cut to a window around the position.
	long := strings.Repeat("pdd > 1 and ", 20) + "bogus == 1" + strings.Repeat(" and pdd > 1", 20)
	pe = compileErr(t, long)
	if pe.Pos != 240 {
		t.Fatalf("Pos got %d, want 240", pe.Pos)
	}
	wantCaret := "..." + long[200:280] + "...\n" + strings.Repeat(" ", 43) + "^"
	if pe.Caret != wantCaret {
		t.Errorf("Caret got\n%s\nwant\n%s", pe.Caret, wantCaret)
	}
}

func TestNestingLimit(t *testing.T) {
	nest := func(n int) string {
		return strings.Repeat("(", n) + "pdd > 1" + strings.Repeat(")", n)
	}
	f := mustCompile(t, nest(MaxDepth))
	if f.String() != "pdd > 1" {
		t.Errorf("got %q", f.String())
	}
	pe := compileErr(t, nest(MaxDepth+1))
	if pe.Pos != MaxDepth || !strings.Contains(pe.Msg, "deeper than 50") {
		t.Errorf("got %v", pe)
	}
	// Depth counts open parentheses, not parentheses seen: siblings are fine.
	sib := strings.Repeat("("+nest(MaxDepth-1)+") or ", 100) + "pdd > 2"
	mustCompile(t, sib)
	// Nesting through not and alternation still counts each (.
	deep := strings.Repeat("not (pdd > 1 or ", MaxDepth) + "pdd > 2" + strings.Repeat(")", MaxDepth)
	mustCompile(t, deep)
	pe = compileErr(t, "pdd > 0 or "+strings.Repeat("not (pdd > 1 or ", MaxDepth+1)+"pdd > 2"+strings.Repeat(")", MaxDepth+1))
	if !strings.Contains(pe.Msg, "deeper than") {
		t.Errorf("got %v", pe)
	}
	// A huge run of ( or not must neither recurse without bound nor panic.
	pe = compileErr(t, strings.Repeat("(", MaxExprBytes))
	if pe.Pos != MaxDepth {
		t.Errorf("Pos got %d, want %d", pe.Pos, MaxDepth)
	}
	nots := strings.Repeat("not ", 200000) + "pdd > 1"
	f = mustCompile(t, nots)
	if f.String() != "pdd > 1" {
		t.Errorf("200000 nots: got %q", f.String())
	}
}

func TestLengthLimits(t *testing.T) {
	// A pattern of exactly MaxRegexBytes compiles (a character class keeps
	// the compiled program small); one byte more is refused before compiling.
	pattern := "[" + strings.Repeat("a", MaxRegexBytes-2) + "]"
	f, err := Compile("ua =~ '"+pattern+"'", defTh)
	if err != nil {
		t.Fatalf("pattern of %d bytes: %v", len(pattern), err)
	}
	if !f.Match((&MemRecord{}).SetStr(FieldUA, "xa")) || f.Match((&MemRecord{}).SetStr(FieldUA, "xb")) {
		t.Error("the large pattern does not match as written")
	}
	pe := compileErr(t, "ua =~ '["+strings.Repeat("a", MaxRegexBytes-1)+"]'")
	if pe.Pos != 6 || !strings.Contains(pe.Msg, "regular expression longer than 1048576 bytes") {
		t.Errorf("got %v", pe)
	}
	// A literal pattern of MaxRegexBytes is within the byte limit but its
	// program (one instruction per character) is over the budget.
	pe = compileErr(t, "ua =~ ^"+strings.Repeat("a", MaxRegexBytes-1))
	if pe.Pos != 6 || !strings.Contains(pe.Msg, "regular expressions too complex: about 1048576 instructions, over the limit of 262144") {
		t.Errorf("got %v", pe)
	}
	mustCompile(t, "ua =~ ^"+strings.Repeat("a", MaxRegexInsts-1))
	// A short pattern that expands to millions of instructions is refused
	// before it is compiled, and its message does not echo the pattern.
	bomb := strings.Repeat("(?:a{1000})", 3000)
	pe = compileErr(t, "ua =~ '"+bomb+"'")
	if pe.Pos != 6 || !strings.Contains(pe.Msg, "regular expressions too complex: about 3000000 instructions") {
		t.Errorf("got %v", pe)
	}
	// The budget is shared by the patterns of one filter.
	part := strings.Repeat("(?:a{1000})", 140)
	if mustCompile(t, "ua =~ '"+part+"'").Match((&MemRecord{}).SetStr(FieldUA, "aaa")) {
		t.Error("140000 a's matched three")
	}
	pe = compileErr(t, "ua =~ '"+part+"' or from.user =~ '"+part+"'")
	if want := len("ua =~ '" + part + "' or from.user =~ "); pe.Pos != want || !strings.Contains(pe.Msg, "about 280000 instructions") {
		t.Errorf("got Pos %d (want %d): %s", pe.Pos, want, pe.Msg)
	}
	// Go's own refusal of a large pattern is reported without the pattern.
	pe = compileErr(t, "ua =~ '"+strings.Repeat("x", 5000)+"{1001}'")
	if len(pe.Msg) > 200 || !strings.Contains(pe.Msg, "invalid repeat count") {
		t.Errorf("got %q", pe.Msg)
	}
	// The expression itself is bounded.
	long := "ua == '" + strings.Repeat("a", MaxExprBytes) + "'"
	pe = compileErr(t, long)
	if pe.Pos != MaxExprBytes || !strings.Contains(pe.Msg, "expression longer than") {
		t.Errorf("got Pos %d %q", pe.Pos, pe.Msg)
	}
	if len(pe.Caret) > 1000 {
		t.Errorf("caret of %d bytes for a long expression", len(pe.Caret))
	}
	// A megabyte-long word is cut in the message.
	pe = compileErr(t, strings.Repeat("ü", 300000)+" == 1")
	if want := `unknown field "` + strings.Repeat("ü", 32) + `"...`; pe.Msg != want {
		t.Errorf("Msg got %q, want %q", pe.Msg, want)
	}
	pe = compileErr(t, "pdd > 1 "+strings.Repeat("x", 100000))
	if want := `expected and, or or end of expression, found "` + strings.Repeat("x", 64) + `"...`; pe.Msg != want {
		t.Errorf("Msg got %q, want %q", pe.Msg, want)
	}
	// Many repeated aliases share one compiled expansion.
	rep := strings.Repeat("problems or ", 80000) + "problems"
	f = mustCompile(t, rep)
	if !f.Match((&MemRecord{}).SetStr(FieldState, "Failed")) {
		t.Error("repeated alias does not match")
	}
}
