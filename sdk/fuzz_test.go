package sdk

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "2024-05-01T10:00:00.000000000Z|abc@host", "2024-05-01T10:00:00Z",
		"2024-05-01T10:00:00.000000000Z|k#0000000007", "2024-05-01T10:00:00Z|k#7", "12", "|", "x|y#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err != nil {
			return
		}
		if c.HasIndex {
			if c.Index < 0 || !strings.Contains(s, "#") {
				t.Fatalf("index %d from %q", c.Index, s)
			}
			// A well-formed index cursor rebuilds to a cursor that parses back.
			back, err := ParseCursor(IndexCursor(c.Time, c.Key, c.Index))
			if err != nil || back.Index != c.Index || back.Key != c.Key {
				t.Fatalf("round trip of %q: %+v, %v", s, back, err)
			}
		}
	})
}

func FuzzFence(f *testing.F) {
	for _, s := range []string{"Alice", "a⟦b⟧c", "\u202eevil\u2066", strings.Repeat("é", 300), "x\r\ny\tz", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, got := range []string{Fence(s), FenceBody(s, 64)} {
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8 out of %q", s)
			}
			inner := strings.TrimSuffix(strings.TrimPrefix(got, FenceOpen), FenceClose)
			if strings.ContainsAny(inner, "⟦⟧\r\x00\u202e\u2066\u200f\u061c") {
				t.Fatalf("fence payload keeps a forbidden rune: %q", inner)
			}
			if len(strings.TrimSuffix(inner, TruncatedMarker)) > MaxFieldBytes {
				t.Fatalf("payload of %d bytes", len(inner))
			}
		}
		if strings.ContainsAny(strings.TrimSuffix(strings.TrimPrefix(Fence(s), FenceOpen), FenceClose), "\n\t") {
			t.Fatalf("a field kept a line break: %q", Fence(s))
		}
	})
}

func FuzzProject(f *testing.F) {
	f.Add([]byte(`{"rows":[{"call_id":"a","x":1,"y":null},{"call_id":"b"}],"returned":2,"next_cursor":null}`), "x")
	f.Add([]byte(`{"rows":[]}`), "y")
	f.Add([]byte(`[1,2]`), "x")
	f.Add([]byte(`{"rows":[1]}`), "x")
	f.Fuzz(func(t *testing.T, page []byte, field string) {
		out, err := Project(page, "rows", []string{field})
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q: %q", page, out)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) != nil {
			t.Fatalf("not an object: %q", out)
		}
		var rows []map[string]json.RawMessage
		if json.Unmarshal(m["rows"], &rows) == nil {
			for _, r := range rows {
				for k := range r {
					if k != field && k != AlwaysKeptField {
						t.Fatalf("kept %q projecting %q", k, field)
					}
				}
			}
		}
	})
}

func FuzzValidateArgs(f *testing.F) {
	tool := echoTool("echo", ro)
	for _, s := range []string{`{}`, `{"query":"x"}`, `{"query":"x","limit":2.5}`, `{"query":"x","fields":["a",1]}`,
		`null`, `[]`, `{"query":{"a":1}}`, `{"query":"x","format":"xml"}`, `{"query":"x","limit":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		err := ValidateArgs(tool.InputSchema(), args)
		if err == nil {
			return
		}
		if e := AsError(err); e.Code != CodeInvalidParams {
			t.Fatalf("code %d for %q", e.Code, args)
		}
	})
}

func FuzzParseWriteVerbs(f *testing.F) {
	f.Add([]byte(WriteVerbsBegin + "\n| Tool | destructiveHint | idempotentHint |\n|---|---|---|\n| `a` | true | false |\n" + WriteVerbsEnd))
	f.Add([]byte(WriteVerbsBegin + WriteVerbsEnd))
	f.Add([]byte("| x |"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		verbs, err := ParseWriteVerbs(doc)
		if err == nil && verbs == nil {
			t.Fatal("nil table without an error")
		}
	})
}
