package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func sortStrings(s []string) { sort.Strings(s) }

// ValidateArgs checks tool arguments against an input schema: the arguments
// are an object, required properties are present, a closed object has no
// member it does not name, and every value has its property's type
// (integers have no fraction), enum and bounds. A violation is an
// invalid-params error naming the argument (an unknown one with the valid
// names).
func ValidateArgs(s *Schema, args json.RawMessage) error {
	return validator{}.args(s, args)
}

// validator carries what a refusal names beyond the schema: the closest
// valid name to a misspelt one, and the row ceiling a clamped limit meets.
type validator struct {
	// suggest returns the candidate closest to word, or "" (the host's,
	// through [RegistryOptions]); nil suggests nothing.
	suggest func(word string, candidates []string) string
	// maxRows is --mcp-max-rows, named in a limit's valid range.
	maxRows int
}

func (vd validator) args(s *Schema, args json.RawMessage) error {
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
	return vd.value(s, v, "")
}

func validateValue(s *Schema, v any, path string) error { return validator{}.value(s, v, path) }

// unknown refuses a member a closed object does not name, with the valid
// names and the closest one.
func (vd validator) unknown(s *Schema, path, k string) error {
	valid := s.Names()
	what := "argument"
	if path != "" {
		what = "member of " + `"` + path + `"`
	}
	if len(valid) == 0 {
		return InvalidParams("unknown %s %q: it takes none", what, join(path, k))
	}
	hint := ""
	if vd.suggest != nil {
		if near := vd.suggest(k, valid); near != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", near)
		}
	}
	return InvalidParams("unknown %s %q%s; valid: %s", what, join(path, k), hint, strings.Join(valid, ", "))
}

// bounds refuses a number outside [minimum, maximum], naming the range. A
// row limit's range ends at --mcp-max-rows, above which it is clamped.
func (vd validator) bounds(s *Schema, n json.Number, name string) error {
	if s.Minimum == "" && s.Maximum == "" {
		return nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if s.Minimum != "" {
		lo, _ = strconv.ParseFloat(s.Minimum, 64)
	}
	if s.Maximum != "" {
		hi, _ = strconv.ParseFloat(s.Maximum, 64)
	}
	if f >= lo && f <= hi {
		return nil
	}
	var valid string
	switch {
	case s.clampRows && vd.maxRows > 0:
		valid = fmt.Sprintf("%s to %d (--mcp-max-rows; a larger one is clamped to it)", s.Minimum, vd.maxRows)
	case s.Minimum != "" && s.Maximum != "":
		valid = s.Minimum + " to " + s.Maximum
	case s.Minimum != "":
		valid = "at least " + s.Minimum
	default:
		valid = "at most " + s.Maximum
	}
	return InvalidParams("%s: got %s; valid: %s", name, n, valid)
}

func (vd validator) value(s *Schema, v any, path string) error {
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
	case json.Number:
		if err := vd.bounds(s, val, name); err != nil {
			return err
		}
	case map[string]any:
		if s.AdditionalProperties != nil || s.Closed {
			keys := make([]string, 0, len(val))
			for k := range val {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if s.Property(k) != nil {
					continue
				}
				if s.AdditionalProperties == nil {
					return vd.unknown(s, path, k)
				}
				if err := vd.value(s.AdditionalProperties, val[k], join(path, k)); err != nil {
					return err
				}
			}
		}
		for _, r := range s.Required {
			if _, ok := val[r]; !ok {
				return Refuse(KindMissingArgument, join(path, r), "missing required argument %q", join(path, r))
			}
		}
		for _, p := range s.Properties {
			if pv, ok := val[p.Name]; ok {
				if err := vd.value(p.Schema, pv, join(path, p.Name)); err != nil {
					return err
				}
			}
		}
	case []any:
		if s.Items != nil {
			for i, e := range val {
				if err := vd.value(s.Items, e, path+"["+itoa(i)+"]"); err != nil {
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
