package host

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The typed layer in front of mcp-go: every incoming JSON-RPC message, a
// stdio line or an HTTP POST body, is bounded in bytes and its envelope
// (shape, id) is checked here before mcp-go parses it. A refusal is a
// JSON-RPC error the host writes itself, with id null (JSON-RPC 2.0 §5: the
// id could not be read or cannot be trusted). docs/mcp-protocol.md.

// maxMessageBytes bounds one incoming message: a stdio line (without its
// newline) and an HTTP POST body. A longer stdio line is discarded as it
// is read, never buffered; a longer body is 413.
const maxMessageBytes = 4 << 20

// stdioDrainTimeout bounds how long the server, once stdin has closed,
// waits for the answers to requests still in flight before it exits.
const stdioDrainTimeout = 60 * time.Second

// rpcRefusal is a JSON-RPC error answered by the host, id null.
type rpcRefusal struct {
	Code    int
	Message string
}

// wire is the refusal as one JSON-RPC error response (no newline).
func (r *rpcRefusal) wire() []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: mcp.JSONRPC_VERSION, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{r.Code, r.Message}})
	return b
}

// envelope is what the host reads of an incoming message.
type envelope struct {
	method string
	// request: a method and a non-null id, so the client waits for an
	// answer.
	request bool
}

// Refusal texts, shared by both transports.
const (
	msgBatch     = "JSON-RPC batches are not supported: MCP 2025-06-18 removed them; send each request as its own message"
	msgNoSession = "Mcp-Session-Id header required: send initialize first and echo the session id it returns on every later request"
)

// checkEnvelope reads the envelope of one incoming message. Text that is
// not JSON passes (mcp-go answers -32700 Parse error); valid JSON that is
// no single request object is refused with -32600 Invalid Request:
//   - an array (a batch; MCP 2025-06-18 and later have none),
//   - a string, number, boolean or null,
//   - a request whose id is an object, an array or a boolean (JSON-RPC 2.0
//     §4: a String, Number or Null) or null (MCP: "the ID MUST NOT be
//     null"; a notification carries no id).
//
// Messages without a method (the client's responses to server requests)
// are left to mcp-go.
func checkEnvelope(msg []byte) (envelope, *rpcRefusal) {
	b := bytes.TrimLeft(msg, " \t\r\n")
	if len(b) == 0 {
		return envelope{}, nil
	}
	if b[0] != '{' {
		if !json.Valid(b) {
			return envelope{}, nil
		}
		if b[0] == '[' {
			return envelope{}, &rpcRefusal{mcp.INVALID_REQUEST, msgBatch}
		}
		return envelope{}, &rpcRefusal{mcp.INVALID_REQUEST, "a JSON-RPC message is a JSON object, got " + jsonKind(b[0])}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(b, &m) != nil || m.Method == nil {
		return envelope{}, nil
	}
	env := envelope{method: *m.Method}
	if len(m.ID) == 0 {
		return env, nil // a notification
	}
	switch c := m.ID[0]; {
	case c == '"' || c == '-' || (c >= '0' && c <= '9'):
		env.request = true
		return env, nil
	case c == 'n':
		return env, &rpcRefusal{mcp.INVALID_REQUEST, "the request id is null: MCP requires a string or an integer id (a notification has no id)"}
	default:
		return env, &rpcRefusal{mcp.INVALID_REQUEST, "the request id is " + jsonKind(c) + ": JSON-RPC 2.0 allows a string or a number"}
	}
}

// jsonKind names a JSON value by its first byte.
func jsonKind(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// tooLong refuses a message over maxMessageBytes.
func tooLong(n int64) *rpcRefusal {
	return &rpcRefusal{mcp.INVALID_REQUEST, fmt.Sprintf(
		"message of %d bytes exceeds the %d-byte limit of one JSON-RPC message; it was discarded unread", n, maxMessageBytes)}
}

// pending counts stdio requests read and not yet answered, so the answers
// to the last requests before EOF are written before mcp-go sees the EOF
// (it cancels the requests in flight when it does).
type pending struct{ n atomic.Int64 }

// drain waits until every counted request is answered, ctx ends or max
// has passed.
func (p *pending) drain(ctx context.Context, max time.Duration) {
	deadline := time.Now().Add(max)
	for p.n.Load() > 0 && ctx.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// answered is told of every message written to stdout: a response (no
// method, an id that is not null) answers one request. It returns the
// response's id.
func (p *pending) answered(msg []byte) (string, bool) {
	id, ok := responseID(msg)
	if ok {
		p.n.Add(-1)
	}
	return id, ok
}

// responseID is the id of a response (no method, an id that is not null),
// normalized as requestID normalizes a request's.
func responseID(msg []byte) (string, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method != nil || len(m.ID) == 0 || m.ID[0] == 'n' {
		return "", false
	}
	return normalID(m.ID), true
}

// requestID is the id of a request, normalized (1 and 1.0 are one id).
func requestID(msg []byte) (string, bool) {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 || m.ID[0] == 'n' {
		return "", false
	}
	return normalID(m.ID), true
}

func normalID(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// stdioReader hands mcp-go's stdio server one checked line at a time. A
// line is read into a buffer of at most maxMessageBytes (plus its line
// end); past that the rest of the line is read and discarded, and the line
// is answered with a refusal. The last line before EOF is a message even
// without its newline (one is added). Blank lines are skipped.
type stdioReader struct {
	ctx context.Context
	r   *bufio.Reader
	max int
	// admit runs admission (admission.go): the message mcp-go is to
	// read, or the refusal to write instead.
	admit   func(body []byte, env envelope) (out, refusal []byte)
	refuse  func(msg []byte) // writes a refusal to stdout
	pending *pending
	// drainMax bounds the wait at EOF (stdioDrainTimeout).
	drainMax time.Duration
	line     []byte
	buf      []byte
	err      error
}

func newStdioReader(ctx context.Context, in io.Reader, admit func([]byte, envelope) ([]byte, []byte), refuse func([]byte), p *pending) *stdioReader {
	return &stdioReader{ctx: ctx, r: bufio.NewReaderSize(in, 64<<10), max: maxMessageBytes, admit: admit, refuse: refuse, pending: p,
		drainMax: stdioDrainTimeout}
}

func (s *stdioReader) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.err != nil {
			if s.err == io.EOF {
				s.pending.drain(s.ctx, s.drainMax)
			}
			return 0, s.err
		}
		s.next()
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// next reads one line and leaves what mcp-go is to read in s.buf.
func (s *stdioReader) next() {
	if cap(s.line) > 64<<10 {
		s.line = nil // keep no large buffer between large lines
	}
	s.line = s.line[:0]
	var total int64
	keep, nl := true, false
	for {
		frag, err := s.r.ReadSlice('\n')
		total += int64(len(frag))
		if keep && len(s.line)+len(frag) <= s.max+2 { // room for "\r\n"
			s.line = append(s.line, frag...)
		} else {
			keep = false
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		nl = len(frag) > 0 && frag[len(frag)-1] == '\n'
		s.err = err
		break
	}
	body := bytes.TrimRight(s.line, "\r\n")
	if !keep || len(body) > s.max {
		if nl {
			total-- // the newline is no part of the message
		}
		s.refuse(tooLong(total).wire())
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return
	}
	env, refusal := checkEnvelope(body)
	if refusal != nil {
		s.refuse(refusal.wire())
		return
	}
	// Counted before admission: a refusal answers the request's id, and
	// its answer is counted off like mcp-go's.
	if env.request && env.method != string(mcp.MethodSubscriptionsListen) {
		s.pending.n.Add(1)
	}
	if s.admit != nil {
		out, refused := s.admit(body, env)
		if refused != nil {
			s.refuse(refused)
			return
		}
		body = out
	}
	s.buf = append(body, '\n') // over the line end when body is s.line's prefix
}

// serveBatch answers a JSON-RPC batch in a session of protocol version
// 2025-03-26, whose servers "MUST support receiving JSON-RPC batches" (MCP
// 2025-03-26, transports): each element is served in turn as a POST of its
// own, and its answers (with any notification it caused) are sent as they
// come, one SSE message event each, so nothing is held past one element. A
// batch of notifications and responses only is 202 with no body. An
// initialize ("MUST NOT be part of a JSON-RPC batch") and an element that
// fails checkEnvelope are answered -32600 in their place.
func (f *httpFront) serveBatch(w http.ResponseWriter, r *http.Request, elems []json.RawMessage) {
	if len(elems) == 0 {
		writeRefusal(w, &rpcRefusal{mcp.INVALID_REQUEST, "an empty batch holds no request (JSON-RPC 2.0 §6)"})
		return
	}
	requests := false
	for _, e := range elems {
		env, refusal := checkEnvelope(e)
		requests = requests || env.request || refusal != nil || env.method == string(mcp.MethodInitialize)
	}
	if !requests {
		for _, e := range elems {
			f.serveElement(r, e)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	event := func(msg []byte) {
		_, _ = w.Write([]byte("event: message\ndata: " + string(bytes.TrimSpace(msg)) + "\n\n"))
		if fl != nil {
			fl.Flush()
		}
	}
	_, _ = io.WriteString(w, "data: \n\n")
	for _, e := range elems {
		env, refusal := checkEnvelope(e)
		switch {
		case refusal != nil:
			event(refusal.wire())
			continue
		case env.method == string(mcp.MethodInitialize):
			event((&rpcRefusal{mcp.INVALID_REQUEST, "initialize must not be part of a JSON-RPC batch (MCP 2025-03-26)"}).wire())
			continue
		}
		for _, m := range f.serveElement(r, e) {
			event(m)
		}
	}
}

// serveElement serves one batch element through mcp-go as a POST of its
// own and returns the messages it answered (a JSON reply, or each data of
// an event stream). An HTTP error becomes a JSON-RPC error for its id.
func (f *httpFront) serveElement(r *http.Request, e json.RawMessage) [][]byte {
	env, _ := checkEnvelope(e)
	e, tk, refusal := f.admit(r, e, env)
	if refusal != nil {
		return [][]byte{refusal.wire()} // a 403 too: an error in its place
	}
	defer f.host.admitted.forget(tk)
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(e))
	r2.ContentLength = int64(len(e))
	rec := &elementRecorder{header: http.Header{}}
	f.mcp.ServeHTTP(&sseResponse{ResponseWriter: rec}, r2)
	switch {
	case rec.status == http.StatusAccepted:
		return nil
	case strings.HasPrefix(rec.header.Get("Content-Type"), "text/event-stream"):
		var out [][]byte
		for _, l := range bytes.Split(rec.body.Bytes(), []byte("\n")) {
			if d, ok := bytes.CutPrefix(l, []byte("data:")); ok && len(bytes.TrimSpace(d)) > 0 {
				out = append(out, bytes.TrimSpace(d))
			}
		}
		return out
	case rec.status == 0 || rec.status == http.StatusOK:
		if b := bytes.TrimSpace(rec.body.Bytes()); len(b) > 0 {
			return [][]byte{b}
		}
		return nil
	}
	var id struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(e, &id)
	b, _ := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id.ID, "error": map[string]any{
		"code": mcp.INVALID_REQUEST, "message": fmt.Sprintf("HTTP %d: %s", rec.status, strings.TrimSpace(rec.body.String()))}})
	return [][]byte{b}
}

// elementRecorder is the ResponseWriter of one batch element.
type elementRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (e *elementRecorder) Header() http.Header { return e.header }
func (e *elementRecorder) WriteHeader(status int) {
	if e.status == 0 {
		e.status = status
	}
}
func (e *elementRecorder) Write(p []byte) (int, error) {
	e.WriteHeader(http.StatusOK)
	return e.body.Write(p)
}
func (e *elementRecorder) Flush() {}
