package sdk

import (
	"context"
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// customJSON writes itself in a shape its fields do not describe.
type customJSON struct{ N int }

func (c customJSON) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

// ptrText has a pointer-receiver MarshalText, which encoding/json uses only
// for addressable values.
type ptrText struct{ s string }

func (p *ptrText) MarshalText() ([]byte, error) { return []byte(p.s), nil }

// TestOutputSchemaDescribesWhatEncodingJSONWrites: an output schema gives a
// text-marshalling type (netip.AddrPort) the string type encoding/json
// writes, and a slice or map that may be written as null a union with null
// unless omitempty or omitzero drops it; the input schema of the same type
// keeps plain types, and a type with its own MarshalJSON is refused.
func TestOutputSchemaDescribesWhatEncodingJSONWrites(t *testing.T) {
	type row struct {
		Addr netip.AddrPort `json:"addr" desc:"a"`
	}
	type answer struct {
		Src      netip.AddrPort    `json:"src" desc:"src"`
		IP       netip.Addr        `json:"ip" desc:"ip"`
		MaybeIP  *netip.Addr       `json:"maybe_ip" desc:"nullable ip"`
		At       time.Time         `json:"at" desc:"at"`
		Rows     []row             `json:"rows" desc:"rows"`
		Hints    []string          `json:"hints" desc:"hints"`
		Opt      []string          `json:"opt,omitempty" desc:"opt"`
		Zero     []string          `json:"zero,omitzero" desc:"zero"`
		Nested   [][]string        `json:"nested" desc:"nested"`
		Fixed    [2]int            `json:"fixed" desc:"fixed"`
		Units    map[string]string `json:"units" desc:"units"`
		OptUnits map[string]string `json:"opt_units,omitempty" desc:"opt units"`
		Raw      []byte            `json:"raw" desc:"raw"`
		Digest   [2]byte           `json:"digest" desc:"digest"`
	}
	out, err := OutputSchemaFor(reflect.TypeFor[answer]())
	if err != nil {
		t.Fatal(err)
	}
	in, err := SchemaFor(reflect.TypeFor[answer]())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		prop      string
		out, in   string
		itemsType string
	}{
		{"src", `["string"]`, `["string"]`, ""},
		{"ip", `["string"]`, `["string"]`, ""},
		{"maybe_ip", `["string","null"]`, `["string","null"]`, ""},
		{"at", `["string"]`, `["string"]`, ""},
		{"rows", `["array","null"]`, `["array"]`, `["object"]`},
		{"hints", `["array","null"]`, `["array"]`, `["string"]`},
		{"opt", `["array"]`, `["array"]`, `["string"]`},
		{"zero", `["array"]`, `["array"]`, `["string"]`},
		{"nested", `["array","null"]`, `["array"]`, `["array","null"]`},
		{"fixed", `["array"]`, `["array"]`, `["integer"]`},
		{"units", `["object","null"]`, `["object"]`, ""},
		{"opt_units", `["object"]`, `["object"]`, ""},
		{"raw", `["string","null"]`, `["string"]`, ""},
		{"digest", `["array"]`, `["array"]`, `["integer"]`},
	} {
		t.Run(tc.prop, func(t *testing.T) {
			o, i := out.Property(tc.prop), in.Property(tc.prop)
			if got, _ := json.Marshal(o.Type); string(got) != tc.out {
				t.Errorf("output type: got %s, want %s", got, tc.out)
			}
			if got, _ := json.Marshal(i.Type); string(got) != tc.in {
				t.Errorf("input type: got %s, want %s", got, tc.in)
			}
			if tc.itemsType != "" {
				if got, _ := json.Marshal(o.Items.Type); string(got) != tc.itemsType {
					t.Errorf("output items type: got %s, want %s", got, tc.itemsType)
				}
			}
		})
	}
	if got, _ := json.Marshal(out.Property("rows").Items.Property("addr").Type); string(got) != `["string"]` {
		t.Errorf("rows[].addr: got %s, want [\"string\"]", got)
	}

	// What encoding/json writes for a zero answer meets those types.
	b, _ := json.Marshal(answer{})
	for _, want := range []string{`"src":""`, `"ip":""`, `"maybe_ip":null`, `"rows":null`, `"nested":null`, `"units":null`, `"raw":null`, `"digest":[0,0]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("encoding/json wrote %s, which lacks %s", b, want)
		}
	}

	for _, tc := range []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"own MarshalJSON", reflect.TypeFor[struct {
			C customJSON `json:"c" desc:"c"`
		}](), "has its own MarshalJSON"},
		{"pointer-receiver MarshalText", reflect.TypeFor[struct {
			P ptrText `json:"p" desc:"p"`
		}](), "pointer-receiver MarshalText"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, gen := range []func(reflect.Type) (*Schema, error){SchemaFor, OutputSchemaFor} {
				if _, err := gen(tc.typ); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got error %v, want one saying %q", err, tc.want)
				}
			}
		})
	}
}

// TestNonNullListsAreWrittenEmpty: a slice or map of the answer type itself
// tagged nonnull:"true" (also through a struct embedded by value) is typed
// without null and serialized as [] or {} when nil; below the top level, or
// through an embedded pointer, the tag leaves the union (nothing nested is
// rewritten); on another kind it is refused.
func TestNonNullListsAreWrittenEmpty(t *testing.T) {
	type Flags struct {
		Notes []string `json:"notes" nonnull:"true" desc:"notes"`
	}
	type Extra struct {
		More []string `json:"more" nonnull:"true" desc:"more"`
	}
	type row struct {
		Tags []string `json:"tags" nonnull:"true" desc:"tags"`
	}
	type answer struct {
		Rows  []row             `json:"rows" nonnull:"true" desc:"rows"`
		Units map[string]string `json:"units" nonnull:"true" desc:"units"`
		Plain []string          `json:"plain" desc:"plain"`
		Flags
		*Extra
	}
	out, err := OutputSchemaFor(reflect.TypeFor[answer]())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ prop, want string }{
		{"rows", `["array"]`},
		{"units", `["object"]`},
		{"plain", `["array","null"]`},
		{"notes", `["array"]`},
		{"more", `["array","null"]`},
	} {
		if got, _ := json.Marshal(out.Property(tc.prop).Type); string(got) != tc.want {
			t.Errorf("%s: got %s, want %s", tc.prop, got, tc.want)
		}
	}
	if got, _ := json.Marshal(out.Property("rows").Items.Property("tags").Type); string(got) != `["array","null"]` {
		t.Errorf("rows[].tags: got %s, want the union (nested values are not rewritten)", got)
	}

	shared := []row{{}}
	for _, tc := range []struct {
		name string
		in   answer
		want string
	}{
		{"nil lists", answer{}, `{"rows":[],"units":{},"plain":null,"notes":[]}`},
		{"nested nil stays null", answer{Rows: shared, Units: map[string]string{"a": "b"}, Flags: Flags{Notes: []string{"n"}}},
			`{"rows":[{"tags":null}],"units":{"a":"b"},"plain":null,"notes":["n"]}`},
		{"embedded pointer", answer{Extra: &Extra{}}, `{"rows":[],"units":{},"plain":null,"notes":[],"more":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := NewTool(Descriptor{Name: "x", Description: "x", Annotations: Annotations{Effect: ReadOnly, World: ClosedWorld}},
				func(context.Context, *Call, struct{}) (answer, error) { return tc.in, nil })
			r, err := tool.Invoke(context.Background(), json.RawMessage(`{}`), DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if r.Blocks[0] != tc.want {
				t.Errorf("got %s, want %s", r.Blocks[0], tc.want)
			}
		})
	}
	if shared[0].Tags != nil {
		t.Error("the handler's nested value was written")
	}

	_, err = OutputSchemaFor(reflect.TypeFor[struct {
		N string `json:"n" nonnull:"true" desc:"n"`
	}]())
	if err == nil || !strings.Contains(err.Error(), "applies to a slice or map") {
		t.Errorf("nonnull on a string: got %v, want a refusal", err)
	}
}

// TestObjectIsAnOpenObject: an Object member (a document in a schema of
// its own) is {"type":"object"} on input, with no properties and no
// additionalProperties false (its members are the tool's to check), and
// on output a nullable object whose additionalProperties is {} (a strict
// reader closing every object must still accept its members).
func TestObjectIsAnOpenObject(t *testing.T) {
	type in struct {
		Doc Object `json:"doc,omitempty" desc:"a document"`
	}
	type out struct {
		Doc Object `json:"doc" desc:"a document"`
	}
	is, err := SchemaFor(reflect.TypeFor[in]())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(is.Property("doc"))
	if string(b) != `{"type":"object","description":"a document"}` {
		t.Errorf("input: %s", b)
	}
	if err := ValidateArgs(is, json.RawMessage(`{"doc":{"any":[1,{"x":null}]}}`)); err != nil {
		t.Errorf("input members refused: %v", err)
	}
	if err := ValidateArgs(is, json.RawMessage(`{"doc":[1]}`)); err == nil {
		t.Error("an array passed as an object")
	}
	os, err := OutputSchemaFor(reflect.TypeFor[out]())
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(os.Property("doc"))
	if string(b) != `{"type":["object","null"],"description":"a document","additionalProperties":{}}` {
		t.Errorf("output: %s", b)
	}
}
