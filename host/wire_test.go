package host

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

func TestCheckEnvelopeRefusesWhatIsNoSingleRequest(t *testing.T) {
	for _, tc := range []struct {
		name, msg   string
		wantRefused string // "" passes
		wantRequest bool
	}{
		{"request with integer id passes", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, "", true},
		{"request with string id passes", `{"jsonrpc":"2.0","id":"a","method":"ping"}`, "", true},
		{"request with negative id passes", ` {"jsonrpc":"2.0","id":-1,"method":"ping"}`, "", true},
		{"notification passes", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", false},
		{"client response passes", `{"jsonrpc":"2.0","id":{"x":1},"result":{}}`, "", false},
		{"not json passes to the parse error", `{"jsonrpc":`, "", false},
		{"array that is not json passes to the parse error", `[{"jsonrpc"`, "", false},
		{"batch refused", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "batches are not supported", false},
		{"empty batch refused", `[]`, "batches are not supported", false},
		{"string refused", `"ping"`, "got a string", false},
		{"number refused", `42`, "got a number", false},
		{"object id refused", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "the request id is an object", false},
		{"array id refused", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, "the request id is an array", false},
		{"boolean id refused", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, "the request id is a boolean", false},
		{"null id refused", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, "the request id is null", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, r := checkEnvelope([]byte(tc.msg))
			switch {
			case tc.wantRefused == "" && r != nil:
				t.Fatalf("refused: %+v", r)
			case tc.wantRefused != "" && r == nil:
				t.Fatal("passed, want refused")
			case r != nil:
				if r.Code != -32600 || !strings.Contains(r.Message, tc.wantRefused) {
					t.Errorf("got %d %q, want -32600 containing %q", r.Code, r.Message, tc.wantRefused)
				}
				var m struct {
					ID    json.RawMessage `json:"id"`
					Error struct{ Code int }
				}
				if err := json.Unmarshal(r.wire(), &m); err != nil || string(m.ID) != "null" || m.Error.Code != -32600 {
					t.Errorf("wire %s: want id null, code -32600", r.wire())
				}
			}
			if env.request != tc.wantRequest {
				t.Errorf("request %v, want %v", env.request, tc.wantRequest)
			}
		})
	}
}

// stream is a reader of n bytes of filler between a prefix and a suffix,
// so a 50 MB line is never held in memory.
type stream struct {
	prefix, suffix []byte
	n              int64
}

func (s *stream) Read(p []byte) (int, error) {
	switch {
	case len(s.prefix) > 0:
		n := copy(p, s.prefix)
		s.prefix = s.prefix[n:]
		return n, nil
	case s.n > 0:
		k := int64(len(p))
		if k > s.n {
			k = s.n
		}
		for i := range p[:k] {
			p[i] = 'a'
		}
		s.n -= k
		return int(k), nil
	case len(s.suffix) > 0:
		n := copy(p, s.suffix)
		s.suffix = s.suffix[n:]
		return n, nil
	}
	return 0, io.EOF
}

func TestStdioReaderBoundsLinesAndKeepsTheLastOne(t *testing.T) {
	big := &stream{prefix: []byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`), n: 50 << 20,
		suffix: []byte("\"}}\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\r\n\n  \n" +
			`[{"jsonrpc":"2.0","id":3,"method":"ping"}]` + "\n" + `{"jsonrpc":"2.0","id":4,"method":"ping"}`)}
	var refused []*rpcRefusal
	p := &pending{}
	r := newStdioReader(context.Background(), big, nil, func(msg []byte) {
		var m struct{ Error rpcRefusal }
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Errorf("refusal %q: %v", msg, err)
		}
		refused = append(refused, &m.Error)
	}, p)
	r.drainMax = 0 // nothing answers here
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":4,"method":"ping"}` + "\n"
	if string(out) != want {
		t.Errorf("passed to mcp-go:\n%q\nwant\n%q", out, want)
	}
	if len(refused) != 2 {
		t.Fatalf("refusals %+v, want the long line and the batch", refused)
	}
	lineLen := int64(len(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`)) + 50<<20 + 3
	if !strings.Contains(refused[0].Message, "message of "+itoa(lineLen)+" bytes exceeds the 4194304-byte limit") {
		t.Errorf("long line: %q", refused[0].Message)
	}
	if !strings.Contains(refused[1].Message, "batches") {
		t.Errorf("batch: %q", refused[1].Message)
	}
	if cap(r.line) > 64<<10+maxMessageBytes {
		t.Errorf("line buffer grew to %d", cap(r.line))
	}
	if got := p.n.Load(); got != 2 {
		t.Errorf("pending %d, want 2 (ids 2 and 4)", got)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestStdioLineAtTheLimitPassesAndOneByteMoreIsRefused(t *testing.T) {
	for _, tc := range []struct {
		extra   int
		refused bool
	}{{0, false}, {1, true}} {
		pre := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`
		suf := `"}}`
		pad := maxMessageBytes - len(pre) - len(suf) + tc.extra
		msg := pre + strings.Repeat("b", pad) + suf
		var refused int
		r := newStdioReader(context.Background(), strings.NewReader(msg+"\n"), nil, func([]byte) { refused++ }, &pending{})
		r.drainMax = 0
		out, _ := io.ReadAll(r)
		if (refused == 1) != tc.refused || (len(out) > 0) == tc.refused {
			t.Errorf("%d bytes: refused %d, passed %d bytes", len(msg), refused, len(out))
		}
	}
}

func TestPendingCountsAnswersOnly(t *testing.T) {
	p := &pending{}
	p.n.Store(2)
	for _, m := range []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"ping"}`, // the server's own request
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
	} {
		p.answered([]byte(m + "\n"))
	}
	if got := p.n.Load(); got != 1 {
		t.Errorf("pending %d, want 1", got)
	}
}

func TestOriginCheck(t *testing.T) {
	for _, tc := range []struct {
		hosts, origins []string
		origin         string
		want           bool
	}{
		{nil, nil, "http://localhost:6274", true},
		{nil, nil, "http://127.0.0.1:8731", true},
		{nil, nil, "http://[::1]:8731", true},
		{nil, nil, "https://evil.example", false},
		{nil, nil, "null", false},
		{nil, nil, "http://localhost.evil.example", false},
		{[]string{"mcp.example.net"}, nil, "https://mcp.example.net", true},
		{[]string{"mcp.example.net"}, nil, "http://localhost:6274", false},
		{[]string{"*"}, nil, "https://evil.example", false},
		{nil, []string{"https://app.example"}, "https://app.example", true},
		{nil, []string{"https://app.example/"}, "https://APP.example", true},
		{nil, []string{"https://app.example"}, "http://app.example", false},
		{nil, []string{"*"}, "null", true},
	} {
		f := &httpFront{allowedHosts: tc.hosts, allowedOrigins: tc.origins}
		if got := f.originAllowed(tc.origin); got != tc.want {
			t.Errorf("hosts %v origins %v: %q allowed %v, want %v", tc.hosts, tc.origins, tc.origin, got, tc.want)
		}
	}
}

func TestAcceptOffersBoth(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   bool
	}{
		{"application/json, text/event-stream", true},
		{"text/event-stream,application/json;q=0.5", true},
		{"*/*", true},
		{"application/*, text/*", true},
		{"application/json", false},
		{"text/event-stream", false},
		{"application/json, text/event-stream;q=0", false},
		{"", false},
	} {
		if got := acceptsBoth([]string{tc.accept}); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.accept, got, tc.want)
		}
	}
}

func TestPendingDrainWaitsForTheLastAnswer(t *testing.T) {
	p := &pending{}
	p.n.Store(1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		p.answered([]byte(`{"jsonrpc":"2.0","id":6,"result":{}}`))
	}()
	start := time.Now()
	p.drain(context.Background(), 10*time.Second)
	if d := time.Since(start); d < 100*time.Millisecond || d > 5*time.Second || p.n.Load() != 0 {
		t.Errorf("drain returned after %v with %d pending, want after the answer (100 ms)", d, p.n.Load())
	}
	p.n.Store(1) // never answered: the bound ends the wait
	start = time.Now()
	p.drain(context.Background(), 50*time.Millisecond)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("unanswered drain took %v, want its 50 ms bound", d)
	}
}
