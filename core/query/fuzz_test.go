package query

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzCursor feeds arbitrary text to both cursor parsers: they never
// panic, and a cursor they accept renders back to a cursor that parses to
// the same position.
func FuzzCursor(f *testing.F) {
	at := time.Date(2024, 5, 1, 10, 0, 0, 1500, time.UTC)
	for _, s := range []string{
		DialogCursor(at, "abc@pbx"), MessageCursor(at, "a|b#c", 12), DialogCursor(at, "x#0000000001"),
		"2024-05-01T10:00:00Z", "2024-05-01T12:00:00+02:00|x", "", "|", "#", "42", "2024-05-01T10:00:00Z|#",
		"2024-05-01T10:00:00Z|id#99999999999", "2024-05-01T10:00:00Z|id#-000000001", "9999-12-31T23:59:59.999999999Z|\x00\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseDialogCursor(s)
		if err == nil && c.HasCallID {
			back, err := ParseDialogCursor(DialogCursor(c.Time, c.CallID))
			if err != nil || !back.Time.Equal(c.Time) || back.CallID != c.CallID {
				t.Fatalf("dialog cursor %q: round trip gave %+v, %v", s, back, err)
			}
		}
		m, err := ParseMessageCursor(s)
		if err == nil && m.HasIndex {
			if m.Index < 0 {
				t.Fatalf("%q: negative index %d", s, m.Index)
			}
			back, err := ParseMessageCursor(MessageCursor(m.Time, m.CallID, m.Index))
			if err != nil || !back.Time.Equal(m.Time) || back.CallID != m.CallID || back.Index != m.Index || !back.HasIndex {
				t.Fatalf("message cursor %q: round trip gave %+v, %v", s, back, err)
			}
		}
	})
}

// FuzzSnippet searches arbitrary bodies: find and snippet never panic,
// and for valid UTF-8 the snippet of a body hit holds the match.
func FuzzSnippet(f *testing.F) {
	f.Add("v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\n", "c=in", 4096)
	f.Add(strings.Repeat("a", 10000)+"needle"+strings.Repeat("b", 10000), "NEEDLE", 64)
	f.Add("\n\n\n", "\n", 1)
	f.Add("é⟦x⟧é", "⟧", 3)
	f.Fuzz(func(t *testing.T, body, query string, max int) {
		if query == "" || len(query) > MaxQueryBytes || len(body) > 1<<16 {
			return
		}
		if max <= 0 || max > 1<<16 {
			max = 4096
		}
		m := fuzzMsg(body)
		if m == nil {
			return
		}
		part, at, _ := find(m, foldASCII(nil, query), nil)
		if part == "" {
			return
		}
		s := snippet(m, part, at, len(query), max)
		// Line ends are trimmed from a snippet's edges: a query of line
		// breaks is not looked for in it.
		if part != PartBody || !utf8.ValidString(string(m.Body)) || !utf8.ValidString(query) || max < 4*len(query) ||
			strings.ContainsAny(query, "\r\n") {
			return
		}
		if !strings.Contains(string(foldASCII(nil, s)), string(foldASCII(nil, query))) {
			t.Fatalf("snippet %q of body %q lacks %q (at %d, max %d)", s, m.Body, query, at, max)
		}
	})
}
