package host

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sipnab/sipnab/sdk"
)

// testBundle is a bundle of small tools exercising the central exit.
type testBundle struct {
	id      string
	release chan struct{} // slow blocks until closed
	started chan struct{} // slow signals it started
	// rev and text back the live test resource.
	rev  atomic.Uint64
	text atomic.Value
}

type echoIn struct {
	Text string `json:"text" desc:"text to echo"`
	N    int    `json:"n,omitempty" desc:"repeat count"`
	// Password is a secret argument: its value never reaches the audit
	// record (secretArg).
	Password string `json:"password,omitempty" desc:"a secret"`
}

type echoOut struct {
	Echo string `json:"echo" desc:"the fenced text"`
	N    int    `json:"n" desc:"repeat count"`
}

type emptyIn struct{}

type sizeOut struct {
	Data string `json:"data" desc:"filler"`
}

func (b *testBundle) Info() sdk.Info {
	return sdk.Info{ID: b.id, Summary: "test tools", ByteBudget: sdk.Budget{Default: 100000, WithOutputSchemas: 100000}}
}

func (b *testBundle) Prompts() []sdk.Prompt {
	return []sdk.Prompt{
		{Name: "uses-echo", Description: "echo then slow", Tools: []string{b.id + "_echo", b.id + "_slow"}, Text: "call echo"},
		{Name: "uses-missing", Description: "needs a tool nobody has", Tools: []string{"not_compiled"}, Text: "x"},
	}
}

func (b *testBundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	cfg := struct {
		Greeting string `json:"greeting"`
	}{Greeting: "hi"}
	if err := env.Decode(&cfg); err != nil {
		return nil, err
	}
	if b.text.Load() == nil {
		b.text.Store("v0")
	}
	env.AddResource(sdk.Resource{URI: "test://" + b.id + "/live", Name: "live", Description: "a live view", MIMEType: "text/plain",
		Read: func(ctx context.Context) (sdk.ResourceContent, error) {
			return sdk.ResourceContent{Text: b.text.Load().(string)}, nil
		},
		Revision: b.rev.Load})
	env.AddResource(sdk.Resource{URI: "test://" + b.id + "/reference", Name: "reference", Description: "static text",
		Read: func(ctx context.Context) (sdk.ResourceContent, error) { return sdk.ResourceContent{Text: "ref"}, nil }})
	env.AddResourceTemplate(sdk.ResourceTemplate{URITemplate: "test://" + b.id + "/item/{id}", Name: "item", Description: "one item",
		MIMEType: "application/json",
		Read: func(ctx context.Context, uri string, vars map[string]string) (sdk.ResourceContent, error) {
			return sdk.ResourceContent{Text: `{"id":"` + vars["id"] + `"}`}, nil
		},
		Revision: b.rev.Load,
		Complete: func(ctx context.Context, variable, prefix string) []string {
			if variable != "id" {
				return nil
			}
			var out []string
			for i := 0; i < 150; i++ {
				if v := fmt.Sprintf("call-%03d", i); strings.HasPrefix(v, prefix) {
					out = append(out, v)
				}
			}
			return out
		}})
	ro := sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld}
	return []sdk.Tool{
		sdk.NewTool(sdk.Descriptor{Name: b.id + "_echo", Description: "echo fenced text", Annotations: ro},
			func(ctx context.Context, c *sdk.Call, in echoIn) (echoOut, error) {
				if in.Text == "panic" {
					panic("boom")
				}
				if in.Text == "progress" {
					c.Progress(ctx, 1, 2, "half")
					c.Progress(ctx, 2, 2, "")
				}
				if in.Text == "bad" {
					return echoOut{}, sdk.InvalidParams("text %q is refused", in.Text)
				}
				return echoOut{Echo: c.Fence(cfg.Greeting + " " + in.Text), N: in.N}, nil
			}),
		sdk.NewTool(sdk.Descriptor{Name: b.id + "_slow", Description: "blocks until released", Annotations: ro},
			func(ctx context.Context, c *sdk.Call, in emptyIn) (echoOut, error) {
				if b.started != nil {
					b.started <- struct{}{}
				}
				if b.release != nil {
					select {
					case <-b.release:
					case <-ctx.Done():
					}
				}
				return echoOut{Echo: "done"}, nil
			}),
		sdk.NewTool(sdk.Descriptor{Name: b.id + "_big", Description: "answers n bytes", Annotations: ro},
			func(ctx context.Context, c *sdk.Call, in echoIn) (sizeOut, error) {
				return sizeOut{Data: strings.Repeat("x", in.N)}, nil
			}),
		sdk.NewTool(sdk.Descriptor{Name: b.id + "_doc", Description: "answers a rendered document", Annotations: ro, Renders: true},
			func(ctx context.Context, c *sdk.Call, in emptyIn) (sizeOut, error) {
				c.ReplyText("# report\nclean")
				c.MarkFenced()
				return sizeOut{}, nil
			}),
		sdk.NewTool(sdk.Descriptor{Name: b.id + "_write", Description: "changes state",
			Annotations: sdk.Annotations{Effect: sdk.Writes, Idempotency: sdk.Idempotent, World: sdk.ClosedWorld}},
			func(ctx context.Context, c *sdk.Call, in emptyIn) (sizeOut, error) {
				return sizeOut{Data: "written"}, nil
			}),
	}, nil
}

// stdioSession runs host.Run over in-memory pipes and speaks newline JSON-RPC.
type stdioSession struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Reader
	stderr *syncBuffer
	done   chan int
	mu     sync.Mutex
	nextID int
	resp   map[string]chan map[string]any
	extra  []string // non-response lines
	notes  chan map[string]any
	// initialized is the answer to initialize.
	initialized map[string]any
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startStdio(t *testing.T, args []string, bundles []sdk.Bundle, env []string) *stdioSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioSession{t: t, in: inW, out: bufio.NewReader(outR), stderr: &syncBuffer{}, done: make(chan int, 1),
		resp: map[string]chan map[string]any{}, notes: make(chan map[string]any, 64)}
	go func() {
		code := Run(context.Background(), args, bundles, IO{Stdin: inR, Stdout: outW, Stderr: s.stderr, Env: env})
		_ = outW.Close()
		s.done <- code
	}()
	go func() {
		for {
			line, err := s.out.ReadString('\n')
			if err != nil {
				s.mu.Lock()
				for _, ch := range s.resp {
					close(ch)
				}
				s.resp = map[string]chan map[string]any{}
				s.mu.Unlock()
				return
			}
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				s.mu.Lock()
				s.extra = append(s.extra, line)
				s.mu.Unlock()
				continue
			}
			if _, isNote := m["method"]; isNote && m["id"] == nil {
				s.notes <- m
				continue
			}
			id := fmt.Sprint(m["id"])
			s.mu.Lock()
			ch, ok := s.resp[id]
			delete(s.resp, id)
			if !ok {
				s.extra = append(s.extra, line)
			}
			s.mu.Unlock()
			if ok {
				ch <- m
			}
		}
	}()
	t.Cleanup(func() { _ = inW.Close() })
	s.initialized = s.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	s.notify("notifications/initialized")
	return s
}

func (s *stdioSession) send(v any) {
	b, _ := json.Marshal(v)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatalf("writing request: %v", err)
	}
}

func (s *stdioSession) notify(method string) {
	s.send(map[string]any{"jsonrpc": "2.0", "method": method})
}

// callAsync sends a request and returns the channel its response arrives on.
func (s *stdioSession) callAsync(method string, params any) <-chan map[string]any {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	ch := make(chan map[string]any, 1)
	s.resp[fmt.Sprint(id)] = ch
	s.mu.Unlock()
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return ch
}

func (s *stdioSession) call(method string, params any) map[string]any {
	s.t.Helper()
	select {
	case m, ok := <-s.callAsync(method, params):
		if !ok {
			s.t.Fatalf("%s: server closed; stderr:\n%s", method, s.stderr.String())
		}
		return m
	case <-time.After(20 * time.Second):
		s.t.Fatalf("%s: no response; stderr:\n%s", method, s.stderr.String())
	}
	return nil
}

func (s *stdioSession) tool(name string, args any) map[string]any {
	s.t.Helper()
	return s.call("tools/call", map[string]any{"name": name, "arguments": args})
}

func errCode(m map[string]any) (int, string) {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0, ""
	}
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	return int(code), msg
}

func (s *stdioSession) close() int {
	_ = s.in.Close()
	select {
	case code := <-s.done:
		return code
	case <-time.After(10 * time.Second):
		s.t.Fatal("server did not exit after stdin closed")
	}
	return -1
}

func newTestLogger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "test", Output: io.Discard})
}

func callReq(name string, args map[string]any) mcp.CallToolRequest {
	var r mcp.CallToolRequest
	r.Params.Name = name
	r.Params.Arguments = args
	return r
}

// refusalOf reads a tool execution error (a result with isError): the
// code of its structured body and its text block; "" when m is no such
// result. It checks the body's message is the text block. The body is
// structuredContent, or _meta's sipnab.dev/error for a tool that
// advertises an outputSchema (refusalOfIn says which).
func refusalOf(t *testing.T, m map[string]any) (kind, text string) {
	t.Helper()
	kind, text, _ = refusalOfIn(t, m)
	return kind, text
}

func refusalOfIn(t *testing.T, m map[string]any) (kind, text, in string) {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	if res == nil || res["isError"] != true {
		return "", "", ""
	}
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		t.Errorf("isError result of %d blocks, want 1: %v", len(content), res)
		return "", "", ""
	}
	text, _ = content[0].(map[string]any)["text"].(string)
	sc, _ := res["structuredContent"].(map[string]any)
	in = "structuredContent"
	if meta, _ := res["_meta"].(map[string]any); meta[errorMetaKey] != nil {
		if sc != nil {
			t.Errorf("error body in both structuredContent and _meta: %v", res)
		}
		sc, _ = meta[errorMetaKey].(map[string]any)
		in = "_meta"
	}
	body, _ := sc["error"].(map[string]any)
	if body == nil || body["message"] != text {
		t.Errorf("error body %v: want {error:{code,message}} with the text block %q", sc, text)
	}
	kind, _ = body["code"].(string)
	return kind, text, in
}
