package vcon

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The vendored schema (schema/SOURCE.md: draft-ietf-vcon-vcon-core-04's
// JSON Schema, draft-07, syntax 0.4.0).
//
//go:embed schema/vcon_json_schema.json
var schemaJSON []byte

// SchemaPath is where the vendored schema lives in this repository.
const SchemaPath = "core/vcon/schema/vcon_json_schema.json"

// Limits of one validation: a hostile container cannot make it walk or
// report without bound.
const (
	// MaxErrors caps the errors a result lists; ErrorsTotal counts all.
	MaxErrors = 100
	// maxDepth caps the schema walk's nesting ($ref chains, nested
	// combinators); a document deeper than the schema describes is not
	// walked past the schema.
	maxDepth = 64
)

// Error is one way a document fails the schema.
type Error struct {
	// Path is the JSON Pointer (RFC 6901) of the failing value ("" is the
	// document itself).
	Path string `json:"path" desc:"JSON Pointer (RFC 6901) of the failing value; empty: the whole container"`
	// Keyword is the schema keyword that failed.
	Keyword string `json:"keyword" desc:"the schema keyword that failed (type, required, enum, format, anyOf, unsupported_keyword...)"`
	// SchemaPath is where the keyword sits in the schema.
	SchemaPath string `json:"schema_path" desc:"where that keyword sits in the schema, as a #/... pointer"`
	// Message says what is wrong.
	Message string `json:"message" desc:"what is wrong"`
}

// Result is a validation's verdict.
type Result struct {
	Valid bool
	// Errors are the first MaxErrors errors, in document order.
	Errors []Error
	// ErrorsTotal counts every error found.
	ErrorsTotal int
}

// Schema is a compiled draft-07 schema: the parsed document and the
// keywords outside the subset the validator walks.
type Schema struct {
	root        map[string]any
	id          string
	unsupported []Error
	patterns    map[string]*regexp.Regexp
}

// supported are the draft-07 keywords the validator walks (or, for the
// annotations, knows to carry no assertion). Anything else in a schema
// object is reported by Compile and makes every verdict invalid.
var supported = map[string]bool{
	// annotations: no assertion
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true,
	// assertions and applicators
	"type": true, "properties": true, "required": true, "items": true, "enum": true,
	"const": true, "format": true, "$ref": true, "definitions": true, "oneOf": true,
	"anyOf": true, "allOf": true, "not": true, "additionalProperties": true,
	"minItems": true, "maxItems": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "minLength": true,
	"maxLength": true, "pattern": true, "dependencies": true,
}

// formats are the format values the validator checks. Draft-07 lets a
// validator ignore a format it does not know; this one refuses to, so a
// schema naming another format is reported, not silently passed.
var formats = map[string]func(string) bool{
	"date-time": isDateTime,
	"uuid":      isUUID,
	"uri":       isURI,
}

var (
	vendoredOnce *Schema
	vendoredErr  error
)

func init() { vendoredOnce, vendoredErr = Compile(schemaJSON) }

// Vendored returns the compiled vendored schema.
func Vendored() (*Schema, error) { return vendoredOnce, vendoredErr }

// ID is the schema's $id.
func (s *Schema) ID() string { return s.id }

// Compile parses a draft-07 schema and records every keyword outside the
// walked subset, every format it cannot check and every pattern that does
// not compile.
func Compile(data []byte) (*Schema, error) {
	v, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("schema: not a JSON object")
	}
	s := &Schema{root: root, patterns: map[string]*regexp.Regexp{}}
	s.id, _ = root["$id"].(string)
	s.scan(root, "#", 0)
	return s, nil
}

// scan walks every schema object of the document (properties' values,
// definitions' values, items, combinator branches) and records what the
// validator cannot check.
func (s *Schema) scan(node any, at string, depth int) {
	if depth > maxDepth {
		s.unsupported = append(s.unsupported, Error{Keyword: "depth", SchemaPath: at, Message: "schema nested deeper than the validator walks"})
		return
	}
	m, ok := node.(map[string]any)
	if !ok {
		if _, isBool := node.(bool); !isBool {
			s.unsupported = append(s.unsupported, Error{Keyword: "schema", SchemaPath: at, Message: "a schema must be an object or a boolean"})
		}
		return
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		kat := at + "/" + escapePointer(k)
		if !supported[k] {
			s.unsupported = append(s.unsupported, Error{Keyword: k, SchemaPath: kat,
				Message: fmt.Sprintf("schema keyword %q is outside the draft-07 subset this validator walks: the verdict cannot be trusted", k)})
			continue
		}
		switch k {
		case "properties", "definitions":
			if sub, ok := v.(map[string]any); ok {
				for _, name := range sortedKeys(sub) {
					s.scan(sub[name], kat+"/"+escapePointer(name), depth+1)
				}
			}
		case "items":
			if _, isArr := v.([]any); isArr {
				s.unsupported = append(s.unsupported, Error{Keyword: "items", SchemaPath: kat, Message: "the array form of items is outside the walked subset"})
				continue
			}
			s.scan(v, kat, depth+1)
		case "additionalProperties", "not":
			s.scan(v, kat, depth+1)
		case "oneOf", "anyOf", "allOf":
			if arr, ok := v.([]any); ok {
				for i, b := range arr {
					s.scan(b, kat+"/"+strconv.Itoa(i), depth+1)
				}
			}
		case "dependencies":
			if sub, ok := v.(map[string]any); ok {
				for _, name := range sortedKeys(sub) {
					if _, isArr := sub[name].([]any); !isArr {
						s.scan(sub[name], kat+"/"+escapePointer(name), depth+1)
					}
				}
			}
		case "format":
			if f, _ := v.(string); formats[f] == nil {
				s.unsupported = append(s.unsupported, Error{Keyword: "format", SchemaPath: kat,
					Message: fmt.Sprintf("format %q is not one this validator checks", f)})
			}
		case "pattern":
			p, _ := v.(string)
			re, err := regexp.Compile(p)
			if err != nil {
				s.unsupported = append(s.unsupported, Error{Keyword: "pattern", SchemaPath: kat,
					Message: fmt.Sprintf("pattern does not compile: %v", err)})
				continue
			}
			s.patterns[p] = re
		case "$ref":
			if r, _ := v.(string); !strings.HasPrefix(r, "#") {
				s.unsupported = append(s.unsupported, Error{Keyword: "$ref", SchemaPath: kat,
					Message: fmt.Sprintf("$ref %q is not a local reference (#...)", r)})
			}
		}
	}
}

// Unsupported lists what Compile found outside the subset.
func (s *Schema) Unsupported() []Error { return append([]Error(nil), s.unsupported...) }

// ValidateJSON checks a JSON document (bytes) against the schema.
func (s *Schema) ValidateJSON(data []byte) (Result, error) {
	v, err := decode(data)
	if err != nil {
		return Result{}, err
	}
	return s.Validate(v), nil
}

// Validate checks a decoded document (numbers as json.Number or float64)
// against the schema. A schema with keywords outside the subset gives an
// invalid verdict naming them, whatever the document.
func (s *Schema) Validate(doc any) Result {
	w := &walker{s: s}
	for _, e := range s.unsupported {
		w.add(e)
	}
	w.walk(s.root, "#", doc, "", 0)
	return Result{Valid: w.total == 0, Errors: w.errs, ErrorsTotal: w.total}
}

type walker struct {
	s     *Schema
	errs  []Error
	total int
}

func (w *walker) add(e Error) {
	w.total++
	if len(w.errs) < MaxErrors {
		w.errs = append(w.errs, e)
	}
}

// sub runs a walk whose errors are only counted (a combinator's branch).
func (w *walker) sub(schema any, at string, v any, path string, depth int) int {
	t := &walker{s: w.s}
	t.walk(schema, at, v, path, depth)
	return t.total
}

func (w *walker) walk(schema any, at string, v any, path string, depth int) {
	if depth > maxDepth {
		w.add(Error{Path: path, Keyword: "$ref", SchemaPath: at, Message: "schema references nest deeper than the validator walks"})
		return
	}
	switch sc := schema.(type) {
	case bool:
		if !sc {
			w.add(Error{Path: path, Keyword: "false", SchemaPath: at, Message: "no value is allowed here"})
		}
		return
	case map[string]any:
		w.object(sc, at, v, path, depth)
	}
}

func (w *walker) object(sc map[string]any, at string, v any, path string, depth int) {
	fail := func(kw, format string, a ...any) {
		w.add(Error{Path: path, Keyword: kw, SchemaPath: at + "/" + kw, Message: fmt.Sprintf(format, a...)})
	}
	if r, ok := sc["$ref"].(string); ok {
		// Draft-07: a $ref's siblings are ignored.
		target, tat, err := w.s.resolve(r)
		if err != nil {
			fail("$ref", "%v", err)
			return
		}
		w.walk(target, tat, v, path, depth+1)
		return
	}
	if t, ok := sc["type"]; ok && !typeMatches(t, v) {
		fail("type", "want %s, got %s", typeNames(t), jsonType(v))
		return
	}
	if e, ok := sc["enum"].([]any); ok {
		found := false
		for _, x := range e {
			if equal(x, v) {
				found = true
				break
			}
		}
		if !found {
			fail("enum", "%s is not one of %s", short(v), short(e))
		}
	}
	if c, ok := sc["const"]; ok && !equal(c, v) {
		fail("const", "want %s, got %s", short(c), short(v))
	}
	if f, ok := sc["format"].(string); ok {
		if str, isStr := v.(string); isStr {
			if chk := formats[f]; chk != nil && !chk(str) {
				fail("format", "%s is not a valid %s", short(str), f)
			}
		}
	}
	if str, ok := v.(string); ok {
		n := int64(len([]rune(str)))
		if m, ok := intOf(sc["minLength"]); ok && n < m {
			fail("minLength", "length %d is below %d", n, m)
		}
		if m, ok := intOf(sc["maxLength"]); ok && n > m {
			fail("maxLength", "length %d is above %d", n, m)
		}
		if p, ok := sc["pattern"].(string); ok {
			if re := w.s.patterns[p]; re != nil && !re.MatchString(str) {
				fail("pattern", "%s does not match %q", short(str), p)
			}
		}
	}
	if n, ok := numOf(v); ok {
		if m, ok := numOf(sc["minimum"]); ok && n.Cmp(m) < 0 {
			fail("minimum", "%s is below the minimum %s", n.Text('g', -1), m.Text('g', -1))
		}
		if m, ok := numOf(sc["maximum"]); ok && n.Cmp(m) > 0 {
			fail("maximum", "%s is above the maximum %s", n.Text('g', -1), m.Text('g', -1))
		}
		if m, ok := numOf(sc["exclusiveMinimum"]); ok && n.Cmp(m) <= 0 {
			fail("exclusiveMinimum", "%s is not above %s", n.Text('g', -1), m.Text('g', -1))
		}
		if m, ok := numOf(sc["exclusiveMaximum"]); ok && n.Cmp(m) >= 0 {
			fail("exclusiveMaximum", "%s is not below %s", n.Text('g', -1), m.Text('g', -1))
		}
	}
	if arr, ok := v.([]any); ok {
		if m, ok := intOf(sc["minItems"]); ok && int64(len(arr)) < m {
			fail("minItems", "%d items, fewer than %d", len(arr), m)
		}
		if m, ok := intOf(sc["maxItems"]); ok && int64(len(arr)) > m {
			fail("maxItems", "%d items, more than %d", len(arr), m)
		}
		if items, ok := sc["items"]; ok {
			if _, isArr := items.([]any); !isArr {
				for i, x := range arr {
					w.walk(items, at+"/items", x, path+"/"+strconv.Itoa(i), depth+1)
				}
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		if req, ok := sc["required"].([]any); ok {
			for _, r := range req {
				name, _ := r.(string)
				if _, has := obj[name]; !has {
					w.add(Error{Path: path, Keyword: "required", SchemaPath: at + "/required",
						Message: fmt.Sprintf("missing required member %q", name)})
				}
			}
		}
		props, _ := sc["properties"].(map[string]any)
		for _, k := range sortedKeys(obj) {
			kpath := path + "/" + escapePointer(k)
			if ps, ok := props[k]; ok {
				w.walk(ps, at+"/properties/"+escapePointer(k), obj[k], kpath, depth+1)
				continue
			}
			if ap, ok := sc["additionalProperties"]; ok {
				if b, isBool := ap.(bool); isBool && !b {
					w.add(Error{Path: kpath, Keyword: "additionalProperties", SchemaPath: at + "/additionalProperties",
						Message: fmt.Sprintf("member %q is not allowed here", k)})
					continue
				}
				w.walk(ap, at+"/additionalProperties", obj[k], kpath, depth+1)
			}
		}
		if deps, ok := sc["dependencies"].(map[string]any); ok {
			for _, k := range sortedKeys(deps) {
				if _, has := obj[k]; !has {
					continue
				}
				if need, isArr := deps[k].([]any); isArr {
					for _, n := range need {
						name, _ := n.(string)
						if _, has := obj[name]; !has {
							w.add(Error{Path: path, Keyword: "dependencies", SchemaPath: at + "/dependencies/" + escapePointer(k),
								Message: fmt.Sprintf("member %q requires member %q", k, name)})
						}
					}
					continue
				}
				w.walk(deps[k], at+"/dependencies/"+escapePointer(k), v, path, depth+1)
			}
		}
	}
	if all, ok := sc["allOf"].([]any); ok {
		for i, b := range all {
			w.walk(b, at+"/allOf/"+strconv.Itoa(i), v, path, depth+1)
		}
	}
	if anyOf, ok := sc["anyOf"].([]any); ok {
		matched := false
		for i, b := range anyOf {
			if w.sub(b, at+"/anyOf/"+strconv.Itoa(i), v, path, depth+1) == 0 {
				matched = true
				break
			}
		}
		if !matched {
			fail("anyOf", "%s matches none of the %d anyOf branches", short(v), len(anyOf))
		}
	}
	if oneOf, ok := sc["oneOf"].([]any); ok {
		n := 0
		for i, b := range oneOf {
			if w.sub(b, at+"/oneOf/"+strconv.Itoa(i), v, path, depth+1) == 0 {
				n++
			}
		}
		if n != 1 {
			fail("oneOf", "%s matches %d of the %d oneOf branches; exactly one must match", short(v), n, len(oneOf))
		}
	}
	if not, ok := sc["not"]; ok && w.sub(not, at+"/not", v, path, depth+1) == 0 {
		fail("not", "%s matches the schema under not", short(v))
	}
}

// resolve follows a local $ref ("#", "#/definitions/Party").
func (s *Schema) resolve(ref string) (any, string, error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, "", fmt.Errorf("$ref %q is not a local reference", ref)
	}
	var cur any = s.root
	frag := strings.TrimPrefix(ref, "#")
	if frag == "" {
		return cur, "#", nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("$ref %q does not resolve", ref)
		}
		if cur, ok = m[tok]; !ok {
			return nil, "", fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return cur, ref, nil
}

// decode reads JSON with numbers kept as json.Number (an integer stays an
// integer however large) and refuses trailing data.
func decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number, float64, int, int64:
		if n, ok := numOf(x); ok && n.IsInt() {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func typeMatches(t any, v any) bool {
	got := jsonType(v)
	one := func(name string) bool { return name == got || name == "number" && got == "integer" }
	switch x := t.(type) {
	case string:
		return one(x)
	case []any:
		for _, e := range x {
			if s, _ := e.(string); one(s) {
				return true
			}
		}
	}
	return false
}

func typeNames(t any) string {
	switch x := t.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, _ := e.(string)
			parts = append(parts, s)
		}
		return strings.Join(parts, " or ")
	}
	return fmt.Sprint(t)
}

// numOf reads a JSON number exactly (big.Float: an integer of any size, a
// fraction) so 1.0 is an integer (draft-07 §6.1.1 of the validation spec:
// a number with a zero fractional part is an integer).
func numOf(v any) (*big.Float, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = string(x)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case int:
		s = strconv.Itoa(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	default:
		return nil, false
	}
	f, _, err := big.ParseFloat(s, 10, 256, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	return f, true
}

func intOf(v any) (int64, bool) {
	f, ok := numOf(v)
	if !ok || !f.IsInt() {
		return 0, false
	}
	i, _ := f.Int64()
	return i, true
}

// equal compares two decoded JSON values (numbers by value).
func equal(a, b any) bool {
	if na, ok := numOf(a); ok {
		nb, ok := numOf(b)
		return ok && na.Cmp(nb) == 0
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, has := y[k]
			if !has || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return a == b
}

// short renders a value for a message, cut to 64 bytes.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(b) > 64 {
		return string(b[:61]) + "..."
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// isDateTime: RFC 3339 §5.6 date-time (draft-07's "date-time"), "T" and
// "Z" in either case.
func isDateTime(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	return err == nil
}

// uuidRE is RFC 9562 §4's textual form: 8-4-4-4-12 hex digits.
var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func isUUID(s string) bool { return uuidRE.MatchString(s) }

// isURI: an absolute URI (RFC 3986 §4.3: a scheme).
func isURI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != ""
}
