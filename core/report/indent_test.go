package report

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestAppendIndentedWritesWhatJSONIndentWrites holds the writer's own
// indentation to encoding/json's, byte for byte, on values whose strings
// hold every character that means something outside a string.
func TestAppendIndentedWritesWhatJSONIndentWrites(t *testing.T) {
	type inner struct {
		A []int           `json:"a"`
		E []string        `json:"e"`
		M map[string]any  `json:"m"`
		O struct{}        `json:"o"`
		R json.RawMessage `json:"r"`
	}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"scalar string", "plain"},
		{"scalar number", 12.5},
		{"null", nil},
		{"empty object and array", map[string]any{"o": map[string]any{}, "a": []int{}}},
		{"strings holding punctuation", []string{`{"a":[1,2]}`, `,:[]{}`, `back\slash`, `quote"inside`, `ends with backslash\`, "tab\tnewline\n", "ünïcødé ☎", "<&>"}},
		{"nested", map[string]any{"x": []any{1, []any{}, map[string]any{"y": []any{map[string]any{}, "z"}}, true, false, nil}}},
		{"struct with raw message", inner{A: []int{1, 2, 3}, E: []string{}, M: map[string]any{"k": "v,w:x"}, R: json.RawMessage(`{ "spaced" : [ 1 , 2 ] }`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var compact bytes.Buffer
			enc := json.NewEncoder(&compact)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(tc.v); err != nil {
				t.Fatal(err)
			}
			for _, prefix := range []string{"", "  ", "    "} {
				var want bytes.Buffer
				if err := json.Indent(&want, bytes.TrimSuffix(compact.Bytes(), []byte("\n")), prefix, "  "); err != nil {
					t.Fatal(err)
				}
				got := appendIndented(nil, compact.Bytes(), prefix, "  ")
				if !bytes.Equal(got, want.Bytes()) {
					t.Errorf("prefix %q:\ngot  %s\nwant %s", prefix, got, want.Bytes())
				}
			}
		})
	}
}

// TestAppendIndentedOnTheRunDocument checks the same on a whole --json-run
// document written by the old and the new writer: indenting the compact
// form gives the document byte for byte.
func TestAppendIndentedOnTheRunDocument(t *testing.T) {
	doc := map[string]any{
		"schema_version": 1,
		"run":            map[string]any{"name": "a \"quoted\" name", "frames": 10, "inputs": []any{map[string]any{"path": `C:\x`}}},
		"dialogs":        []any{map[string]any{"call_id": "abc@h", "messages": []any{}, "from": "<sip:a@b>;tag=1"}},
	}
	want, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	compact, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendIndented(nil, compact, "", "  "); !bytes.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// FuzzAppendIndented holds appendIndented to json.Indent on any valid JSON
// value, in its compact form as encoding/json writes it (its strings hold
// whatever the fuzzer puts in them, escaped backslashes and quotes among
// them), and on arbitrary strings encoded as a key and as a value.
func FuzzAppendIndented(f *testing.F) {
	f.Add([]byte(`{"a":["x\\",{"b\"":"\\\\\"y"}],"c":[],"d":{}}`), `quote"and\backslash\`)
	f.Add([]byte(`[1,-2.5e3,true,null,"\u00e9\n"]`), "")
	f.Fuzz(func(t *testing.T, doc []byte, s string) {
		check := func(compact []byte) {
			for _, prefix := range []string{"", "    "} {
				var want bytes.Buffer
				if err := json.Indent(&want, compact, prefix, "  "); err != nil {
					t.Fatal(err)
				}
				if got := appendIndented(nil, compact, prefix, "  "); !bytes.Equal(got, want.Bytes()) {
					t.Fatalf("prefix %q, %s:\ngot  %s\nwant %s", prefix, compact, got, want.Bytes())
				}
			}
		}
		if json.Valid(doc) {
			var compact bytes.Buffer
			if err := json.Compact(&compact, doc); err != nil {
				t.Fatal(err)
			}
			check(compact.Bytes())
		}
		b, err := json.Marshal(map[string]any{s: []any{s, map[string]string{"k": s}}})
		if err != nil {
			t.Fatal(err)
		}
		check(b)
	})
}
