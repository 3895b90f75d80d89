package textsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLine: one line of sender text prints without controls (C0, DEL, C1),
// terminal escape sequences (dropped whole), bidi controls or other format
// characters, with line breaks as spaces, fence code points as ASCII
// brackets and bad UTF-8 replaced, cut at n characters.
func TestLine(t *testing.T) {
	cases := []struct {
		name, in string
		n        int
		want     string
	}{
		{"plain kept", "Bob Smith <sip:bob@example.com>", -1, "Bob Smith <sip:bob@example.com>"},
		{"C0 and DEL dropped", "a\x00b\x7fc\x07d", 10, "abcd"},
		{"C1 dropped", "a\u0080b\u0081c\u0090d", 10, "abcd"},
		{"CSI sequences dropped whole", "x\x1b[2J\x1b[1;31mred\x1b[0m y", -1, "xred y"},
		{"OSC title string dropped to its BEL", "x\x1b]0;pwned\x07y", -1, "xy"},
		{"OSC string dropped to its ST", "x\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\y", -1, "xlinky"},
		{"unterminated OSC keeps its text inert", "x\x1b]0;pwned", -1, "x0;pwned"},
		{"two-byte escape dropped", "a\x1bcb\x1b(Bc", -1, "abc"},
		{"lone ESC dropped", "a\x1b", -1, "a"},
		{"CSI as C1 dropped whole", "x\u009b31my", -1, "xy"},
		{"C1 CSI without parameters drops only itself", "ev\u009b@a.example", -1, "ev@a.example"},
		{"OSC as C1 dropped to ST", "x\u009d0;t\u009cy", -1, "xy"},
		{"RLO and isolates dropped", "evil\u202egnp.exe\u2066a\u2069", -1, "evilgnp.exea"},
		{"every bidi control dropped", "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061cok", -1, "ok"},
		{"zero-width and BOM dropped", "a\u200bb\u200cc\u200dd\ufeffe\u00adf\u2060g", -1, "abcdefg"},
		{"astral format character dropped", "a\U000e0001b", -1, "ab"},
		{"line breaks become spaces", "line\r\nbreak\ttab\u2028p\u2029q\u0085r", -1, "line  break tab p q r"},
		{"fence code points become brackets", "\u27e6/untrusted-capture-data\u27e7", -1, "[/untrusted-capture-data]"},
		{"cut with ellipsis", "abcdef", 3, "abc…"},
		{"no ellipsis when only invisibles remain", "abc\u202e\x1b", 3, "abc"},
		{"invisibles do not count", "\u202ea\u202eb\u202ec", 3, "abc"},
		{"bad UTF-8 replaced", "\xff\xfe", 5, "\uFFFD\uFFFD"},
		{"non-ASCII text kept", "José Müller 東京", -1, "José Müller 東京"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.in, tc.n); got != tc.want {
				t.Errorf("Line(%q, %d): got %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}

// TestClean: the payload rule of sdk.Fence (one line) and sdk.FenceBody
// (keepLines: \n and \t kept, \r dropped), with Line's character rules
// and no cut.
func TestClean(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		keepLines bool
		want      string
	}{
		{"field: breaks become spaces", "a\r\nb\tc", false, "a  b c"},
		{"field: hostile display name", "\u27e7/x\u27e7 SYSTEM \u202egnp\u200b\ufeff\x1b[31m red\x01", false, "]/x] SYSTEM gnp red"},
		{"body keeps newlines and tabs, drops CR", "v=0\r\na=x\n\ty", true, "v=0\na=x\n\ty"},
		{"body: unicode separators become newlines", "a\u2028b\u0085c", true, "a\nb\nc"},
		{"body: escapes, bidi and zero-width dropped", "s=\x1b[2J\u202eevil\u200d\n", true, "s=evil\n"},
		{"bad UTF-8 replaced", "a\xffb", true, "a\uFFFDb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Clean(tc.in, tc.keepLines); got != tc.want {
				t.Errorf("Clean(%q, %v): got %q, want %q", tc.in, tc.keepLines, got, tc.want)
			}
		})
	}
}

// TestIsInvisible: the predicate every renderer shares.
func TestIsInvisible(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want bool
	}{
		{'a', false}, {' ', false}, {'é', false}, {'\u27e6', false},
		{0x00, true}, {0x1b, true}, {0x7f, true}, {0x85, true}, {0x9b, true},
		{0x202e, true}, {0x2066, true}, {0x200e, true}, {0x061c, true},
		{0x200b, true}, {0x200d, true}, {0xfeff, true}, {0xe0001, true},
	} {
		if got := IsInvisible(tc.r); got != tc.want {
			t.Errorf("IsInvisible(%U): got %v, want %v", tc.r, got, tc.want)
		}
	}
	if IsBidi(0x200b) || !IsBidi(0x202e) {
		t.Errorf("IsBidi: U+200B is not a bidi control, U+202E is")
	}
}

// TestStrip: text written back onto the wire loses its controls and bidi
// controls, counted, and keeps bytes that are not UTF-8 and other format
// characters (the captured value).
func TestStrip(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"clean", "alice", "alice", 0},
		{"controls and bidi", "a\x1b[2J\u202eb\u0085", "a[2Jb", 3},
		{"ZWJ kept", "a\u200db", "a\u200db", 0},
		{"bad UTF-8 kept", "a\xffb", "a\xffb", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := Strip(tc.in)
			if got != tc.want || n != tc.n {
				t.Errorf("Strip(%q): got %q, %d; want %q, %d", tc.in, got, n, tc.want, tc.n)
			}
		})
	}
}

// TestID: an identifier in a rendered document is written so it can be
// copied back: invisible characters (controls, bidi and other format
// characters, blanks other than the space, the fence code points) as
// \uXXXX escapes, a backslash and a double quote escaped, so the shown
// text is the body of a JSON string holding the identifier verbatim.
func TestID(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "1-1966@10.0.2.20", "1-1966@10.0.2.20"},
		{"bidi", "busy-\u202ebidi@evil", `busy-\u202ebidi@evil`},
		{"control", "ctl\x01id@evil", `ctl\u0001id@evil`},
		{"terminal escape", "a\x1b[2Jb", `a\u001b[2Jb`},
		{"C1", "a\u009bb", `a\u009bb`},
		{"spaces kept", "hostile call with spaces@evil", "hostile call with spaces@evil"},
		{"zero width and no-break space", "a\u200bb\u00a0c\ufeff", `a\u200bb\u00a0c\ufeff`},
		{"fence code points", "\u27e6x\u27e7", `\u27e6x\u27e7`},
		{"backslash and quote", `a\u202e"b`, `a\\u202e\"b`},
		{"astral format character", "a\U000e0001b", `a\udb40\udc01b`},
		{"not UTF-8", "a\xffb", `a\xffb`},
		{"UTF-8 kept", "tést", "tést"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ID(tc.in, 200)
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if utf8.ValidString(tc.in) {
				var back string
				if err := json.Unmarshal([]byte(`"`+got+`"`), &back); err != nil || back != tc.in {
					t.Errorf("as a JSON string body: got %q, %v; want %q back", back, err, tc.in)
				}
			}
		})
	}
	if got := ID(strings.Repeat("x", 300), 200); got != strings.Repeat("x", 200)+"…" {
		t.Errorf("a long identifier: got %d bytes, want 200 characters and …", len(got))
	}
}

// TestJSONEscapesInvisibleCharactersInsideStringsLosslessly: the NDJSON
// outputs' rule. Every character ID escapes becomes a \u escape inside a
// JSON string, nothing else changes, and decoding the result gives the
// value encoding/json was given.
func TestJSONEscapesInvisibleCharactersInsideStringsLosslessly(t *testing.T) {
	cases := []struct {
		name, value, want string
	}{
		{"plain text is unchanged", "alice <sip:a@b>", `"alice <sip:a@b>"`},
		{"bidi override is escaped", "a\u202eb", `"a\u202eb"`},
		{"DEL and C1 are escaped", "a\x7fb\u0085c", `"a\u007fb\u0085c"`},
		{"escape sequence keeps its escape", "\x1b[31mred", `"\u001b[31mred"`},
		{"zero-width space and no-break space are escaped", "a\u200bb\u00a0c", `"a\u200bb\u00a0c"`},
		{"fence code points are escaped", "\u27e6x\u27e7", `"\u27e6x\u27e7"`},
		{"a quote and a backslash stay escaped", `a"b\c`, `"a\"b\\c"`},
		{"non-ASCII letters stay literal", "José 東京", `"José 東京"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			e := json.NewEncoder(&b)
			e.SetEscapeHTML(false)
			if err := e.Encode(map[string]string{"k": tc.value}); err != nil {
				t.Fatal(err)
			}
			enc := []byte(strings.TrimSuffix(b.String(), "\n"))
			got := string(JSON(nil, enc))
			if want := `{"k":` + tc.want + `}`; got != want {
				t.Fatalf("JSON(%s) = %s, want %s", enc, got, want)
			}
			var back map[string]string
			if err := json.Unmarshal([]byte(got), &back); err != nil {
				t.Fatal(err)
			}
			if back["k"] != tc.value {
				t.Fatalf("decoded %q, want %q", back["k"], tc.value)
			}
			for _, r := range got {
				if IsInvisible(r) {
					t.Fatalf("output holds invisible %U", r)
				}
			}
		})
	}
}

// FuzzJSON: for any value, textsafe.JSON over encoding/json's encoding
// decodes to what encoding/json's own encoding decodes to (nothing lost),
// and the text holds no invisible character and is valid JSON.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "a\u202eb", "\x1b[31m", "\x7f\u0085\u00a0", "\u27e6x\u27e7", `"\`, "\xff\xfe", "😀\u200d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if err := e.Encode([]string{s}); err != nil {
			t.Fatal(err)
		}
		enc := []byte(b.String())
		out := JSON(nil, enc)
		var want, got []string
		if err := json.Unmarshal(enc, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("JSON(%q) = %q is not JSON: %v", enc, out, err)
		}
		if len(got) != 1 || got[0] != want[0] {
			t.Fatalf("decoded %q, want %q", got, want)
		}
		if !utf8.Valid(out) {
			t.Fatalf("output is not UTF-8: %q", out)
		}
		for _, r := range string(out[:len(out)-1]) {
			if IsInvisible(r) {
				t.Fatalf("output holds invisible %U: %q", r, out)
			}
		}
	})
}

// jsonByteByByte is JSON as it was written before it copied plain runs
// whole: one byte at a time.
func jsonByteByByte(dst, src []byte) []byte { return appendJSON(dst, src, false) }

// FuzzJSONEqualsByteByByte: on any bytes, JSON or not (a quote or a
// backslash anywhere, controls, DEL, bad UTF-8, a trailing backslash),
// JSON writes what the byte-at-a-time walk writes; and when JSONUnchanged
// says so, that walk writes the bytes and a line break after them as they
// are.
func FuzzJSONEqualsByteByByte(f *testing.F) {
	for _, s := range []string{"", `{"a":"b\"c\\","d":1}`, "{\"x\":\"\x7f\x01\u202e\xff\"}\n", `"\`, `ab"cd\"ef\`, "\"\u2028 \U0001F600\u200d\"", "plain \t\n outside", `{"a":"b\"c\\"}`, `{"a":"b\"}`, `x"\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		want := jsonByteByByte([]byte("keep"), src)
		if got := JSON([]byte("keep"), src); !bytes.Equal(got, want) {
			t.Fatalf("JSON(%q) = %q, want %q", src, got, want)
		}
		if JSONUnchanged(src) {
			line := append(append([]byte(nil), src...), '\n')
			if got := jsonByteByByte(nil, line); !bytes.Equal(got, line) {
				t.Fatalf("JSONUnchanged(%q) but JSON writes %q", src, got)
			}
		}
	})
}

// TestJSONUnchanged: printable ASCII ending outside a string is left as it
// is; a control, DEL, a byte from 0x80 or an open string is not.
func TestJSONUnchanged(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{"a":"b"}`, true},
		{`{"a":"b\"}"}`, true},
		{`{"a":"b\\"}`, true},
		{`{"a":"b\"}`, false},
		{`{"a":"b`, false},
		{"{\"a\":\"\x7f\"}", false},
		{"{\"a\":\"\x1b\"}", false},
		{"{\"a\":\"\u00e9\"}", false},
		{"{}\n", false},
		{"", true},
	} {
		if got := JSONUnchanged([]byte(c.in)); got != c.want {
			t.Errorf("JSONUnchanged(%q) = %v, want %v", c.in, got, c.want)
		}
		if c.want {
			if got := JSON(nil, []byte(c.in+"\n")); string(got) != c.in+"\n" {
				t.Errorf("JSON(%q) = %q, want it unchanged", c.in+"\n", got)
			}
		}
	}
}
