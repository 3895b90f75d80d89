package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/sdk"
)

// stdioTranscript runs the binary over stdio, sends each request line,
// closes stdin and returns stdout and stderr.
func stdioTranscript(t *testing.T, env []string, args []string, lines ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	in, _ := cmd.StdinPipe()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		io.WriteString(in, l+"\n")
	}
	// Give the server the time to answer every request before EOF ends it.
	time.Sleep(300 * time.Millisecond)
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("sipnab did not exit after stdin closed")
	}
	return out.String(), errb.String()
}

func rpc(id int, method string, params any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return string(b)
}

func initLines(version string) []string {
	return []string{
		rpc(1, "initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "e2e", "version": "1"}}),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}
}

// TestStdoutCarriesOnlyJSONRPC: with every log level on, stdout holds
// nothing but JSON-RPC messages, and the logs went to stderr.
func TestStdoutCarriesOnlyJSONRPC(t *testing.T) {
	lines := append(initLines("2025-11-25"),
		rpc(2, "tools/list", map[string]any{}),
		rpc(3, "tools/call", map[string]any{"name": "capture_status", "arguments": map[string]any{}}),
		rpc(4, "tools/call", map[string]any{"name": "nope", "arguments": map[string]any{}}),
		rpc(5, "tools/call", map[string]any{"name": "capture_status", "arguments": "not an object"}),
		rpc(6, "prompts/list", map[string]any{}),
		`this is not json`,
	)
	stdout, stderr := stdioTranscript(t, []string{"SIPNAB_LOG=trace"}, stdioArgs(), lines...)
	n := 0
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		n++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Errorf("stdout line %d is not JSON-RPC: %q", n, sc.Text())
		}
	}
	if n < 6 {
		t.Errorf("got %d JSON-RPC lines on stdout, want at least 6:\n%s", n, stdout)
	}
	for _, want := range []string{"serving MCP over stdio", `"@module":"sipnab.mcp_audit"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// walkSchema visits every schema node of a JSON schema document.
func walkSchema(path string, v any, fn func(path string, node map[string]any)) {
	node, ok := v.(map[string]any)
	if !ok {
		return
	}
	fn(path, node)
	for _, key := range []string{"properties", "$defs", "definitions"} {
		if m, ok := node[key].(map[string]any); ok {
			for name, sub := range m {
				walkSchema(path+"/"+key+"/"+name, sub, fn)
			}
		}
	}
	for _, key := range []string{"oneOf", "anyOf", "allOf"} {
		if l, ok := node[key].([]any); ok {
			for i, sub := range l {
				walkSchema(fmt.Sprintf("%s/%s/%d", path, key, i), sub, fn)
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if sub, ok := node[key]; ok {
			walkSchema(path+"/"+key, sub, fn)
		}
	}
}

func liveToolsList(t *testing.T, args ...string) []json.RawMessage {
	t.Helper()
	lines := append(initLines("2025-11-25"), rpc(2, "tools/list", map[string]any{}))
	stdout, stderr := stdioTranscript(t, nil, append(stdioArgs(), args...), lines...)
	for _, l := range strings.Split(stdout, "\n") {
		var m struct {
			ID     int `json:"id"`
			Result struct {
				Tools []json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.ID == 2 {
			if len(m.Result.Tools) == 0 {
				t.Fatal("tools/list is empty")
			}
			return m.Result.Tools
		}
	}
	t.Fatalf("no tools/list answer; stderr:\n%s", stderr)
	return nil
}

// TestNoInputSchemaAdvertisesASpellingAStrictClientMayRefuse reads
// tools/list off the live wire and checks every input schema: an object,
// no type union anywhere, no bare true/false schema but the
// additionalProperties false every object carries (an unknown argument is
// refused), every property typed and described.
func TestNoInputSchemaAdvertisesASpellingAStrictClientMayRefuse(t *testing.T) {
	for _, extra := range [][]string{nil, {"--mcp-output-schemas"}} {
		for _, raw := range liveToolsList(t, extra...) {
			var tool struct {
				Name         string          `json:"name"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			}
			if err := json.Unmarshal(raw, &tool); err != nil {
				t.Fatal(err)
			}
			var schema any
			if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
				t.Fatalf("%s: %v", tool.Name, err)
			}
			root, ok := schema.(map[string]any)
			if !ok || root["type"] != "object" {
				t.Errorf("%s: input schema is not an object schema: %s", tool.Name, tool.InputSchema)
				continue
			}
			walkSchema("#", schema, func(path string, node map[string]any) {
				switch ty := node["type"].(type) {
				case string:
				case nil:
					t.Errorf("%s %s: no type", tool.Name, path)
				default:
					t.Errorf("%s %s: type %v is a union", tool.Name, path, ty)
				}
				for _, key := range []string{"properties", "items", "additionalProperties"} {
					if b, isBool := node[key].(bool); isBool && (key != "additionalProperties" || b) {
						t.Errorf("%s %s/%s: bare %v schema", tool.Name, path, key, b)
					}
				}
				if _, isObject := node["properties"]; isObject && node["additionalProperties"] != false {
					t.Errorf("%s %s: additionalProperties %v, want false", tool.Name, path, node["additionalProperties"])
				}
				if props, ok := node["properties"].(map[string]any); ok {
					for name, p := range props {
						pm, _ := p.(map[string]any)
						if d, _ := pm["description"].(string); strings.TrimSpace(d) == "" {
							t.Errorf("%s %s/properties/%s: no description", tool.Name, path, name)
						}
					}
				}
			})
			if len(extra) > 0 && len(tool.OutputSchema) == 0 && !rendersDocuments(t, tool.Name) {
				t.Errorf("%s: no outputSchema with --mcp-output-schemas", tool.Name)
			}
			if len(extra) == 0 && len(tool.OutputSchema) > 0 {
				t.Errorf("%s: outputSchema sent by default", tool.Name)
			}
		}
	}
}

// TestByteBudgetsHoldOnTheWire sums the compact bytes of each live
// tools/list entry per bundle and compares them with the registry's
// measurement and each bundle's budget.
func TestByteBudgetsHoldOnTheWire(t *testing.T) {
	reg := registry(t)
	for _, withOut := range []bool{false, true} {
		var extra []string
		if withOut {
			extra = []string{"--mcp-output-schemas"}
		}
		perBundle := map[string]int{}
		for _, raw := range liveToolsList(t, extra...) {
			var c bytes.Buffer
			if err := json.Compact(&c, raw); err != nil {
				t.Fatal(err)
			}
			var tool struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(raw, &tool)
			_, bundle, ok := reg.Tool(tool.Name)
			if !ok {
				t.Errorf("live tool %s is not in the registry", tool.Name)
			}
			perBundle[bundle] += c.Len()
		}
		for _, b := range reg.Bundles() {
			budget := b.Info.ByteBudget.Default
			if withOut {
				budget = b.Info.ByteBudget.WithOutputSchemas
			}
			if got, want := perBundle[b.Info.ID], b.Bytes(withOut); got != want {
				t.Errorf("%s (output schemas %v): wire bytes %d, registry measured %d", b.Info.ID, withOut, got, want)
			}
			if perBundle[b.Info.ID] > budget {
				t.Errorf("%s (output schemas %v): %d bytes over budget %d", b.Info.ID, withOut, perBundle[b.Info.ID], budget)
			}
		}
	}
	_ = sdk.ProvenanceNote
}

// TestToolsListFollowsBundleOrder: tools/list lists bundles in bundles/all
// order, each bundle's tools by name, as the registry does.
func TestToolsListFollowsBundleOrder(t *testing.T) {
	var got []string
	for _, raw := range liveToolsList(t) {
		var tool struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &tool)
		got = append(got, tool.Name)
	}
	want := registry(t).Names()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("tools/list order:\n got %v\nwant %v", got, want)
	}
}
