package sdk

import (
	"context"
	"encoding/json"
	"testing"
)

// TestReplyTextMarksADocument: a JSON object rendered with ReplyText (a
// document in another schema, such as yang-json) is marked as a document,
// so the host attaches no structuredContent; the answer type is not.
func TestReplyTextMarksADocument(t *testing.T) {
	type out struct {
		A int `json:"a" desc:"a"`
	}
	type in struct {
		Doc bool `json:"doc,omitempty" desc:"reply with a document"`
	}
	tool := NewTool(Descriptor{Name: "x", Description: "x", Annotations: Annotations{Effect: ReadOnly, World: ClosedWorld}, Renders: true},
		func(ctx context.Context, c *Call, in in) (out, error) {
			if in.Doc {
				c.ReplyText(`{"module:report":{"a":"1"}}`)
				c.AddBlock(`{"module:source":{}}`)
			}
			return out{A: 1}, nil
		})
	for _, tc := range []struct {
		args     string
		document bool
		first    string
	}{
		{`{}`, false, `{"a":1}`},
		{`{"doc":true}`, true, `{"module:report":{"a":"1"}}`},
	} {
		r, err := tool.Invoke(context.Background(), json.RawMessage(tc.args), DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if r.Document != tc.document || r.Blocks[0] != tc.first {
			t.Errorf("%s: got document %v first %s, want %v %s", tc.args, r.Document, r.Blocks[0], tc.document, tc.first)
		}
	}
}

// TestADocumentToolAdvertisesNoOutputSchema: a tool that may answer with a
// document advertises no outputSchema even with --mcp-output-schemas (a
// document has no structuredContent, and MCP requires conforming
// structured content whenever a schema is given); a tool that never
// renders advertises its own; and a tool that renders without declaring
// Renders fails the call instead of breaking the advertised schema.
func TestADocumentToolAdvertisesNoOutputSchema(t *testing.T) {
	type out struct {
		A int `json:"a" desc:"a"`
	}
	type in struct{}
	mk := func(renders, render bool) Tool {
		return NewTool(Descriptor{Name: "x", Description: "x", Annotations: Annotations{Effect: ReadOnly, World: ClosedWorld}, Renders: renders},
			func(ctx context.Context, c *Call, _ in) (out, error) {
				if render {
					c.ReplyText("# a document")
				}
				return out{A: 1}, nil
			})
	}
	for _, tc := range []struct {
		name            string
		renders, render bool
		wantSchema      bool
		wantErr         bool
	}{
		{"answer type only", false, false, true, false},
		{"declared document tool", true, true, false, false},
		{"declared, answering json", true, false, false, false},
		{"undeclared document", false, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := mk(tc.renders, tc.render)
			if got := len(tool.Wire(true).RawOutputSchema) > 0; got != tc.wantSchema {
				t.Errorf("outputSchema advertised %v, want %v", got, tc.wantSchema)
			}
			if len(tool.Wire(false).RawOutputSchema) > 0 {
				t.Errorf("outputSchema advertised without --mcp-output-schemas")
			}
			if tool.OutputSchema() == nil {
				t.Errorf("no output schema for the docs")
			}
			_, err := tool.Invoke(context.Background(), json.RawMessage(`{}`), DefaultLimits())
			if got := err != nil; got != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err != nil && AsError(err).Code != CodeInternal {
				t.Errorf("code %d, want %d", AsError(err).Code, CodeInternal)
			}
		})
	}
}
