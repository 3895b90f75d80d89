package tests

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The protocol versions sipnab negotiates, each pinned below.
var negotiatedVersions = []string{"2025-03-26", "2025-06-18", eraLegacy, eraModern}

// connectorsFor returns the four ways in (two client libraries, stdio and
// HTTP) to a server started with args; over HTTP with token.
func connectorsFor(t *testing.T, token string, args ...string) map[string]func(t *testing.T, ctx context.Context, era string) session {
	srv := startHTTP(t, []string{"SIPNAB_MCP_TOKEN=" + token}, args...)
	stdio := append([]string{"-N", "--mcp"}, args...)
	return map[string]func(t *testing.T, ctx context.Context, era string) session{
		"mcp-go/stdio": func(t *testing.T, ctx context.Context, era string) session {
			tr := transport.NewStdioWithOptions(bin, os.Environ(), stdio)
			if err := tr.Start(ctx); err != nil {
				t.Fatal(err)
			}
			return connectMCPGo(t, ctx, tr, era)
		},
		"mcp-go/http": func(t *testing.T, ctx context.Context, era string) session {
			tr, err := transport.NewStreamableHTTP(srv.URL+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
			if err != nil {
				t.Fatal(err)
			}
			return connectMCPGo(t, ctx, tr, era)
		},
		"go-sdk/stdio": func(t *testing.T, ctx context.Context, era string) session {
			return connectGoSDK(t, ctx, &gosdk.CommandTransport{Command: exec.Command(bin, stdio...)}, era)
		},
		"go-sdk/http": func(t *testing.T, ctx context.Context, era string) session {
			return connectGoSDK(t, ctx, &gosdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: httpClient(token), MaxRetries: -1}, era)
		},
	}
}

var clientWays = []string{"mcp-go/stdio", "mcp-go/http", "go-sdk/stdio", "go-sdk/http"}

// rpcCode is the JSON-RPC error code a client library reports for err: the
// go-sdk keeps it; mcp-go maps the standard codes to sentinel errors (and
// any other code to a bare message: 0 here).
func rpcCode(err error) int {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return int(we.Code)
	}
	for code, e := range map[int]error{-32700: mcpgo.ErrParseError, -32600: mcpgo.ErrInvalidRequest, -32601: mcpgo.ErrMethodNotFound,
		-32602: mcpgo.ErrInvalidParams, -32603: mcpgo.ErrInternalError} {
		if errors.Is(err, e) {
			return code
		}
	}
	return 0
}

// TestToolRefusalsReachTheModelAsResultsInEveryVersionE2E pins, for every
// protocol version sipnab negotiates, with both client libraries over stdio
// and HTTP, that each class of refusal (argument, missing argument, filter,
// unknown id, gate, a value outside its valid set) is a tool execution
// error: isError, the message as the one text block, and the body
// {"error": {code, message, argument?, position?, valid?}} (MCP
// 2025-11-25, tools: error handling; docs/mcp-protocol.md) as
// structuredContent; with --mcp-output-schemas, beside an advertised
// outputSchema, in _meta under sipnab.dev/error and no structuredContent
// (a client that checks an error's structuredContent against the schema
// would fail the call). An unknown tool stays a JSON-RPC error (-32602).
func TestToolRefusalsReachTheModelAsResultsInEveryVersionE2E(t *testing.T) {
	for _, mode := range []struct {
		name   string
		args   []string
		inMeta bool
	}{
		{"default", []string{"-I", sampleCapture()}, false},
		{"output-schemas", []string{"--mcp-output-schemas", "-I", sampleCapture()}, true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ways := connectorsFor(t, "e2e-errors-token-0123456789", mode.args...)
			checkToolRefusals(t, ways, mode.inMeta)
		})
	}
}

func checkToolRefusals(t *testing.T, ways map[string]func(t *testing.T, ctx context.Context, era string) session, inMeta bool) {
	refusals := []struct {
		class, tool string
		args        map[string]any
		code, arg   string
		position    bool   // a byte offset into the argument
		valid       string // one value the valid set holds
		text        string
	}{
		{"argument of the wrong type", "get_dialog", map[string]any{"call_id": 5}, "invalid_argument", "call_id", false, "", "want string, got integer"},
		{"missing argument", "get_dialog", map[string]any{}, "missing_argument", "call_id", false, "", "call_id"},
		{"filter that does not compile", "list_dialogs", map[string]any{"filter": "state == "}, "invalid_filter", "filter", true, "", "invalid filter"},
		{"unknown call_id", "get_dialog", map[string]any{"call_id": "nobody@nowhere.invalid"}, "unknown_id", "call_id", false, "", `unknown call_id "nobody@nowhere.invalid"`},
		{"gate: file tools off", "generate_repro", map[string]any{"call_id": "x", "filename": "r.xml"}, "not_enabled", "filename", false, "", "file tools are disabled"},
		{"value outside the valid set", "list_dialogs", map[string]any{"fields": []string{"nope"}}, "invalid_argument", "fields", false, "call_id", `unknown field "nope"`},
	}
	for _, way := range clientWays {
		for _, era := range negotiatedVersions {
			t.Run(way+"/"+era, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				s := ways[way](t, ctx, era)
				if got := s.protocolVersion(); got != era {
					t.Fatalf("negotiated %q, want %q", got, era)
				}
				for _, rc := range refusals {
					r, err := s.result(ctx, rc.tool, rc.args)
					if err != nil {
						t.Errorf("%s: JSON-RPC error %v (code %d), want a tool execution error", rc.class, err, rpcCode(err))
						continue
					}
					var body struct {
						Error *toolRefusal `json:"error"`
					}
					carrier := r.structured
					if inMeta {
						if r.structured != nil {
							t.Errorf("%s: structuredContent %v beside an advertised outputSchema", rc.class, r.structured)
						}
						carrier = r.meta["sipnab.dev/error"]
					}
					b, _ := json.Marshal(carrier)
					_ = json.Unmarshal(b, &body)
					switch {
					case !r.isError || body.Error == nil:
						t.Errorf("%s: isError %v, structuredContent %s; want isError with an error body", rc.class, r.isError, b)
					case len(r.texts) != 1 || r.texts[0] != body.Error.Message:
						t.Errorf("%s: text blocks %q, want the one message %q", rc.class, r.texts, body.Error.Message)
					case body.Error.Code != rc.code || body.Error.Argument != rc.arg || !strings.Contains(body.Error.Message, rc.text):
						t.Errorf("%s: body %s, want code %s argument %s saying %q", rc.class, b, rc.code, rc.arg, rc.text)
					case rc.position != (body.Error.Position != nil):
						t.Errorf("%s: position %v, want present=%v", rc.class, body.Error.Position, rc.position)
					case rc.valid != "" && !containsString(body.Error.Valid, rc.valid):
						t.Errorf("%s: valid %v lacks %q", rc.class, body.Error.Valid, rc.valid)
					}
				}
				_, err := s.result(ctx, "no_such_tool", map[string]any{})
				if err == nil || rpcCode(err) != -32602 || !strings.Contains(err.Error(), "not found") {
					t.Errorf("unknown tool: got %v (code %d), want JSON-RPC -32602 not found", err, rpcCode(err))
				}
			})
		}
	}
}

// TestRateRefusalsStayJSONRPCErrorsInEveryVersionE2E: a call over the
// per-peer rate is refused by the admission layer with JSON-RPC -32000 (the
// caller retries; it is no tool's answer), in every protocol version, with
// both libraries over stdio and HTTP. The go-sdk reports the code; mcp-go
// reports a code it does not know as a bare message.
func TestRateRefusalsStayJSONRPCErrorsInEveryVersionE2E(t *testing.T) {
	ways := connectorsFor(t, "e2e-rate-token-0123456789ab", "--mcp-rate-limit-per-peer", "1", "-I", sampleCapture())
	for _, way := range clientWays {
		for _, era := range negotiatedVersions {
			t.Run(way+"/"+era, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				s := ways[way](t, ctx, era)
				var refusal error
				for i := 0; i < 5 && refusal == nil; i++ {
					if _, err := s.result(ctx, "capture_status", map[string]any{}); err != nil {
						refusal = err
					}
				}
				if refusal == nil || !strings.Contains(refusal.Error(), "rate limited") {
					t.Fatalf("5 calls at once against 1/s: got %v, want a rate refusal", refusal)
				}
				if strings.HasPrefix(way, "go-sdk") && rpcCode(refusal) != -32000 {
					t.Errorf("code %d, want -32000", rpcCode(refusal))
				}
				time.Sleep(1100 * time.Millisecond) // the next subtest's peer starts with a full bucket
			})
		}
	}
}

// TestProtocolFaultsAreJSONRPCErrorsOnTheWire: what is no well-formed
// request of a known method stays a JSON-RPC error, with its code, over
// stdio and HTTP: text that is not JSON (-32700), an unknown method
// (-32601), an unknown tool (-32602), a batch (-32600).
func TestProtocolFaultsAreJSONRPCErrorsOnTheWire(t *testing.T) {
	faults := []struct {
		name, line string
		code       int
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":7,"method":`, -32700},
		{"unknown method", `{"jsonrpc":"2.0","id":7,"method":"no/such"}`, -32601},
		{"unknown tool", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`, -32602},
		{"batch", `[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, -32600},
	}
	t.Run("stdio", func(t *testing.T) {
		s := startRaw(t, "-N", "--mcp", "-I", sampleCapture())
		for _, f := range faults {
			s.send([]byte(f.line))
			var a struct {
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			select {
			case line := <-s.lines:
				if json.Unmarshal(line, &a) != nil || a.Error == nil || a.Error.Code != f.code {
					t.Errorf("%s: got %s, want JSON-RPC %d", f.name, line, f.code)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no answer", f.name)
			}
		}
	})
	t.Run("http", func(t *testing.T) {
		token := "e2e-faults-token-0123456789"
		srv := startHTTP(t, []string{"SIPNAB_MCP_TOKEN=" + token}, "-I", sampleCapture())
		auth := map[string]string{"Authorization": "Bearer " + token}
		resp, _ := rawPost(t, srv.URL, initBody, auth)
		hdr := map[string]string{"Authorization": "Bearer " + token, "Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": eraLegacy}
		for _, f := range faults {
			_, body := rawPost(t, srv.URL, f.line, hdr)
			m := sseAnswer(body) // an answer, or a 400's plain JSON body
			if m == nil {
				_ = json.Unmarshal([]byte(body), &m)
			}
			e, _ := m["error"].(map[string]any)
			if e == nil || e["code"] != float64(f.code) {
				t.Errorf("%s: got %s, want JSON-RPC %d", f.name, body, f.code)
			}
		}
	})
}
