package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two protocol eras every client test runs in.
const (
	eraLegacy = "2025-11-25"
	eraModern = "2026-07-28"
)

// session is what a test needs from either client library.
type session interface {
	protocolVersion() string
	instructions() string
	tools(ctx context.Context) ([]string, error)
	call(ctx context.Context, name string, args map[string]any) (texts []string, structured any, err error)
	// result is call with the result's isError.
	result(ctx context.Context, name string, args map[string]any) (r callResult, err error)
	close()
}

// callResult is a tools/call result as a client library hands it over.
type callResult struct {
	texts      []string
	structured any
	meta       map[string]any
	isError    bool
}

// --- mcp-go ---

type mcpgoSession struct{ c *mcpclient.Client }

func (s mcpgoSession) protocolVersion() string { return s.c.ProtocolVersion() }
func (s mcpgoSession) instructions() string    { return "" }
func (s mcpgoSession) close()                  { _ = s.c.Close() }

func (s mcpgoSession) tools(ctx context.Context) ([]string, error) {
	r, err := s.c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

func (s mcpgoSession) call(ctx context.Context, name string, args map[string]any) ([]string, any, error) {
	r, err := s.result(ctx, name, args)
	return r.texts, r.structured, err
}

func (s mcpgoSession) result(ctx context.Context, name string, args map[string]any) (callResult, error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	r, err := s.c.CallTool(ctx, req)
	if err != nil {
		return callResult{}, err
	}
	out := callResult{structured: r.StructuredContent, isError: r.IsError}
	if r.Meta != nil {
		out.meta = r.Meta.AdditionalFields
	}
	for _, c := range r.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			out.texts = append(out.texts, tc.Text)
		}
	}
	return out, nil
}

type mcpgoInit struct {
	mcpgoSession
	instr string
}

func (s mcpgoInit) instructions() string { return s.instr }

func connectMCPGo(t *testing.T, ctx context.Context, tr transport.Interface, era string) session {
	t.Helper()
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(era))
	if err := c.Start(ctx); err != nil {
		t.Fatalf("starting mcp-go client: %v", err)
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = era
	req.Params.ClientInfo = mcpgo.Implementation{Name: "e2e-mcp-go", Version: "1"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("mcp-go initialize (%s): %v", era, err)
	}
	s := mcpgoInit{mcpgoSession{c}, res.Instructions}
	t.Cleanup(s.close)
	return s
}

// --- modelcontextprotocol/go-sdk ---

type gosdkSession struct{ cs *gosdk.ClientSession }

func (s gosdkSession) protocolVersion() string { return s.cs.InitializeResult().ProtocolVersion }
func (s gosdkSession) instructions() string    { return s.cs.InitializeResult().Instructions }
func (s gosdkSession) close()                  { _ = s.cs.Close() }

func (s gosdkSession) tools(ctx context.Context) ([]string, error) {
	r, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

func (s gosdkSession) call(ctx context.Context, name string, args map[string]any) ([]string, any, error) {
	r, err := s.result(ctx, name, args)
	return r.texts, r.structured, err
}

func (s gosdkSession) result(ctx context.Context, name string, args map[string]any) (callResult, error) {
	r, err := s.cs.CallTool(ctx, &gosdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return callResult{}, err
	}
	out := callResult{structured: r.StructuredContent, isError: r.IsError, meta: r.Meta}
	for _, c := range r.Content {
		if tc, ok := c.(*gosdk.TextContent); ok {
			out.texts = append(out.texts, tc.Text)
		}
	}
	return out, nil
}

func connectGoSDK(t *testing.T, ctx context.Context, tr gosdk.Transport, era string) session {
	t.Helper()
	c := gosdk.NewClient(&gosdk.Implementation{Name: "e2e-go-sdk", Version: "1"}, nil)
	cs, err := c.Connect(ctx, tr, &gosdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("go-sdk connect (%s): %v", era, err)
	}
	s := gosdkSession{cs}
	t.Cleanup(s.close)
	return s
}

// stdioArgs is the documented stdio command line (docs/mcp.md).
func stdioArgs() []string { return []string{"-N", "--mcp", "-I", sampleCapture()} }

// TestClientsOverStdioAndHTTPInBothEras drives the binary with both client
// libraries, over both transports, in both protocol eras, and checks the
// same capture_status answer comes back each time.
func TestClientsOverStdioAndHTTPInBothEras(t *testing.T) {
	token := "e2e-static-token-0123456789"
	srv := startHTTP(t, []string{"SIPNAB_MCP_TOKEN=" + token}, "-I", sampleCapture())
	type connector func(t *testing.T, ctx context.Context, era string) session
	connectors := map[string]connector{
		"mcp-go/stdio": func(t *testing.T, ctx context.Context, era string) session {
			tr := transport.NewStdioWithOptions(bin, os.Environ(), stdioArgs())
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
			return connectGoSDK(t, ctx, &gosdk.CommandTransport{Command: exec.Command(bin, stdioArgs()...)}, era)
		},
		"go-sdk/http": func(t *testing.T, ctx context.Context, era string) session {
			return connectGoSDK(t, ctx, &gosdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: httpClient(token), MaxRetries: -1}, era)
		},
	}
	for _, name := range []string{"mcp-go/stdio", "mcp-go/http", "go-sdk/stdio", "go-sdk/http"} {
		for _, era := range []string{eraLegacy, eraModern} {
			t.Run(name+"/"+era, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				s := connectors[name](t, ctx, era)
				if got := s.protocolVersion(); got != era {
					t.Errorf("negotiated %q, want %q", got, era)
				}
				if !strings.Contains(s.instructions(), "read-only access") {
					t.Errorf("instructions: %q", s.instructions())
				}
				names, err := s.tools(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !containsString(names, "capture_status") {
					t.Fatalf("tools/list: %v lacks capture_status", names)
				}
				st := waitLoaded(t, ctx, s)
				if st["source"] != "file" || st["name"] != "sip-rtp-g711.pcap" || st["dialog_count"] != float64(2) {
					t.Errorf("capture_status: %v", st)
				}
				_, _, err = s.call(ctx, "no_such_tool", nil)
				if err == nil || !strings.Contains(err.Error(), "not found") {
					t.Errorf("unknown tool: got %v", err)
				}
			})
		}
	}
}

// waitLoaded calls capture_status until the file is read whole, checking
// that structuredContent is the parsed text block every time.
func waitLoaded(t *testing.T, ctx context.Context, s session) map[string]any {
	t.Helper()
	for {
		texts, structured, err := s.call(ctx, "capture_status", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		var parsed map[string]any
		if err := json.Unmarshal([]byte(texts[0]), &parsed); err != nil {
			t.Fatalf("text block is not JSON: %v", err)
		}
		sb, _ := json.Marshal(structured)
		var sm map[string]any
		_ = json.Unmarshal(sb, &sm)
		if !reflect.DeepEqual(parsed, sm) {
			t.Fatalf("structuredContent %s differs from the text block %s", sb, texts[0])
		}
		if parsed["source_exhausted"] == true {
			return parsed
		}
		select {
		case <-ctx.Done():
			t.Fatal("capture never loaded")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
