package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
)

// Effect says what a tool does to the server's state. The zero value is
// invalid, so a forgotten annotation fails registration instead of silently
// meaning "destructive".
type Effect int

const (
	// EffectUnset is invalid: every tool states its effect.
	EffectUnset Effect = iota
	// ReadOnly tools change nothing a later answer depends on.
	ReadOnly
	// Writes change state but destroy nothing (readOnlyHint false, destructiveHint false).
	Writes
	// Destructive tools may destroy state (readOnlyHint false, destructiveHint true).
	Destructive
)

// Idempotency says whether repeating a call has further effect. The zero
// value is invalid for a tool that is not ReadOnly.
type Idempotency int

const (
	// IdempotencyUnset is invalid on a writing tool.
	IdempotencyUnset Idempotency = iota
	// Idempotent: repeating the call with the same arguments has no further effect.
	Idempotent
	// NotIdempotent: each call has its own effect.
	NotIdempotent
)

// World says whether the tool reaches outside the server. The zero value is
// invalid.
type World int

const (
	// WorldUnset is invalid: every tool states its world.
	WorldUnset World = iota
	// ClosedWorld tools touch only sipnab's own state (openWorldHint false).
	ClosedWorld
	// OpenWorld tools reach external entities (openWorldHint true).
	OpenWorld
)

// Annotations are a tool's behaviour hints; all four MCP hints are derived
// from them and always sent.
type Annotations struct {
	Effect      Effect
	Idempotency Idempotency
	World       World
}

func (a Annotations) readOnly() bool { return a.Effect == ReadOnly }

// Hints returns the four MCP hints. A ReadOnly tool is non-destructive and
// idempotent.
func (a Annotations) Hints() mcp.ToolAnnotation {
	ro := a.Effect == ReadOnly
	destructive := a.Effect == Destructive
	idem := ro || a.Idempotency == Idempotent
	open := a.World == OpenWorld
	return mcp.ToolAnnotation{ReadOnlyHint: &ro, DestructiveHint: &destructive, IdempotentHint: &idem, OpenWorldHint: &open}
}

func (a Annotations) check() []string {
	var v []string
	switch a.Effect {
	case ReadOnly, Writes, Destructive:
	default:
		v = append(v, "annotations: Effect is unset (want sdk.ReadOnly, sdk.Writes or sdk.Destructive)")
	}
	if a.Effect != ReadOnly && a.Effect != EffectUnset {
		if a.Idempotency != Idempotent && a.Idempotency != NotIdempotent {
			v = append(v, "annotations: Idempotency is unset on a writing tool (want sdk.Idempotent or sdk.NotIdempotent)")
		}
	}
	if a.World != ClosedWorld && a.World != OpenWorld {
		v = append(v, "annotations: World is unset (want sdk.ClosedWorld or sdk.OpenWorld)")
	}
	return v
}

// Descriptor is everything about a tool except its types and handler.
type Descriptor struct {
	// Name is the tool name, ^[a-z][a-z0-9_]*$, unique across bundles.
	Name string
	// Title is a short human-readable name.
	Title string
	// Description tells the agent when and how to use the tool.
	Description string
	// Annotations are required; their zero values are invalid.
	Annotations Annotations
	// StrictArgs also decodes the arguments refusing fields the input
	// struct does not name (file tools). Every tool's input schema is
	// closed, so validation refuses an unknown argument first, naming the
	// valid ones; this is the decoder's second guard.
	StrictArgs bool
	// Renders marks a tool that may answer with a rendered document
	// (Call.ReplyText: markdown, text, or JSON in another schema such as
	// yang-json). A document carries no structuredContent (MCP types it as
	// an object; wrapping a document in an invented key would give it a
	// shape the text block does not have), and MCP requires structured
	// content that conforms to the outputSchema whenever one is advertised,
	// so such a tool advertises no outputSchema, even with
	// --mcp-output-schemas. Its answer type still documents its json answer
	// (OutputSchema, docs/bundles). A tool without Renders that calls
	// ReplyText fails the call with an internal error.
	Renders bool
	// Refusals document when the tool refuses a call, beyond arguments that
	// fail its input schema (which every tool refuses, as a tool execution
	// error).
	// Documentation only: the per-bundle pages in docs/bundles list them;
	// they are not sent.
	Refusals []Refusal
	// Examples are the tool's example calls, first the one an agent would
	// make first. Never sent: the per-bundle pages in docs/bundles print
	// them, and the end-to-end tests make each one against the sample
	// capture testdata/sip-rtp-g711.pcap (a golden transcript per example,
	// and its answer checked against the output schema), so a new tool is
	// tested and documented from its own folder. Registration refuses an
	// example whose arguments fail the tool's input schema.
	Examples []Example
}

// Example is one example call of a tool.
type Example struct {
	// Title says what the call asks, as a reader would put it.
	Title string
	// Args are the call's arguments (nil: none).
	Args map[string]any
}

// Refusal is one documented way a tool refuses a call.
type Refusal struct {
	// Code is the error's code: CodeInvalidParams for a refusal (answered
	// as a tool execution error, isError), CodeInternal or CodeUnavailable
	// for a JSON-RPC error.
	Code int
	// When says what the caller did, e.g. "unknown call_id".
	When string
}

// Handler is a typed tool handler. It returns the answer (serialized as the
// first content block) or an error ([InvalidParams], [Internal], ... any
// other error is internal).
type Handler[In, Out any] func(ctx context.Context, c *Call, in In) (Out, error)

// Tool is a registered tool: a descriptor beside a handler. Build it with
// [NewTool].
type Tool struct {
	Descriptor
	inType, outType reflect.Type
	input, output   *Schema
	schemaErr       error
	// nonNull are the answer type's nonnull fields (fillNonNull).
	nonNull [][]int
	invoke  func(ctx context.Context, c *Call, args json.RawMessage) (any, error)
	// suggest names the closest valid argument to an unknown one
	// (RegistryOptions.Suggest); nil names none.
	suggest func(word string, candidates []string) string
}

// NewTool builds a tool from its descriptor and typed handler. The input
// schema is generated from In, the output schema from Out (see [SchemaFor]);
// schema problems are reported by the registry, never by a panic.
func NewTool[In, Out any](d Descriptor, h Handler[In, Out]) Tool {
	t := Tool{Descriptor: d, inType: reflect.TypeFor[In](), outType: reflect.TypeFor[Out]()}
	t.nonNull = nonNullFields(t.outType)
	in, err := SchemaFor(t.inType)
	if err != nil {
		t.schemaErr = errors.Join(t.schemaErr, fmt.Errorf("input schema: %w", err))
	} else {
		CollapseOptionalUnions(in)
		t.input = in
	}
	out, err := OutputSchemaFor(t.outType)
	if err != nil {
		t.schemaErr = errors.Join(t.schemaErr, fmt.Errorf("output schema: %w", err))
	} else {
		// Rows of a top-level array may be projected with fields, so a row
		// states no required members (the envelope keeps its own).
		for _, p := range out.Properties {
			if len(p.Schema.Type) > 0 && p.Schema.Type[0] == "array" && p.Schema.Items != nil {
				p.Schema.Items.Required = nil
			}
		}
		if t.input != nil && len(clampedRows(t.input)) > 0 && out.Property(limitAppliedKey) == nil {
			// The answer says when a row count was clamped.
			la := limitAppliedSchema
			out.Properties = append(out.Properties, Property{Name: limitAppliedKey, Schema: &la})
		}
		t.output = out
	}
	t.invoke = func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var in In
		if len(bytes.TrimSpace(args)) > 0 && !bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
			dec := json.NewDecoder(bytes.NewReader(args))
			if d.StrictArgs {
				dec.DisallowUnknownFields()
			}
			if err := dec.Decode(&in); err != nil {
				return nil, InvalidParams("invalid arguments for %s: %v", d.Name, err)
			}
		}
		return h(ctx, c, in)
	}
	return t
}

// InputSchema returns the generated input schema (optional unions collapsed).
func (t Tool) InputSchema() *Schema { return t.input }

// OutputSchema returns the generated output schema (unions kept). A tool
// that Renders documents has one too (its json answer), but does not
// advertise it.
func (t Tool) OutputSchema() *Schema { return t.output }

// Wire returns the tool's tools/list entry exactly as the host sends it: all
// four hints set, the input schema, and the output schema only when
// outputSchemas is on and the tool never answers with a document (Renders).
func (t Tool) Wire(outputSchemas bool) mcp.Tool {
	w := mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, Annotations: t.Annotations.Hints()}
	if t.input != nil {
		w.RawInputSchema, _ = json.Marshal(t.input)
	} else {
		w.RawInputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if outputSchemas && t.output != nil && !t.Renders {
		w.RawOutputSchema, _ = json.Marshal(t.output)
	}
	return w
}

// WireBytes is the length of the compact JSON of the tool's tools/list entry.
func (t Tool) WireBytes(outputSchemas bool) int {
	b, err := json.Marshal(t.Wire(outputSchemas))
	if err != nil {
		return 0
	}
	return len(b)
}

// Reply is a finished tool answer, before the host's central exit attaches
// structuredContent, the provenance note and the audit record.
type Reply struct {
	// Blocks are the text content blocks; Blocks[0] is the answer.
	Blocks []string
	// Fenced: the answer carries fenced capture text, so the provenance note
	// must follow as the last block.
	Fenced bool
	// IsError marks a tool-level error result (isError: true).
	IsError bool
	// Document: Blocks[0] is a rendered document (Call.ReplyText: markdown,
	// text, or a JSON document in another schema such as yang-json), not
	// the tool's answer type. The host attaches no structuredContent to
	// it, even when it parses as a JSON object: structuredContent must
	// match the output schema, and only the answer type does (mcp-surface
	// §2.9).
	Document bool
}

// Invoke validates args against the input schema, decodes them, runs the
// handler and serializes its answer. The returned error is an [*Error].
func (t Tool) Invoke(ctx context.Context, args json.RawMessage, limits Limits) (Reply, error) {
	if t.invoke == nil {
		return Reply{}, Internal("tool %s has no handler", t.Name)
	}
	c := &Call{limits: limits, tool: t.Name, encode: func(out any) ([]byte, error) { return json.Marshal(fillNonNull(out, t.nonNull)) }}
	if t.input != nil {
		if err := (validator{suggest: t.suggest, maxRows: limits.MaxRows}).args(t.input, args); err != nil {
			return Reply{}, err
		}
		args, c.limitApplied = clampRows(t.input, args, limits.MaxRows)
	}
	out, err := t.invoke(ctx, c, args)
	if err != nil {
		return Reply{}, AsError(err)
	}
	var first string
	if c.text != nil {
		if !t.Renders {
			// It would leave --mcp-output-schemas advertising a schema
			// the answer does not meet.
			return Reply{}, Internal("tool %s answered with a rendered document but its descriptor does not set Renders", t.Name)
		}
		first = c.fitDocument(*c.text)
	} else {
		b, err := c.encodeAnswer(out)
		if err != nil {
			return Reply{}, Internal("serializing %s answer: %v", t.Name, err)
		}
		first = string(b)
	}
	return c.reply(first, c.text != nil), nil
}

// Call is the per-call context a handler uses to shape its answer.
type Call struct {
	limits Limits
	tool   string
	cursor *cursorScope
	// limitApplied is the row count Invoke clamped to (--mcp-max-rows);
	// the answer carries it as limit_applied. 0: nothing clamped.
	limitApplied int
	fenced       bool
	extra        []string
	text         *string
	isError      bool
	projRows     string
	projFields   []string
	// encode serializes the handler's answer (Invoke sets it: nonnull
	// fields filled); nil is json.Marshal.
	encode func(out any) ([]byte, error)
	// rest says where the rest of a cut document is (Call.WhenCut).
	rest string
}

// NewCall returns a Call with the given limits, for handler unit tests.
func NewCall(l Limits) *Call { return &Call{limits: l} }

// Limits returns the server-wide ceilings for this call.
func (c *Call) Limits() Limits { return c.limits }

// Limit resolves a requested row limit: 0 (absent) is DefaultLimit (50);
// anything above --mcp-max-rows is clamped to it. A "limit" argument
// reaches the handler already clamped (Invoke refuses one under 1 and
// reports a clamp in limit_applied); this is the handler's own guard.
func (c *Call) Limit(requested int) int {
	if requested <= 0 {
		requested = DefaultLimit
	}
	if c.limits.MaxRows > 0 && requested > c.limits.MaxRows {
		requested = c.limits.MaxRows
	}
	return requested
}

// Fence fences one sender-written single-line field and arranges the
// provenance note as the answer's last block.
func (c *Call) Fence(s string) string {
	c.fenced = true
	return Fence(s)
}

// FenceBody fences a sender-written body or snippet, cut to
// --mcp-max-body-bytes, and arranges the provenance note.
func (c *Call) FenceBody(s string) string {
	c.fenced = true
	return FenceBody(s, c.limits.MaxBodyBytes)
}

// MarkFenced arranges the provenance note without fencing anything here
// (reports carry the note but no markers).
func (c *Call) MarkFenced() { c.fenced = true }

// AddBlock appends a text content block after the answer (a rendered
// document, a flags block). The provenance note still comes last.
func (c *Call) AddBlock(text string) { c.extra = append(c.extra, text) }

// ReplyText makes the first block a rendered document (markdown, text, or
// a JSON document in a schema other than the tool's output type, such as
// RFC 7951 yang-json) instead of the serialized answer; the handler's
// returned value is then ignored. The reply is marked as a document
// (Reply.Document) and the host attaches no structuredContent to it, even
// when the document is a JSON object: structuredContent would not match the
// tool's output schema.
func (c *Call) ReplyText(doc string) { c.text = &doc }

// MarkToolError makes the result a tool-level error (isError: true) whose
// first block is still the serialized answer.
func (c *Call) MarkToolError() { c.isError = true }

// Project arranges a fields projection of the rows array rowsKey, applied to
// the serialized answer. It validates fields against valid first (unknown
// name: invalid params naming the valid fields). No fields: no projection.
func (c *Call) Project(rowsKey string, fields, valid []string) error {
	if len(fields) == 0 {
		return nil
	}
	if err := ValidateFields(fields, valid); err != nil {
		return err
	}
	c.projRows, c.projFields = rowsKey, fields
	return nil
}

// limitAppliedKey is the answer member that says a row count was clamped:
// above --mcp-max-rows a count (limit, max_messages) is not refused but
// lowered to it, and the answer carries the value used, so a short page
// never reads as "that is all there is". Absent when nothing was clamped.
const limitAppliedKey = "limit_applied"

// limitAppliedSchema describes limit_applied in the output schema of every
// tool with a clamped row count.
var limitAppliedSchema = Schema{Type: []string{"integer"}, Description: "count used; the one asked exceeded --mcp-max-rows"}

// LimitAppliedBytes is how many bytes Invoke adds to the answer for a
// clamped row count (zero when nothing was clamped): page fitting reserves
// them.
func (c *Call) LimitAppliedBytes() int {
	if c.limitApplied == 0 {
		return 0
	}
	return len(`,"`+limitAppliedKey+`":`) + len(strconv.Itoa(c.limitApplied))
}

// clampedRows returns the top-level row counts of an input schema: the
// integer properties clamped to --mcp-max-rows (a "limit", or a
// clamp:"rows" tag).
func clampedRows(s *Schema) []string {
	var out []string
	for _, p := range s.Properties {
		if p.Schema.clampRows {
			out = append(out, p.Name)
		}
	}
	return out
}

// clampRows lowers every row count above maxRows to it (so no tool can hand
// out more rows than --mcp-max-rows whatever its own code does) and says
// which one it lowered. Counts below the minimum never get here
// (validation refuses them, naming the range).
func clampRows(s *Schema, args json.RawMessage, maxRows int) (json.RawMessage, int) {
	names := clampedRows(s)
	if maxRows <= 0 || len(names) == 0 {
		return args, 0
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args, 0
	}
	clamped := false
	for _, name := range names {
		var n int64
		if raw, ok := m[name]; !ok || json.Unmarshal(raw, &n) != nil || n <= int64(maxRows) {
			continue
		}
		m[name] = json.RawMessage(strconv.Itoa(maxRows))
		clamped = true
	}
	if !clamped {
		return args, 0
	}
	out, err := json.Marshal(m)
	if err != nil {
		return args, 0
	}
	return out, maxRows
}

// withLimitApplied appends limit_applied to a serialized answer object,
// leaving every other byte as it was.
func withLimitApplied(b []byte, applied int) ([]byte, error) {
	b = bytes.TrimRight(b, " \t\r\n")
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("reporting limit_applied: the answer is not a JSON object")
	}
	v := strconv.Itoa(applied)
	out := make([]byte, 0, len(b)+len(limitAppliedKey)+len(v)+4)
	out = append(out, b[:len(b)-1]...)
	if len(bytes.TrimSpace(b[1:len(b)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"`+limitAppliedKey+`":`...)
	out = append(out, v...)
	return append(out, '}'), nil
}
