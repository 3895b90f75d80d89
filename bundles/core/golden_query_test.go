package core

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sipnab/sipnab/sdk"
)

// updateGolden rewrites the golden transcripts under testdata/golden:
//
//	go test ./bundles/core -run TestQueryToolTranscripts -update
var updateGolden = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// lqTranscript is one tools/call exchange as a client sees it.
type lqTranscript struct {
	Request struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Method  string `json:"method"`
		Params  struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	} `json:"request"`
	Result lqResult `json:"result"`
}

type lqResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

// lqResultOf shapes a reply the way the host's central exit does
// (host/server.go): the answer block, any extra blocks, the provenance
// note last when the answer carries fenced text, and structuredContent
// parsed from the first block when it is a JSON object.
func lqResultOf(r sdk.Reply) lqResult {
	var res lqResult
	res.IsError = r.IsError
	blocks := r.Blocks
	if r.Fenced {
		blocks = append(blocks[:len(blocks):len(blocks)], sdk.ProvenanceNote)
	}
	for _, b := range blocks {
		res.Content = append(res.Content, struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", b})
	}
	if b := bytes.TrimSpace([]byte(r.Blocks[0])); len(b) > 0 && b[0] == '{' && json.Valid(b) {
		res.StructuredContent = b
	}
	return res
}

// lqInstance matches the capture instance, minted at random per capture.
var lqInstance = regexp.MustCompile(`(\\?"instance\\?": ?\\?")[0-9a-f]+`)

// lqCursor matches a sealed cursor: it carries the instance and a
// signature under a key drawn per process.
var lqCursor = regexp.MustCompile(`(\\?"next_cursor\\?": ?\\?")[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// TestQueryToolTranscripts records one call of each query tool on a small
// capture (sip-488-codec-reject.pcapng: OPTIONS pings and an INVITE
// challenged, then refused 488) as a transcript: the request and the full
// result, fenced text and the provenance note as the last block included.
// The capture instance is written as "<instance>", a next_cursor (sealed
// with it) as "<cursor>".
func TestQueryToolTranscripts(t *testing.T) {
	tools := lqTools(t, lqPublic(t, "sip-488-codec-reject.pcapng"))
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"list_dialogs", map[string]any{"limit": 3}},
		{"find_problems", map[string]any{}},
		{"aggregate_dialogs", map[string]any{"group_by": "ua"}},
		{"search_messages", map[string]any{"query": "linphone", "limit": 2}},
		{"get_dialog", map[string]any{"call_id": "NA4y5nr9Jk", "max_messages": 3}},
	}
	for i, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			r, err := lqInvoke(t, tools, tc.tool, tc.args, sdk.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			var tr lqTranscript
			tr.Request.JSONRPC, tr.Request.ID, tr.Request.Method = "2.0", i+1, "tools/call"
			tr.Request.Params.Name, tr.Request.Params.Arguments = tc.tool, tc.args
			tr.Result = lqResultOf(r)
			got, err := json.MarshalIndent(tr, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = lqInstance.ReplaceAll(got, []byte(`${1}<instance>`))
			got = lqCursor.ReplaceAll(got, []byte(`${1}<cursor>`))
			got = append(got, '\n')

			last := tr.Result.Content[len(tr.Result.Content)-1].Text
			if !r.Fenced || last != sdk.ProvenanceNote || !bytes.Contains(got, []byte(sdk.FenceOpen)) {
				t.Errorf("fenced %v, last block %.40q: want fenced text and the provenance note last", r.Fenced, last)
			}
			path := filepath.Join("testdata", "golden", tc.tool+".json")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("transcript differs from %s (run with -update after checking the change):\n%s", path, got)
			}
		})
	}
}
