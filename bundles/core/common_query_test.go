package core

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// Helpers of the list_dialogs, find_problems, aggregate_dialogs,
// search_messages and get_dialog tests (prefix lq).

// lqTruth is the part of truth/<capture>.json these tests read: what tshark
// 4.0.17 reports about a capture.
type lqTruth struct {
	File struct {
		FileType string `json:"file_type"`
	} `json:"file"`
	SIP struct {
		Methods map[string]int `json:"methods"`
		CallIDs struct {
			Count  int      `json:"count"`
			Values []string `json:"values"`
		} `json:"call_ids"`
		Dialogs []lqTruthDialog `json:"dialogs"`
	} `json:"sip"`
}

type lqTruthDialog struct {
	CallID            string         `json:"call_id"`
	Messages          int            `json:"messages"`
	Requests          map[string]int `json:"requests"`
	Responses         map[string]int `json:"responses"`
	InviteFinalStatus *int           `json:"invite_final_status"`
}

// lqPcapCaptures are the public captures in a format the engine reads
// (NetMon files are refused by design) that hold SIP dialogs.
func lqPcapCaptures(t testing.TB) []string {
	t.Helper()
	names, err := testcap.PublicNames()
	if err != nil || len(names) == 0 {
		t.Fatalf("listing public captures: %v", err)
	}
	var out []string
	for _, n := range names {
		tr := testcap.LoadTruth[lqTruth](t, n)
		if tr.File.FileType == "netmon2" || len(tr.SIP.Dialogs) == 0 {
			continue
		}
		out = append(out, n)
	}
	return out
}

// lqLoad loads capture files whole.
func lqLoad(t testing.TB, cfg engine.Config, paths ...string) *engine.Capture {
	t.Helper()
	return testengine.Load(t, cfg, paths...)
}

// lqPublic loads one public capture whole.
func lqPublic(t testing.TB, name string) *engine.Capture {
	t.Helper()
	return lqLoad(t, engine.Config{Node: "test-node"}, testcap.Public(name))
}

// lqTools provisions the bundle on a capture.
func lqTools(t testing.TB, c *engine.Capture) map[string]sdk.Tool {
	t.Helper()
	tools, err := Bundle{}.Provision(context.Background(), sdk.NewEnv(sdk.EnvOptions{Services: []any{c}}))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sdk.Tool{}
	for _, tl := range tools {
		out[tl.Name] = tl
	}
	return out
}

// lqInvoke calls a tool through its public path (argument validation,
// decoding, handler, serialization, projection).
func lqInvoke(t testing.TB, tools map[string]sdk.Tool, name string, args any, l sdk.Limits) (sdk.Reply, error) {
	t.Helper()
	tl, ok := tools[name]
	if !ok {
		t.Fatalf("tool %s not provisioned", name)
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Invoke(context.Background(), b, l)
}

// lqCall calls a tool that must succeed and decodes its answer into out.
func lqCall(t testing.TB, tools map[string]sdk.Tool, name string, args any, out any) sdk.Reply {
	t.Helper()
	r, err := lqInvoke(t, tools, name, args, sdk.DefaultLimits())
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if err := json.Unmarshal([]byte(r.Blocks[0]), out); err != nil {
		t.Fatalf("%s: decoding %s: %v", name, r.Blocks[0], err)
	}
	return r
}

// lqCode is the JSON-RPC code of a tool error (0 when none).
func lqCode(err error) int {
	if err == nil {
		return 0
	}
	return sdk.AsError(err).Code
}

// lqRow is a dialog row as the wire shows it; pointers tell absent from
// zero.
type lqRow struct {
	CallID  string `json:"call_id"`
	Matched []struct {
		Alias    string `json:"alias"`
		Clause   string `json:"clause"`
		Measured string `json:"measured"`
	} `json:"matched"`
	State           *string  `json:"state"`
	Method          *string  `json:"method"`
	MsgCount        *int     `json:"msg_count"`
	FromUser        *string  `json:"from_user"`
	ToUser          *string  `json:"to_user"`
	CreatedAt       *string  `json:"created_at"`
	FinalStatusCode *int     `json:"final_status_code"`
	DurationSec     *float64 `json:"duration_sec"`
}

// lqPage is a list_dialogs / find_problems answer.
type lqPage struct {
	Dialogs  []lqRow `json:"dialogs"`
	Returned int     `json:"returned"`
	Total    *int    `json:"total_matched"`
	ByMethod []struct {
		Method string `json:"method"`
		Count  int    `json:"count"`
	} `json:"by_method"`
	Truncated       *bool           `json:"truncated"`
	NextCursor      *string         `json:"next_cursor"`
	SourceExhausted *bool           `json:"source_exhausted"`
	StoppedEarly    *bool           `json:"source_stopped_early"`
	Identity        json.RawMessage `json:"capture_identity"`
	SchemaVersion   int             `json:"schema_version"`
}

// lqPageAll pages a list tool to its end with the given arguments (cursor
// added) and returns every row in order with each page's answer. It checks
// the page invariants on the way.
func lqPageAll(t testing.TB, tools map[string]sdk.Tool, name string, args map[string]any, l sdk.Limits) ([]lqRow, []lqPage) {
	t.Helper()
	var rows []lqRow
	var pages []lqPage
	a := map[string]any{}
	for k, v := range args {
		a[k] = v
	}
	for n := 0; ; n++ {
		r, err := lqInvoke(t, tools, name, a, l)
		if err != nil {
			t.Fatalf("%s page %d: %v", name, n, err)
		}
		var p lqPage
		if err := json.Unmarshal([]byte(r.Blocks[0]), &p); err != nil {
			t.Fatal(err)
		}
		if p.Returned != len(p.Dialogs) {
			t.Fatalf("page %d: returned %d, %d rows", n, p.Returned, len(p.Dialogs))
		}
		if p.Total == nil || p.Truncated == nil || p.SourceExhausted == nil || p.SchemaVersion != 1 || len(p.Identity) == 0 {
			t.Fatalf("page %d: envelope incomplete: %s", n, r.Blocks[0])
		}
		rows = append(rows, p.Dialogs...)
		pages = append(pages, p)
		if p.NextCursor == nil {
			if *p.Truncated {
				t.Fatalf("page %d: truncated with no next_cursor", n)
			}
			return rows, pages
		}
		if !*p.Truncated {
			t.Fatalf("page %d: next_cursor but truncated false", n)
		}
		a["cursor"] = *p.NextCursor
		if n > 100000 {
			t.Fatal("paging does not end")
		}
	}
}

// lqIDs returns the rows' Call-IDs sorted and fails on a repeat.
func lqIDs(t testing.TB, rows []lqRow) []string {
	t.Helper()
	seen := map[string]bool{}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if seen[r.CallID] {
			t.Fatalf("Call-ID %q returned twice", r.CallID)
		}
		seen[r.CallID] = true
		out = append(out, r.CallID)
	}
	slices.Sort(out)
	return out
}

func lqSorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
