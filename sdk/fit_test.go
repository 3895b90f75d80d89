package sdk

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// sentBytes is the JSON-RPC message mcp-go's stdio transport writes for a
// result: json.Marshal of the response, then a newline.
func sentBytes(t *testing.T, id any, res *mcp.CallToolResult) int {
	t.Helper()
	b, err := json.Marshal(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res))
	if err != nil {
		t.Fatal(err)
	}
	return len(b) + 1
}

// TestReplyWireBytesCoversTheSentMessage: WireBytes is never below the
// message sent (text block escaped, structuredContent beside it, the
// provenance note, the envelope with an id of up to 64 bytes, the
// resultType member) and over it by no more than WireReserve.
func TestReplyWireBytesCoversTheSentMessage(t *testing.T) {
	hostile := `{"a":"<script>&\"quoted\"\\ \u2028 é ` + strings.Repeat("x", 300) + `","b":[1,2,3]}`
	cases := []struct {
		name  string
		reply Reply
		id    any
	}{
		{"json answer with structuredContent", Reply{Blocks: []string{`{"rows":[{"k":"v"}],"n":1}`}}, int64(7)},
		{"escaped characters count twice", Reply{Blocks: []string{hostile}}, int64(123456789)},
		{"fenced answer carries the note", Reply{Blocks: []string{hostile}, Fenced: true}, "a-string-id"},
		{"document has no structuredContent", Reply{Blocks: []string{"line one\nline \"two\"\n"}, Document: true}, int64(1)},
		{"error result has no structuredContent", Reply{Blocks: []string{`{"error":{"code":-32602}}`}, IsError: true}, int64(1)},
		{"extra blocks", Reply{Blocks: []string{`{"a":1}`, "a flags block"}, Fenced: true}, strings.Repeat("i", 62)}, // 64 bytes of JSON
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.reply.Result()
			sent := sentBytes(t, tc.id, res)
			res.ResultType = "complete" // the newest protocol's member
			sentNewest := sentBytes(t, tc.id, res)
			got := tc.reply.WireBytes()
			if got < sentNewest || got < sent {
				t.Errorf("WireBytes %d below the %d (%d) bytes sent", got, sent, sentNewest)
			}
			if got-sent > WireReserve {
				t.Errorf("WireBytes %d over the %d bytes sent by more than the %d-byte reserve", got, sent, WireReserve)
			}
		})
	}
	structured := Reply{Blocks: []string{`{"a":1}`}}.Result()
	if structured.StructuredContent == nil {
		t.Error("a JSON object answer carries no structuredContent")
	}
	if doc := (Reply{Blocks: []string{`{"a":1}`}, Document: true}).Result(); doc.StructuredContent != nil {
		t.Error("a document carries structuredContent")
	}
}

type fitPage struct {
	Rows      []string `json:"rows"`
	Returned  int      `json:"returned"`
	Truncated bool     `json:"truncated"`
}

// TestFitRowsPicksTheLargestPageThatFits: the page FitRows picks fits the
// budget on the wire and one more row would not; everything is returned
// when everything fits; 0 when one row does not.
func TestFitRowsPicksTheLargestPageThatFits(t *testing.T) {
	rows := make([]string, 300)
	for i := range rows {
		// Rows of uneven sizes, with characters JSON escapes.
		rows[i] = fmt.Sprintf("row %d %s \"q\" <%d>", i, strings.Repeat("y", (i*37)%211), i)
	}
	build := func(k int) any { return fitPage{Rows: rows[:k], Returned: k, Truncated: k < len(rows)} }
	c := NewCall(DefaultLimits())
	all, _ := c.WireBytes(build(len(rows)))
	for _, budget := range []int{150, 400, 1000, 4096, 12000, 33333, all - 1, all, all + 500} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			k, err := c.FitRows(len(rows), budget, build)
			if err != nil {
				t.Fatal(err)
			}
			if k > 0 {
				if n, _ := c.WireBytes(build(k)); n > budget {
					t.Fatalf("k=%d is %d bytes on the wire, over %d", k, n, budget)
				}
			}
			if k < len(rows) {
				if n, _ := c.WireBytes(build(k + 1)); n <= budget {
					t.Fatalf("k=%d but %d rows fit too (%d bytes of %d)", k, k+1, n, budget)
				}
			}
			if budget >= all && k != len(rows) {
				t.Fatalf("everything fits in %d but k=%d", budget, k)
			}
		})
	}
	if k, _ := c.FitRows(0, 10, build); k != 0 {
		t.Errorf("no rows: k=%d", k)
	}
}

// TestFitRowsCountsTheFieldsProjection: with a projection arranged, rows
// are measured as sent (projected), so more of them fit.
func TestFitRowsCountsTheFieldsProjection(t *testing.T) {
	type row struct {
		CallID string `json:"call_id"`
		Big    string `json:"big"`
	}
	type page struct {
		Rows []row `json:"rows"`
	}
	rows := make([]row, 100)
	for i := range rows {
		rows[i] = row{CallID: fmt.Sprint(i), Big: strings.Repeat("z", 200)}
	}
	build := func(k int) any { return page{Rows: rows[:k]} }
	plain := NewCall(DefaultLimits())
	kPlain, _ := plain.FitRows(len(rows), 6000, build)
	projected := NewCall(DefaultLimits())
	if err := projected.Project("rows", []string{"call_id"}, []string{"call_id", "big"}); err != nil {
		t.Fatal(err)
	}
	kProj, _ := projected.FitRows(len(rows), 6000, build)
	if kProj <= kPlain || kProj != len(rows) {
		t.Errorf("projected rows fit %d, unprojected %d: want all %d projected", kProj, kPlain, len(rows))
	}
}

// TestFitTextCutsAtLineBoundariesAndSaysSo: a document over the budget
// keeps whole leading lines and ends with the caller's note; one that fits
// is untouched.
func TestFitTextCutsAtLineBoundariesAndSaysSo(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "line %03d: A -> B \"INVITE\"\n", i)
	}
	doc := b.String()
	c := NewCall(DefaultLimits())
	note := func(kept, total int) string { return fmt.Sprintf("[cut: %d of %d lines]", kept, total) }
	if got, cut := c.FitText(doc, 1<<20, note); cut || got != doc {
		t.Fatalf("a fitting document was changed (cut %v)", cut)
	}
	got, cut := c.FitText(doc, 4000, note)
	if !cut {
		t.Fatal("not cut")
	}
	if n := (Reply{Blocks: []string{got}, Document: true}).WireBytes(); n > 4000 {
		t.Fatalf("cut document is %d bytes on the wire, over 4000", n)
	}
	body, tail, ok := strings.Cut(got, "\n[cut: ")
	if !ok || !strings.HasPrefix(doc, body) || !strings.HasSuffix(body, "\n") && body != "" {
		t.Fatalf("not a whole-line prefix plus the note:\n%s", got)
	}
	kept := strings.Count(body, "\n")
	if want := fmt.Sprintf("%d of 400 lines]\n", kept); tail != want {
		t.Errorf("note tail %q, want %q", tail, want)
	}
	if kept < 50 {
		t.Errorf("only %d lines kept in 4000 bytes", kept)
	}
}

// TestFitPageRefusesWhenOneRowDoesNotFit: a page that cannot hold one row
// is refused naming the cap in force and the bytes one row needs; a
// negative max_response_bytes is refused; otherwise FitPage is FitRows
// under the lower of the two caps.
func TestFitPageRefusesWhenOneRowDoesNotFit(t *testing.T) {
	rows := []string{strings.Repeat("r", 400), "b", "c"}
	build := func(k int) any { return fitPage{Rows: rows[:k], Returned: k} }
	server := DefaultLimits()
	server.MaxResponseBytes = 5000
	cases := []struct {
		name      string
		requested int
		want      string
		k         int
	}{
		{"everything fits the server's cap", 0, "", 3},
		{"a caller's cap above the server's is the server's", 1 << 20, "", 3},
		{"a caller's cap too small", 300, "max_response_bytes 300 cannot hold one row", 0},
		{"negative", -1, "max_response_bytes must be positive", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := NewCall(server).FitPage(len(rows), tc.requested, "row", build)
			if tc.want == "" {
				if err != nil || k != tc.k {
					t.Fatalf("k=%d err=%v, want %d rows", k, err, tc.k)
				}
				return
			}
			if err == nil || AsError(err).Code != CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err=%v, want -32602 %q", err, tc.want)
			}
		})
	}
	small := DefaultLimits()
	small.MaxResponseBytes = 300
	if _, err := NewCall(small).FitPage(len(rows), 0, "row", build); err == nil || !strings.Contains(err.Error(), "--mcp-max-response-bytes 300 cannot hold one row") {
		t.Errorf("server cap too small: %v", err)
	}
}

// TestWireEstimateEqualsTheSerializedSize: the single-pass estimate the
// fitting uses equals the serialized size for answers json.Marshal wrote
// and for documents with every character class JSON escapes (quotes,
// controls, HTML characters, U+2028, invalid UTF-8, multi-byte text).
func TestWireEstimateEqualsTheSerializedSize(t *testing.T) {
	nasty := "a\"b\\c\nd\re\tf\bg\fh\x01i<j>k&l\u2028m\u2029n\xffo é 漢字 🎉"
	answer, err := json.Marshal(map[string]any{"s": nasty, "rows": []string{nasty, "plain"}, "n": 3})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		reply Reply
	}{
		{"answer with structuredContent", Reply{Blocks: []string{string(answer)}}},
		{"fenced answer and an extra block", Reply{Blocks: []string{string(answer), nasty}, Fenced: true}},
		{"document", Reply{Blocks: []string{"doc " + nasty + "\n```\ncode\n```\n"}, Document: true}},
		{"error result", Reply{Blocks: []string{string(answer)}, IsError: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := tc.reply.wireEstimate(), tc.reply.WireBytes(); got != want {
				t.Errorf("estimate %d, serialized %d", got, want)
			}
		})
	}
}
