package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// AlwaysKeptField survives every projection: every follow-up tool takes a
// Call-ID, and a row an agent cannot address is a row it can do nothing with.
const AlwaysKeptField = "call_id"

// ValidateFields checks a fields projection against the valid row field
// names. An unknown name is an invalid-params error naming the valid fields:
// a silently missing field would read as "no such data".
func ValidateFields(fields, valid []string) error {
	for _, f := range fields {
		if !slices.Contains(valid, f) {
			return Refuse(KindInvalidArgument, "fields", "unknown field %q in fields; valid fields: %s", f, strings.Join(valid, ", ")).Accepting(valid)
		}
	}
	return nil
}

// Project keeps only the named fields (and call_id) in every object of the
// array rowsKey of a serialized page. It runs on the serialized JSON, so a
// field absent from a row stays absent and never reappears as null; key
// order is preserved; the envelope (every other top-level member) is never
// projected. An empty fields list returns page unchanged.
func Project(page []byte, rowsKey string, fields []string) ([]byte, error) {
	if len(fields) == 0 {
		return page, nil
	}
	keep := map[string]bool{AlwaysKeptField: true}
	for _, f := range fields {
		keep[f] = true
	}
	top, err := parseObject(page)
	if err != nil {
		return nil, fmt.Errorf("projecting fields: %w", err)
	}
	for i, m := range top {
		if m.key != rowsKey {
			continue
		}
		var rows []json.RawMessage
		if err := json.Unmarshal(m.val, &rows); err != nil {
			return nil, fmt.Errorf("projecting fields: %s is not an array: %w", rowsKey, err)
		}
		var b bytes.Buffer
		b.WriteByte('[')
		for j, r := range rows {
			if j > 0 {
				b.WriteByte(',')
			}
			obj, err := parseObject(r)
			if err != nil {
				return nil, fmt.Errorf("projecting fields: row %d: %w", j, err)
			}
			kept := obj[:0]
			for _, kv := range obj {
				if keep[kv.key] {
					kept = append(kept, kv)
				}
			}
			writeObject(&b, kept)
		}
		b.WriteByte(']')
		top[i].val = b.Bytes()
	}
	var out bytes.Buffer
	writeObject(&out, top)
	return out.Bytes(), nil
}

type member struct {
	key string
	val json.RawMessage
}

// parseObject splits a JSON object into its members, in order.
func parseObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out []member
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key: k, val: v})
	}
	return out, nil
}

func writeObject(b *bytes.Buffer, ms []member) {
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(m.key)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
}
