package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sipnab/sipnab/sdk"
)

// Admission is the typed layer in front of mcp-go's message handling. Both
// transports hand it every request whose envelope passed checkEnvelope,
// before mcp-go reads it. It answers there, as JSON-RPC errors carrying the
// request's id and their own code, what mcp-go cannot answer with the right
// code (its handlers' errors are all -32603):
//   - tools/call: the token's scope (HTTP 403 insufficient_scope, RFC 6750
//     §3.1), the per-peer rate and the concurrency cap (-32000, retry);
//     each refusal is audited;
//   - resources/read: the read itself, so a refused read keeps its code
//     (-32602 for a bad value, -32603 for a server fault); the contents
//     travel to mcp-go's handler with the ticket;
//   - resources/subscribe: a URI that cannot change or a connection over
//     its cap (-32602).
//
// An admitted tools/call or resources/read carries a ticket, named in the
// message's _meta under admissionMetaKey (a client's own value for that key
// is replaced): the tool handler takes it and frees its concurrency slot
// when the tool returns; a ticket mcp-go never handed to a handler (an
// unknown tool, a malformed call) is settled by the transport once the
// request is answered. Nothing of mcp-go's answer is rewritten.
// docs/mcp-protocol.md.

// admissionMetaKey names a request's ticket in params._meta.
const admissionMetaKey = "sipnab.dev/admission"

// ticket is what an admitted request carries to its handler.
type ticket struct {
	id string
	// release frees the request's concurrency slot (nil: none held).
	release func()
	taken   atomic.Bool
	// contents is a resources/read's answer, read at admission.
	contents []mcp.ResourceContents
}

// settle frees what a ticket no handler took still holds.
func (t *ticket) settle() {
	if t == nil || t.taken.Swap(true) {
		return
	}
	if t.release != nil {
		t.release()
	}
}

// tickets holds the admitted requests not yet handled.
type tickets struct {
	mu sync.Mutex
	m  map[string]*ticket
}

func (ts *tickets) issue(t *ticket) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	t.id = hex.EncodeToString(b[:])
	ts.mu.Lock()
	if ts.m == nil {
		ts.m = map[string]*ticket{}
	}
	ts.m[t.id] = t
	ts.mu.Unlock()
}

// take hands a request's ticket to its handler (nil when it has none).
func (ts *tickets) take(meta *mcp.Meta) *ticket {
	if meta == nil {
		return nil
	}
	id, _ := meta.AdditionalFields[admissionMetaKey].(string)
	if id == "" {
		return nil
	}
	ts.mu.Lock()
	t := ts.m[id]
	delete(ts.m, id)
	ts.mu.Unlock()
	if t == nil || t.taken.Swap(true) {
		return nil
	}
	return t
}

// forget drops a settled ticket from the table.
func (ts *tickets) forget(t *ticket) {
	if t == nil {
		return
	}
	ts.mu.Lock()
	delete(ts.m, t.id)
	ts.mu.Unlock()
	t.settle()
}

// admitRefusal is a request the admission layer answers itself.
type admitRefusal struct {
	rpcRefusal
	// id is the request's id, as sent.
	id json.RawMessage
	// status, when set, answers an HTTP POST with this status and no
	// JSON-RPC body (403 insufficient_scope).
	status int
	// challenge is the WWW-Authenticate value of a 403.
	challenge string
}

// wire is the refusal as one JSON-RPC error response for its id.
func (r *admitRefusal) wire() []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: mcp.JSONRPC_VERSION, ID: r.id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{r.Code, r.Message}})
	return b
}

// writeHTTP answers a refused POST: 403 with its challenge, or 200 with
// the JSON-RPC error framed as mcp-go's answers are (sseResponse: one
// message event).
func (r *admitRefusal) writeHTTP(w http.ResponseWriter) {
	if r.status != 0 {
		w.Header().Set("WWW-Authenticate", r.challenge)
		http.Error(w, "Forbidden: "+r.Message, r.status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	sw := &sseResponse{ResponseWriter: w, sse: true}
	_, _ = sw.Write(append(r.wire(), '\n'))
}

// request is what admission reads of an incoming request.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		URI       string          `json:"uri"`
	} `json:"params"`
}

// admit runs the admission of one request (env from checkEnvelope) from c
// in session sessionID ("" for none). It returns the message mcp-go is to
// handle and its ticket (nil when it carries none), or the refusal to
// answer instead. metadataURL is the RFC 9728 document a 403 names.
func (h *mcpHost) admit(ctx context.Context, c caller, sessionID, metadataURL string, msg []byte, env envelope) ([]byte, *ticket, *admitRefusal) {
	if !env.request {
		return msg, nil, nil
	}
	switch env.method {
	case string(mcp.MethodToolsCall), string(mcp.MethodResourcesRead), string(mcp.MethodResourcesSubscribe):
	default:
		return msg, nil, nil
	}
	var req request
	if json.Unmarshal(msg, &req) != nil {
		return msg, nil, nil // mcp-go answers what it cannot parse
	}
	refuse := func(code int, format string, a ...any) *admitRefusal {
		return &admitRefusal{rpcRefusal: rpcRefusal{code, fmt.Sprintf(format, a...)}, id: req.ID}
	}
	switch env.method {
	case string(mcp.MethodResourcesSubscribe):
		if err := h.res.checkSubscribe(sessionID, req.Params.URI); err != nil {
			e := sdk.AsError(err)
			return nil, nil, refuse(e.Code, "%s", e.Message)
		}
		return msg, nil, nil
	case string(mcp.MethodResourcesRead):
		msg = h.res.canonicalRead(msg)
		var canon request
		_ = json.Unmarshal(msg, &canon)
		if _, _, ok := h.res.lookup(canon.Params.URI); !ok {
			return msg, nil, nil // mcp-go answers resource not found
		}
		contents, err := h.res.readURI(ctx, canon.Params.URI, req.Params.URI)
		if err != nil {
			e := sdk.AsError(err)
			return nil, nil, refuse(e.Code, "%s", e.Message)
		}
		t := &ticket{contents: contents}
		return h.withTicket(msg, t), t, nil
	}
	var id any
	_ = json.Unmarshal(req.ID, &id)
	t, err := h.admitCall(c, req.Params.Name, idString(id), req.Params.Arguments)
	if err != nil {
		e := sdk.AsError(err)
		r := refuse(e.Code, "%s", e.Message)
		if e.Kind == sdk.KindNotEnabled && c.scope != "" {
			r.status = http.StatusForbidden
			r.challenge = scopeChallenge(metadataURL, e.Message)
		}
		return nil, nil, r
	}
	if t == nil {
		return msg, nil, nil
	}
	return h.withTicket(msg, t), t, nil
}

// admitCall admits a call of the named tool: the token's scope, the
// caller's rate, a concurrency slot (refuse, never queue). A refusal is
// audited. An unknown tool is no admission's business: it gets no ticket
// and mcp-go answers it.
func (h *mcpHost) admitCall(c caller, name, id string, args json.RawMessage) (*ticket, error) {
	t, ok := h.tools[name]
	if !ok {
		return nil, nil
	}
	refused := func(err error) (*ticket, error) {
		if aerr := h.audit.record(name, id, c.label, outcomeRefused, 0, boundArgs(args), sdk.AsError(err).Message); aerr != nil {
			h.log.Error("audit record of a refusal not written", "tool", name, "error", aerr)
		}
		return nil, err
	}
	if c.scope == scopeRead && t.Annotations.Effect != sdk.ReadOnly {
		return refused(sdk.NotEnabled("", "tool %s changes state and this token's scope is read", name))
	}
	if !h.rate.Allow(c.peer) {
		return refused(sdk.Unavailable("rate limited (%d refused since start); retry shortly", h.rate.Refused()))
	}
	tk := &ticket{}
	if h.maxConcurrent > 0 {
		if n := h.inFlight.Add(1); n > h.maxConcurrent {
			h.inFlight.Add(-1)
			h.capRefused.Add(1)
			return refused(sdk.Unavailable("at capacity: %d calls in flight (--mcp-max-concurrent); retry shortly", h.maxConcurrent))
		}
		var once sync.Once
		tk.release = func() { once.Do(func() { h.inFlight.Add(-1) }) }
	}
	return tk, nil
}

// withTicket issues t and names it in msg's params._meta.
func (h *mcpHost) withTicket(msg []byte, t *ticket) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	params := map[string]json.RawMessage{}
	if raw, ok := m["params"]; ok && json.Unmarshal(raw, &params) != nil {
		return msg
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return msg
	}
	h.admitted.issue(t)
	meta[admissionMetaKey], _ = json.Marshal(t.id)
	params["_meta"], _ = json.Marshal(meta)
	m["params"], _ = json.Marshal(params)
	out, err := json.Marshal(m)
	if err != nil {
		h.admitted.forget(t)
		return msg
	}
	return out
}

// scopeChallenge is the WWW-Authenticate value of a call the token's scope
// does not allow (RFC 6750 §3.1 insufficient_scope; MCP authorization:
// runtime insufficient scope errors).
func scopeChallenge(metadataURL, description string) string {
	c := fmt.Sprintf(`Bearer realm="sipnab", error="insufficient_scope", scope=%q, error_description=%q`, scopeFull, description)
	if metadataURL != "" {
		c += fmt.Sprintf(`, resource_metadata=%q`, metadataURL)
	}
	return c
}

// stdioSessionID is mcp-go's session id of the stdio connection.
const stdioSessionID = "stdio"
