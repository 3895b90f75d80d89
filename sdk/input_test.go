package sdk

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type boundsIn struct {
	Filter  string   `json:"filter,omitempty" desc:"f"`
	Limit   int      `json:"limit,omitempty" default:"50" desc:"rows"`
	Msgs    int      `json:"max_messages,omitempty" default:"100" clamp:"rows" desc:"messages"`
	Wait    *int     `json:"timeout_seconds,omitempty" default:"30" min:"0" desc:"s"`
	MOS     *float64 `json:"min_mos,omitempty" min:"1" max:"5" desc:"m"`
	Code    int      `json:"code,omitempty" min:"100" max:"699" desc:"c"`
	Format  string   `json:"format,omitempty" default:"json" enum:"json|text" desc:"fmt"`
	End     string   `json:"end,omitempty" default:"no end" desc:"e"`
	Bytes   int      `json:"max_response_bytes,omitempty" default:"--mcp-max-response-bytes" min:"1" desc:"b"`
	Kinds   []string `json:"kinds,omitempty" default:"[\"problems\"]" desc:"k"`
	Media   *bool    `json:"include_media,omitempty" default:"true" desc:"i"`
	TooHigh int      `json:"top_n,omitempty" default:"5000" max:"10" desc:"a default outside the bounds is prose"`
	Rule    struct {
		Name string `json:"name" desc:"n"`
	} `json:"rule,omitzero" desc:"r"`
}

// TestInputSchemaCarriesBoundsDefaultsAndClosedObjects: every input object
// says additionalProperties false; min and max tags become minimum and
// maximum; a limit has minimum 1 and no maximum (it is clamped, not
// refused); a default is sent only when it is a value of the property.
func TestInputSchemaCarriesBoundsDefaultsAndClosedObjects(t *testing.T) {
	s, err := SchemaFor(reflect.TypeFor[boundsIn]())
	if err != nil {
		t.Fatal(err)
	}
	CollapseOptionalUnions(s)
	for _, tc := range []struct {
		prop, want string
	}{
		{"filter", `{"type":"string","description":"f"}`},
		{"limit", `{"type":"integer","description":"rows","default":50,"minimum":1}`},
		{"max_messages", `{"type":"integer","description":"messages","default":100,"minimum":1}`},
		{"timeout_seconds", `{"type":"integer","description":"s","default":30,"minimum":0}`},
		{"min_mos", `{"type":"number","description":"m","minimum":1,"maximum":5}`},
		{"code", `{"type":"integer","description":"c","minimum":100,"maximum":699}`},
		{"format", `{"type":"string","description":"fmt","enum":["json","text"],"default":"json"}`},
		{"end", `{"type":"string","description":"e"}`},
		{"max_response_bytes", `{"type":"integer","description":"b","minimum":1}`},
		{"kinds", `{"type":"array","description":"k","default":["problems"],"items":{"type":"string"}}`},
		{"include_media", `{"type":"boolean","description":"i","default":true}`},
		{"top_n", `{"type":"integer","description":"a default outside the bounds is prose","maximum":10}`},
		{"rule", `{"type":"object","description":"r","properties":{"name":{"type":"string","description":"n"}},"required":["name"],"additionalProperties":false}`},
	} {
		t.Run(tc.prop, func(t *testing.T) {
			got, _ := json.Marshal(s.Property(tc.prop))
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	top, _ := json.Marshal(s)
	if !strings.HasSuffix(string(top), `"additionalProperties":false}`) {
		t.Errorf("the arguments object is not closed: %s", top)
	}
	out, err := OutputSchemaFor(reflect.TypeFor[boundsIn]())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(out); strings.Contains(string(b), "additionalProperties\":false") || strings.Contains(string(b), "minimum") {
		t.Errorf("an output schema took input bounds: %s", b)
	}
}

// TestInputSchemaRefusesBadBoundTags: a bound that is not a number of the
// property's type, a bound on a string, min above max and a max on a
// clamped row count fail schema generation (the registry reports it).
func TestInputSchemaRefusesBadBoundTags(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"fraction on an integer", reflect.TypeFor[struct {
			N int `json:"n" min:"1.5"`
		}](), `min tag "1.5" is not a JSON integer`},
		{"not a number", reflect.TypeFor[struct {
			N float64 `json:"n" max:"five"`
		}](), `max tag "five" is not a JSON number`},
		{"bound on a string", reflect.TypeFor[struct {
			S string `json:"s" min:"1"`
		}](), "a min tag bounds a number"},
		{"min above max", reflect.TypeFor[struct {
			N int `json:"n" min:"5" max:"1"`
		}](), "min 5 is above max 1"},
		{"max on a limit", reflect.TypeFor[struct {
			N int `json:"limit" max:"10"`
		}](), "takes no max tag"},
		{"unknown clamp", reflect.TypeFor[struct {
			N int `json:"n" clamp:"bytes"`
		}](), `clamp tag "bytes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := SchemaFor(tc.typ); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// nearestForTest stands in for the host's suggester (core/filter's): the
// candidate sharing the word's first three letters.
func nearestForTest(word string, candidates []string) string {
	for _, c := range candidates {
		if len(word) >= 3 && strings.HasPrefix(c, word[:3]) {
			return c
		}
	}
	return ""
}

func boundsTool(t *testing.T) Tool {
	t.Helper()
	tool := NewTool(Descriptor{Name: "bounds", Description: "d", Annotations: ro},
		func(ctx context.Context, c *Call, in boundsIn) (echoOut, error) {
			return echoOut{Rows: []echoRow{}, Page: NewPage(in.Limit, in.Msgs, false, "", SourceState{Exhausted: true}, 1)}, nil
		})
	reg, err := Register(context.Background(), []Bundle{toolsBundle{tools: []Tool{tool}}}, nil, RegistryOptions{SkipBudgets: true, Suggest: nearestForTest})
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := reg.Tool("bounds")
	return got
}

// TestInvokeRefusesArgumentsItCannotHonour: an unknown argument is refused
// naming the valid ones and the closest; a row count under 1 is refused
// naming the range up to --mcp-max-rows; a bounded number outside its
// bounds is refused naming them; a row count above --mcp-max-rows is
// clamped and the answer says so in limit_applied, which the output schema
// declares.
func TestInvokeRefusesArgumentsItCannotHonour(t *testing.T) {
	tool := boundsTool(t)
	valid := "valid: filter, limit, max_messages, timeout_seconds, min_mos, code, format, end, max_response_bytes, kinds, include_media, top_n, rule"
	for _, tc := range []struct {
		name, args string
		want       string // refusal text, or "" for an answer
		answer     string // a substring of the answer
	}{
		{"unknown argument, a close one named", `{"limt":5}`, `unknown argument "limt" (did you mean "limit"?); ` + valid, ""},
		{"unknown argument, nothing close", `{"zzz":1}`, `unknown argument "zzz"; ` + valid, ""},
		{"unknown nested member", `{"rule":{"name":"a","nme":"b"}}`, `unknown member of "rule" "rule.nme"; valid: name`, ""},
		{"limit 0", `{"limit":0}`, `argument "limit": got 0; valid: 1 to 1000 (--mcp-max-rows; a larger one is clamped to it)`, ""},
		{"limit -1", `{"limit":-1}`, `argument "limit": got -1; valid: 1 to 1000 (--mcp-max-rows; a larger one is clamped to it)`, ""},
		{"clamped row count 0", `{"max_messages":0}`, `argument "max_messages": got 0; valid: 1 to 1000 (--mcp-max-rows; a larger one is clamped to it)`, ""},
		{"below a minimum", `{"timeout_seconds":-1}`, `argument "timeout_seconds": got -1; valid: at least 0`, ""},
		{"above a maximum", `{"min_mos":5.5}`, `argument "min_mos": got 5.5; valid: 1 to 5`, ""},
		{"under a range", `{"code":99}`, `argument "code": got 99; valid: 100 to 699`, ""},
		{"limit at the ceiling", `{"limit":1000}`, "", `"returned":1000,`},
		{"limit above the ceiling is clamped and said", `{"limit":5000}`, "",
			`"returned":1000,"total_matched":0,"truncated":false,"next_cursor":null,"source_exhausted":true,"source_stopped_early":false,"capture_identity":{"node":"","instance":"","dialog_generation":0,"stream_generation":0},"schema_version":1,"limit_applied":1000}`},
		{"a clamped max_messages is said", `{"max_messages":1001}`, "", `"total_matched":1000,`},
		{"a clamped max_messages is said", `{"max_messages":1001}`, "", `"limit_applied":1000}`},
		{"no clamp, no limit_applied", `{"limit":7,"code":100,"min_mos":1}`, "", `"schema_version":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tool.Invoke(context.Background(), json.RawMessage(tc.args), Limits{MaxRows: 1000})
			if tc.want != "" {
				var e *Error
				if !errors.As(err, &e) || e.Code != CodeInvalidParams || e.Message != tc.want {
					t.Fatalf("got %v\nwant -32602 %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.Blocks[0], tc.answer) {
				t.Errorf("got %s\nwant it to contain %s", r.Blocks[0], tc.answer)
			}
		})
	}
	out, _ := json.Marshal(tool.OutputSchema())
	if !strings.Contains(string(out), `"limit_applied":{"type":"integer","description":"count used; the one asked exceeded --mcp-max-rows"}`) {
		t.Errorf("the output schema does not declare limit_applied: %s", out)
	}
	instance := ""
	plain, _ := json.Marshal(pagedTool("paged", &instance).OutputSchema())
	if strings.Contains(string(plain), "limit_applied") {
		t.Errorf("a tool with no row count declares limit_applied: %s", plain)
	}
}

// toolsBundle provisions the tools it is given.
type toolsBundle struct{ tools []Tool }

func (toolsBundle) Info() Info {
	return Info{ID: "t", Summary: "test tools", ByteBudget: Budget{Default: 1 << 20, WithOutputSchemas: 1 << 20}}
}
func (b toolsBundle) Provision(context.Context, Env) ([]Tool, error) { return b.tools, nil }

// pagedIn selects rows by filter and pages them with a cursor.
type pagedIn struct {
	Filter string `json:"filter,omitempty" desc:"f"`
	Cursor string `json:"cursor,omitempty" desc:"c"`
}

type pagedOut struct {
	After string `json:"after"`
	Next  string `json:"next"`
}

// pagedTool binds its cursor to the capture instance *instance, its name
// and its filter, and hands back the position it was given plus "+".
func pagedTool(name string, instance *string) Tool {
	return NewTool(Descriptor{Name: name, Description: "d", Annotations: ro},
		func(ctx context.Context, c *Call, in pagedIn) (pagedOut, error) {
			pos, err := c.BindCursor(in.Cursor, *instance, "filter", in.Filter)
			if err != nil {
				return pagedOut{}, err
			}
			return pagedOut{After: pos, Next: c.Cursor(pos + "+")}, nil
		})
}

// TestBoundCursorRefusesAnotherScope: a next_cursor continues the listing
// that issued it; the same cursor given to another tool, with another
// filter, after another capture was loaded, altered, or hand-built is
// refused naming what it was bound to and what was asked, never read as
// an empty last page.
func TestBoundCursorRefusesAnotherScope(t *testing.T) {
	instance := "aaaa"
	list, other := pagedTool("list", &instance), pagedTool("other", &instance)
	call := func(tool Tool, args map[string]any) (pagedOut, error) {
		b, _ := json.Marshal(args)
		r, err := tool.Invoke(context.Background(), b, DefaultLimits())
		if err != nil {
			return pagedOut{}, err
		}
		var o pagedOut
		return o, json.Unmarshal([]byte(r.Blocks[0]), &o)
	}
	first, err := call(list, map[string]any{"filter": "state == Failed"})
	if err != nil || first.Next == "" || first.After != "" {
		t.Fatalf("first page: %+v %v", first, err)
	}
	if strings.Contains(first.Next, "Failed") || strings.Contains(first.Next, "|") {
		t.Errorf("cursor %q is not opaque", first.Next)
	}
	second, err := call(list, map[string]any{"filter": "state == Failed", "cursor": first.Next})
	if err != nil || second.After != "+" || second.Next == "" {
		t.Fatalf("second page from the first page's cursor: %+v %v", second, err)
	}
	payload, mac, _ := strings.Cut(first.Next, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	forged := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"p":"+"`, `"p":"~"`, 1))) + "." + mac
	longFilter := strings.Repeat("x", 100)
	long, _ := call(list, map[string]any{"filter": longFilter})
	for _, tc := range []struct {
		name     string
		tool     Tool
		args     map[string]any
		instance string
		want     string
	}{
		{"another tool", other, map[string]any{"filter": "state == Failed", "cursor": first.Next}, "aaaa",
			"cursor belongs to list, not other: pass it back to list, or omit cursor to start other"},
		{"another filter", list, map[string]any{"filter": "state == Completed", "cursor": first.Next}, "aaaa",
			`cursor belongs to list with filter "state == Failed"; this call asks filter "state == Completed": a cursor continues only the listing that issued it; omit cursor to start this one`},
		{"filter dropped", list, map[string]any{"cursor": first.Next}, "aaaa",
			`cursor belongs to list with filter "state == Failed"; this call asks filter absent`},
		{"a long filter is named by digest", list, map[string]any{"filter": longFilter + "y", "cursor": long.Next}, "aaaa",
			`cursor belongs to list with filter sha256:`},
		{"another capture", list, map[string]any{"filter": "state == Failed", "cursor": first.Next}, "bbbb",
			"cursor is from capture instance aaaa, and this is instance bbbb: a cursor does not outlive its capture; omit cursor to start again"},
		{"altered", list, map[string]any{"filter": "state == Failed", "cursor": forged}, "aaaa",
			"invalid cursor: it was altered"},
		{"hand-built position", list, map[string]any{"filter": "state == Failed", "cursor": "2024-05-01T10:00:00Z|a@x"}, "aaaa",
			`invalid cursor "2024-05-01T10:00:00Z|a@x": not a next_cursor this server issued`},
		{"not base64", list, map[string]any{"cursor": "!!.!!"}, "aaaa", "invalid cursor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			instance = tc.instance
			defer func() { instance = "aaaa" }()
			_, err := call(tc.tool, tc.args)
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
				t.Errorf("got %v\nwant -32602 containing %q", err, tc.want)
			}
		})
	}
}

// TestLimitAppliedBytesIsWhatInvokeAdds: page fitting reserves
// LimitAppliedBytes for the limit_applied Invoke appends after the handler;
// the reservation is exactly the bytes added (and zero with no clamp).
func TestLimitAppliedBytesIsWhatInvokeAdds(t *testing.T) {
	reserved := -1
	tool := NewTool(Descriptor{Name: "rows", Description: "d", Annotations: ro},
		func(ctx context.Context, c *Call, in struct {
			Limit int `json:"limit,omitempty" desc:"rows"`
		}) (echoOut, error) {
			reserved = c.LimitAppliedBytes()
			return echoOut{Rows: []echoRow{}, Page: NewPage(in.Limit, 0, false, "", SourceState{}, 1)}, nil
		})
	plain, err := tool.Invoke(context.Background(), json.RawMessage(`{"limit":1000}`), Limits{MaxRows: 1000})
	if err != nil || reserved != 0 {
		t.Fatalf("unclamped: reserved %d, %v; want 0", reserved, err)
	}
	clamped, err := tool.Invoke(context.Background(), json.RawMessage(`{"limit":5000}`), Limits{MaxRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if added := len(clamped.Blocks[0]) - len(plain.Blocks[0]); added != reserved || added == 0 {
		t.Errorf("limit_applied added %d bytes, LimitAppliedBytes reserved %d", added, reserved)
	}
}
