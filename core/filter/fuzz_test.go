package filter

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// fuzzRecords are evaluated by every expression the fuzzer gets to compile:
// an empty record, a full one and random ones.
var fuzzRecords = func() []Record {
	r := rand.New(rand.NewPCG(7, 7))
	out := []Record{nil, &MemRecord{}}
	full := &MemRecord{}
	for f := Field(1); f < fieldEnd; f++ {
		full.SetStr(f, "10.0.0.1").SetNum(f, 3).SetBool(f, true).Add(f, "0x0000abcd", "PCMU", "")
	}
	out = append(out, full)
	for range 8 {
		out = append(out, genRecord(r))
	}
	return out
}()

// FuzzCompile checks that Compile is total: it never panics; a failure is
// an *Error whose position lies within the input and whose caret line is
// well formed; and an expression that compiles evaluates on fake records
// without panicking, and its canonical form compiles to itself with the
// same matches.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"problems", "slow-setup and method == INVITE", "not one-way or (nat-issues and late-media)",
		"from.user == alice", `ua == "say \"hi\""`, `ua =~ '(?i)^asterisk'`, "src.ip >= 10.0.0.0 and src.ip <= 10.255.255.255",
		"rtp.ssrc == 0x1A2B3C4D", "pdd < 5 AND duration >= 2.5e0", "state == Failed or state == Cancelled",
		"NOT not NoT one_way == TRUE", "((((pdd > 1))))", "payload =~ \"Reason: Q\\.850\"", "", "(", ")", "pdd >", "'",
		"from.user == John Smith", "pdd > 3s", "a && b", "call_id == abc@host:5060", "\x00", "ü == ü", "rtp.codec != PCMU",
		strings.Repeat("(", 60) + "pdd > 1", strings.Repeat("not ", 100) + "problems", "ua == \"a\\\"", "ua =~ '\\'",
		// Found while fuzzing: an IP zone holding a space must be quoted in
		// the canonical form; nested counted repetition must not compile.
		`dst.ip == "fe80::1%a b"`, "ua =~ '" + strings.Repeat("(?:a{1000})", 300) + "'", "payload =~ (a{999}){999}",
	} {
		f.Add(s)
	}
	th := DefaultThresholds()
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := Compile(expr, th)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Compile(%q): error %T is not *Error: %v", expr, err, err)
			}
			if pe.Pos < 0 || pe.Pos > len(expr) || pe.Msg == "" {
				t.Fatalf("Compile(%q): bad error %#v", expr, pe)
			}
			if lines := strings.Split(pe.Caret, "\n"); len(lines) != 2 || !strings.HasSuffix(lines[1], "^") {
				t.Fatalf("Compile(%q): bad caret %q", expr, pe.Caret)
			}
			_ = pe.Error()
			return
		}
		var results []bool
		for _, r := range fuzzRecords {
			results = append(results, flt.Match(r))
		}
		canon := flt.String()
		if len(canon) > MaxExprBytes {
			return // the canonical form may outgrow the input limit
		}
		g, err := Compile(canon, th)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not compile: %v", canon, expr, err)
		}
		if g.String() != canon {
			t.Fatalf("canonical form not stable: %q then %q", canon, g.String())
		}
		for i, r := range fuzzRecords {
			if g.Match(r) != results[i] {
				t.Fatalf("record %d: %q and its canonical form %q disagree", i, expr, canon)
			}
		}
	})
}
