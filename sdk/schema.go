package sdk

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Schema is a JSON Schema node as sipnab advertises it. Its fields marshal in
// a fixed order so the bytes of tools/list are deterministic.
type Schema struct {
	// Type is one JSON type name, or several for a union (["string","null"]).
	Type []string
	// Description documents the property for the agent.
	Description string
	// Format is a JSON Schema format hint, e.g. "date-time".
	Format string
	// Enum lists the allowed string values.
	Enum []string
	// Properties of an object, in declaration order.
	Properties []Property
	// Required names the object properties that must be present.
	Required []string
	// Items is the schema of an array's elements.
	Items *Schema
	// AdditionalProperties is the schema of a map's values.
	AdditionalProperties *Schema
	// Defs holds named sub-schemas ($defs), in order.
	Defs []Property
	// OneOf, AnyOf and AllOf are schema combinators.
	OneOf, AnyOf, AllOf []*Schema
	// Default is the value an absent optional input takes, from the field's
	// default tag, as the per-bundle pages in docs/bundles print it. It may
	// be prose ("the oldest change", "--mcp-max-response-bytes").
	Default string
	// DefaultValue is Default as a JSON value of the property's type, sent
	// as "default" in tools/list; nil when the default is prose, not a
	// value (see [SchemaFor]).
	DefaultValue json.RawMessage
	// Minimum and Maximum bound a number (JSON Schema "minimum" and
	// "maximum", inclusive), as JSON number text; "" is unbounded.
	Minimum, Maximum string
	// Closed: an object that refuses members it does not name
	// ("additionalProperties": false). Every input object is closed: an
	// unknown argument is refused, never ignored.
	Closed bool
	// clampRows: a row count clamped to --mcp-max-rows rather than refused
	// above it (a top-level "limit", or a clamp:"rows" tag); it has no
	// static maximum, the ceiling being the server's.
	clampRows bool
	// open: an [Object], whose members are not named here. Its input
	// schema is a bare {"type":"object"}; its output schema adds
	// "additionalProperties": {} so a strict reader that closes every
	// object naming no additionalProperties still accepts its members.
	open, openOutput bool
}

// Property is one named member of Properties or Defs.
type Property struct {
	Name   string
	Schema *Schema
}

// MarshalJSON writes the schema with keys in a fixed order.
func (s *Schema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	key := func(k string) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
	}
	val := func(v any) error {
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(vb)
		return nil
	}
	switch len(s.Type) {
	case 0:
	case 1:
		key("type")
		_ = val(s.Type[0])
	default:
		key("type")
		_ = val(s.Type)
	}
	if s.Description != "" {
		key("description")
		_ = val(s.Description)
	}
	if s.Format != "" {
		key("format")
		_ = val(s.Format)
	}
	if len(s.Enum) > 0 {
		key("enum")
		_ = val(s.Enum)
	}
	if s.DefaultValue != nil {
		key("default")
		b.Write(s.DefaultValue)
	}
	if s.Minimum != "" {
		key("minimum")
		b.WriteString(s.Minimum)
	}
	if s.Maximum != "" {
		key("maximum")
		b.WriteString(s.Maximum)
	}
	if !s.open && (s.Properties != nil || s.isObject() && s.AdditionalProperties == nil) {
		key("properties")
		if err := writeProps(&b, s.Properties); err != nil {
			return nil, err
		}
	}
	if len(s.Required) > 0 {
		key("required")
		_ = val(s.Required)
	}
	if s.Items != nil {
		key("items")
		if err := val(s.Items); err != nil {
			return nil, err
		}
	}
	if s.AdditionalProperties != nil {
		key("additionalProperties")
		if err := val(s.AdditionalProperties); err != nil {
			return nil, err
		}
	} else if s.Closed {
		key("additionalProperties")
		b.WriteString("false")
	} else if s.openOutput {
		key("additionalProperties")
		b.WriteString("{}")
	}
	if len(s.Defs) > 0 {
		key("$defs")
		if err := writeProps(&b, s.Defs); err != nil {
			return nil, err
		}
	}
	for _, c := range []struct {
		name string
		list []*Schema
	}{{"oneOf", s.OneOf}, {"anyOf", s.AnyOf}, {"allOf", s.AllOf}} {
		if len(c.list) > 0 {
			key(c.name)
			if err := val(c.list); err != nil {
				return nil, err
			}
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeProps(b *bytes.Buffer, props []Property) error {
	b.WriteByte('{')
	for i, p := range props {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(p.Name)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(p.Schema)
		if err != nil {
			return err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return nil
}

func (s *Schema) isObject() bool { return len(s.Type) == 1 && s.Type[0] == "object" }

// Property returns the named property's schema, or nil.
func (s *Schema) Property(name string) *Schema {
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

// Names returns the property names of an object schema, in order.
func (s *Schema) Names() []string {
	out := make([]string, len(s.Properties))
	for i, p := range s.Properties {
		out[i] = p.Name
	}
	return out
}

// SchemaFor generates the JSON schema of a Go type as an input (arguments)
// schema. Struct fields take their names from the json tag, their
// description from the desc tag, their allowed values from the enum tag
// (values separated by "|"), their inclusive bounds from the min and max
// tags and their documented default from the default tag (sent as
// "default" only when it is a value, see [Schema.DefaultValue]). Every
// object is closed ("additionalProperties": false). A field without omitempty or omitzero
// is required. A pointer field without omitempty is nullable: its type is a
// union with "null" (input schemas collapse the union of an optional field,
// see [CollapseOptionalUnions]); a pointer with omitempty is absent when
// nil, so its type is plain. time.Time is a date-time string; a type that
// encodes itself as text (encoding.TextMarshaler with a value receiver, such
// as netip.Addr and netip.AddrPort) is a string, as encoding/json writes it.
// Interfaces (any), channels, functions, recursive types and any other type
// with its own MarshalJSON are refused: a bare `true` schema fails strict
// clients, and a schema guessed from the Go fields would not describe what
// the custom encoding writes.
func SchemaFor(t reflect.Type) (*Schema, error) { return schemaFor(t, false) }

// OutputSchemaFor generates the JSON schema of a tool's answer type: the
// rules of [SchemaFor], and every slice or map that encoding/json may write
// as null is nullable. A nil slice or map is written as null unless its
// field is omitempty or omitzero (then it is absent), so such a field, and a
// slice or map nested in an array or a map, is typed ["array","null"] or
// ["object","null"]: an output schema describes the bytes the answer
// carries, and keeps its unions (mcp-surface §2.9).
//
// A slice or map field of the answer type itself (top level, embedded
// structs flattened by value) tagged nonnull:"true" is never null: the
// tool's answer is serialized with a nil one written empty ([] or {}), so
// its type is plain. A list an agent reads as "looked, found none" (a page's
// rows, ami_cleartext) is declared so. Below the top level the tag is
// ignored and the union stays: the answer's nested values are not copied.
func OutputSchemaFor(t reflect.Type) (*Schema, error) { return schemaFor(t, true) }

func schemaFor(t reflect.Type, output bool) (*Schema, error) {
	g := &schemaGen{seen: map[reflect.Type]bool{}, output: output}
	s, err := g.gen(t, "")
	if err != nil {
		return nil, err
	}
	if !s.isObject() {
		return nil, fmt.Errorf("type %s is not a struct: a tool's input and output are JSON objects", t)
	}
	return s, nil
}

type schemaGen struct {
	seen map[reflect.Type]bool
	// output: slices and maps without omitempty are nullable
	// (OutputSchemaFor).
	output bool
}

// Object is a JSON object of any members: an argument or an answer member
// that carries a document in a schema of its own (a vCon container,
// draft-ietf-vcon-vcon-core), which the tool checks itself. Its schema is
// an open {"type":"object"}: the generic argument check looks at its type
// only, never at its members.
type Object map[string]any

var (
	objectType        = reflect.TypeFor[Object]()
	timeType          = reflect.TypeFor[time.Time]()
	rawMsgType        = reflect.TypeFor[json.RawMessage]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func (g *schemaGen) gen(t reflect.Type, path string) (*Schema, error) {
	where := path
	if where == "" {
		where = t.String()
	}
	switch {
	case t == timeType:
		return &Schema{Type: []string{"string"}, Format: "date-time"}, nil
	case t == objectType:
		if g.output {
			return &Schema{Type: []string{"object", "null"}, open: true, openOutput: true}, nil
		}
		return &Schema{Type: []string{"object"}, open: true}, nil
	case t == rawMsgType:
		return nil, fmt.Errorf("%s: json.RawMessage has no schema (a bare `true` schema fails strict clients); use a typed struct", where)
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface &&
		(t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType)):
		return nil, fmt.Errorf("%s: %s has its own MarshalJSON, so its schema cannot be derived from its fields", where, t)
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && t.Implements(textMarshalerType):
		// encoding/json writes a value-receiver TextMarshaler as a string
		// (netip.Addr, netip.AddrPort).
		return &Schema{Type: []string{"string"}}, nil
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(textMarshalerType):
		return nil, fmt.Errorf("%s: %s has a pointer-receiver MarshalText, which encoding/json uses only for addressable values; give it a value receiver or a plain type", where, t)
	}
	switch t.Kind() {
	case reflect.Pointer:
		s, err := g.gen(t.Elem(), path)
		if err != nil {
			return nil, err
		}
		if len(s.Type) == 1 {
			s.Type = []string{s.Type[0], "null"}
		}
		return s, nil
	case reflect.String:
		return &Schema{Type: []string{"string"}}, nil
	case reflect.Bool:
		return &Schema{Type: []string{"boolean"}}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &Schema{Type: []string{"integer"}}, nil
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: []string{"number"}}, nil
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			// base64, or null for a nil []byte ([N]byte is an array of
			// integers).
			if g.output {
				return &Schema{Type: []string{"string", "null"}}, nil
			}
			return &Schema{Type: []string{"string"}}, nil
		}
		items, err := g.gen(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		if g.output && t.Kind() == reflect.Slice {
			return &Schema{Type: []string{"array", "null"}, Items: items}, nil
		}
		return &Schema{Type: []string{"array"}, Items: items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%s: map keys must be strings", where)
		}
		vals, err := g.gen(t.Elem(), path+"{}")
		if err != nil {
			return nil, err
		}
		if g.output {
			return &Schema{Type: []string{"object", "null"}, AdditionalProperties: vals}, nil
		}
		return &Schema{Type: []string{"object"}, AdditionalProperties: vals}, nil
	case reflect.Struct:
		if g.seen[t] {
			return nil, fmt.Errorf("%s: recursive type %s", where, t)
		}
		g.seen[t] = true
		defer delete(g.seen, t)
		s := &Schema{Type: []string{"object"}, Properties: []Property{}, Closed: !g.output}
		if err := g.fields(t, path, s, path == ""); err != nil {
			return nil, err
		}
		return s, nil
	default:
		return nil, fmt.Errorf("%s: %s (%s) has no JSON schema; schemas may not contain any, channels or functions", where, t, t.Kind())
	}
}

// fields appends t's JSON fields to s, flattening embedded structs the way
// encoding/json does.
func (g *schemaGen) fields(t reflect.Type, path string, s *Schema, top bool) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft, byValue := f.Type, true
			if ft.Kind() == reflect.Pointer {
				ft, byValue = ft.Elem(), false
			}
			if ft.Kind() == reflect.Struct {
				if err := g.fields(ft, path, s, top && byValue); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fp := name
		if path != "" {
			fp = path + "." + name
		}
		ps, err := g.gen(f.Type, fp)
		if err != nil {
			return err
		}
		optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		nonNull := f.Tag.Get("nonnull") == "true"
		if nonNull && f.Type.Kind() != reflect.Slice && f.Type.Kind() != reflect.Map {
			return fmt.Errorf("%s: the nonnull tag applies to a slice or map, not %s", fp, f.Type)
		}
		switch f.Type.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			if (optional || nonNull && top && g.output) && len(ps.Type) == 2 && ps.Type[1] == "null" {
				// An omitted nil pointer, slice or map is absent, never
				// null; a nonnull one on the answer's own fields is
				// written empty (fillNonNull): no union.
				ps.Type = ps.Type[:1]
			}
		}
		ps.Description = f.Tag.Get("desc")
		ps.Default = f.Tag.Get("default")
		if e := f.Tag.Get("enum"); e != "" {
			ps.Enum = strings.Split(e, "|")
		}
		if !g.output {
			if err := inputBounds(ps, f.Tag, fp, top && name == "limit"); err != nil {
				return err
			}
		}
		s.Properties = append(s.Properties, Property{Name: name, Schema: ps})
		if !optional {
			s.Required = append(s.Required, name)
		}
	}
	return nil
}

// inputBounds sets an input property's Minimum and Maximum from its min and
// max tags and its DefaultValue from its default tag. A bound is a JSON
// number (an integer on an integer property). A top-level integer "limit"
// without a min tag has minimum 1: a page of no rows is a request that
// cannot mean anything ([Tool.Invoke] refuses it naming the valid range).
// The default tag becomes a value only when it is one: JSON that validates
// against the property (bounds included), or for a string property one of
// its enum values; prose ("the oldest change") stays documentation.
func inputBounds(ps *Schema, tag reflect.StructTag, fp string, isLimit bool) error {
	integer := slices.Contains(ps.Type, "integer")
	number := integer || slices.Contains(ps.Type, "number")
	for _, b := range []struct {
		tag string
		dst *string
	}{{"min", &ps.Minimum}, {"max", &ps.Maximum}} {
		v := tag.Get(b.tag)
		if v == "" {
			continue
		}
		if !number {
			return fmt.Errorf("%s: a %s tag bounds a number, not %s", fp, b.tag, strings.Join(ps.Type, " or "))
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || integer && f != math.Trunc(f) {
			return fmt.Errorf("%s: %s tag %q is not a JSON %s", fp, b.tag, v, map[bool]string{true: "integer", false: "number"}[integer])
		}
		*b.dst = strconv.FormatFloat(f, 'f', -1, 64)
	}
	if integer && (isLimit || tag.Get("clamp") == "rows") {
		ps.clampRows = true
		if ps.Maximum != "" {
			return fmt.Errorf("%s: a row count clamped to --mcp-max-rows takes no max tag", fp)
		}
		if ps.Minimum == "" {
			ps.Minimum = "1"
		}
	} else if tag.Get("clamp") != "" {
		return fmt.Errorf("%s: clamp tag %q: want clamp:\"rows\" on an integer", fp, tag.Get("clamp"))
	}
	if ps.Minimum != "" && ps.Maximum != "" {
		lo, _ := strconv.ParseFloat(ps.Minimum, 64)
		hi, _ := strconv.ParseFloat(ps.Maximum, 64)
		if lo > hi {
			return fmt.Errorf("%s: min %s is above max %s", fp, ps.Minimum, ps.Maximum)
		}
	}
	if ps.Default == "" {
		return nil
	}
	if slices.Contains(ps.Type, "string") {
		if slices.Contains(ps.Enum, ps.Default) {
			ps.DefaultValue, _ = json.Marshal(ps.Default)
		}
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(ps.Default))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() || validateValue(ps, v, "") != nil {
		return nil
	}
	var compact bytes.Buffer
	if json.Compact(&compact, []byte(ps.Default)) == nil {
		ps.DefaultValue = compact.Bytes()
	}
	return nil
}

// CollapseOptionalUnions rewrites, in place, every optional property typed
// ["T","null"] to "T", walking properties, $defs, oneOf/anyOf/allOf, items
// and additionalProperties. Required nullables, non-null unions and three-way
// unions are left alone (the registry refuses them in input schemas).
func CollapseOptionalUnions(s *Schema) {
	if s == nil {
		return
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	for _, p := range s.Properties {
		if !req[p.Name] && len(p.Schema.Type) == 2 && p.Schema.Type[1] == "null" && p.Schema.Type[0] != "null" {
			p.Schema.Type = p.Schema.Type[:1]
		}
		CollapseOptionalUnions(p.Schema)
	}
	for _, p := range s.Defs {
		CollapseOptionalUnions(p.Schema)
	}
	for _, l := range [][]*Schema{s.OneOf, s.AnyOf, s.AllOf} {
		for _, c := range l {
			CollapseOptionalUnions(c)
		}
	}
	CollapseOptionalUnions(s.Items)
	CollapseOptionalUnions(s.AdditionalProperties)
}

// walk calls fn on s and every schema below it, with a JSON-pointer-like path.
func walk(s *Schema, path string, fn func(path string, s *Schema)) {
	if s == nil {
		return
	}
	fn(path, s)
	for _, p := range s.Properties {
		walk(p.Schema, path+"/properties/"+p.Name, fn)
	}
	for _, p := range s.Defs {
		walk(p.Schema, path+"/$defs/"+p.Name, fn)
	}
	for _, c := range []struct {
		name string
		list []*Schema
	}{{"oneOf", s.OneOf}, {"anyOf", s.AnyOf}, {"allOf", s.AllOf}} {
		for i, sub := range c.list {
			walk(sub, fmt.Sprintf("%s/%s/%d", path, c.name, i), fn)
		}
	}
	walk(s.Items, path+"/items", fn)
	walk(s.AdditionalProperties, path+"/additionalProperties", fn)
}

// FieldNames returns the JSON names of a row struct's fields, in order: the
// valid names of a fields projection over rows of type T.
func FieldNames[T any]() []string {
	s, err := SchemaFor(reflect.TypeFor[T]())
	if err != nil {
		return nil
	}
	return s.Names()
}

// nonNullFields returns the index paths of the answer type's own slice and
// map fields tagged nonnull:"true" (top level, through embedded structs
// held by value): the fields [OutputSchemaFor] types without null.
func nonNullFields(t reflect.Type) [][]int {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out [][]int
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			idx := append(append([]int(nil), prefix...), i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Tag.Get("json") == "-" {
				continue
			}
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if !f.IsExported() || f.Tag.Get("nonnull") != "true" {
				continue
			}
			if k := f.Type.Kind(); k == reflect.Slice || k == reflect.Map {
				out = append(out, idx)
			}
		}
	}
	walk(t, nil)
	return out
}

// fillNonNull returns a copy of the answer v whose nil nonnull fields
// (nonNullFields' paths) hold an empty slice or map, so encoding/json
// writes [] or {} where the output schema promises no null. Only the
// top-level copy is written: nothing the handler shares is touched.
func fillNonNull(v any, paths [][]int) any {
	rv := reflect.ValueOf(v)
	if len(paths) == 0 || !rv.IsValid() || rv.Kind() != reflect.Struct {
		return v
	}
	cp := reflect.New(rv.Type()).Elem()
	cp.Set(rv)
	changed := false
	for _, p := range paths {
		f := cp.FieldByIndex(p)
		if !f.IsNil() {
			continue
		}
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 0, 0))
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
		}
		changed = true
	}
	if !changed {
		return v
	}
	return cp.Interface()
}
