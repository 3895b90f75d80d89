package sdk

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
)

func sortStrings(s []string) { sort.Strings(s) }

// ValidateArgs checks tool arguments against an input schema: the arguments
// are an object, required properties are present, and every value has its
// property's type (integers have no fraction) and enum. A violation is an
// invalid-params error naming the argument.
func ValidateArgs(s *Schema, args json.RawMessage) error {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return InvalidParams("invalid arguments: %v", err)
	}
	return validateValue(s, v, "")
}

func validateValue(s *Schema, v any, path string) error {
	name := path
	if name == "" {
		name = "arguments"
	} else {
		name = "argument " + `"` + path + `"`
	}
	if len(s.Type) > 0 {
		got := jsonType(v)
		ok := false
		for _, t := range s.Type {
			if t == got || (t == "number" && got == "integer") {
				ok = true
			}
		}
		if !ok {
			if got == "number" && slices.Contains(s.Type, "integer") {
				return Refuse(KindInvalidArgument, path, "%s: want an integer, got %v", name, v)
			}
			return Refuse(KindInvalidArgument, path, "%s: want %s, got %s", name, strings.Join(s.Type, " or "), got)
		}
	}
	if len(s.Enum) > 0 {
		if str, isStr := v.(string); isStr && !slices.Contains(s.Enum, str) {
			return Refuse(KindInvalidArgument, path, "%s: %q is not one of %s", name, str, strings.Join(s.Enum, ", ")).Accepting(s.Enum)
		}
	}
	switch val := v.(type) {
	case map[string]any:
		for _, r := range s.Required {
			if _, ok := val[r]; !ok {
				return Refuse(KindMissingArgument, join(path, r), "missing required argument %q", join(path, r))
			}
		}
		for _, p := range s.Properties {
			if pv, ok := val[p.Name]; ok {
				if err := validateValue(p.Schema, pv, join(path, p.Name)); err != nil {
					return err
				}
			}
		}
		if s.AdditionalProperties != nil {
			keys := make([]string, 0, len(val))
			for k := range val {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if s.Property(k) == nil {
					if err := validateValue(s.AdditionalProperties, val[k], join(path, k)); err != nil {
						return err
					}
				}
			}
		}
	case []any:
		if s.Items != nil {
			for i, e := range val {
				if err := validateValue(s.Items, e, path+"["+itoa(i)+"]"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func itoa(i int) string { return jsonNumber(i) }

func jsonNumber(i int) string { b, _ := json.Marshal(i); return string(b) }

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		if f, err := x.Float64(); err == nil && f == float64(int64(f)) && !strings.ContainsAny(x.String(), ".eE") {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}
