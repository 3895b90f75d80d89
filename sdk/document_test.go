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
	tool := NewTool(Descriptor{Name: "x", Description: "x", Annotations: Annotations{Effect: ReadOnly, World: ClosedWorld}},
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
