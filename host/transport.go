package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// answerWriter writes each wire message to stdout, telling answering of it
// before and answered after. Each Write is one whole message (mcp-go writes
// a message and its newline in one call; the host's own refusals are
// written whole).
type answerWriter struct {
	mu        sync.Mutex
	w         io.Writer
	answering func([]byte)
	answered  func([]byte)
}

func (r *answerWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.answering != nil {
		r.answering(p)
	}
	if _, err := r.w.Write(p); err != nil {
		return 0, err
	}
	if r.answered != nil {
		r.answered(p)
	}
	return len(p), nil
}

// serveStdio runs the MCP server on stdin/stdout: stdout carries JSON-RPC
// only, every log line goes to stderr. Lines pass the typed layer first
// (stdioReader: bounded, envelope checked, then admission); the answers to
// requests still in flight when stdin closes are written before the server
// ends.
func serveStdio(ctx context.Context, h *mcpHost, in io.Reader, out io.Writer, logw io.Writer) error {
	s := server.NewStdioServer(h.srv)
	s.SetErrorLogger(log.New(logw, "sipnab.stdio: ", log.LstdFlags))
	// EOF on stdin ends the one connection: its subscriptions go with it,
	// whatever mcp-go's session hooks did.
	defer h.res.shut()
	p := &pending{}
	// open holds the tickets of admitted requests by id: a ticket no
	// handler took is settled when its request is answered.
	var mu sync.Mutex
	open := map[string]*ticket{}
	// A ticket is settled before its answer is written: a client that
	// sends its next call on reading the answer finds the slot free.
	w := &answerWriter{w: out, answered: func(msg []byte) { p.answered(msg); h.stop.answered(msg) }, answering: func(msg []byte) {
		id, ok := responseID(msg)
		if !ok {
			return
		}
		mu.Lock()
		t := open[id]
		delete(open, id)
		mu.Unlock()
		h.admitted.forget(t)
	}}
	refuse := func(msg []byte) {
		_, _ = w.Write(append(msg, '\n'))
	}
	admit := func(body []byte, env envelope) ([]byte, []byte) {
		out, t, r := h.admit(ctx, caller{label: "stdio"}, stdioSessionID, "", body, env)
		if r != nil {
			return nil, r.wire()
		}
		if t != nil {
			if id, ok := requestID(out); ok {
				mu.Lock()
				open[id] = t
				mu.Unlock()
			}
		}
		return out, nil
	}
	err := s.Listen(ctx, newStdioReader(ctx, in, admit, refuse, p), w)
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, context.Canceled)) {
		return nil
	}
	return err
}

// sessionManager mints session ids on initialize and forgets them on DELETE
// for real. The table is capped: past maxSessions the oldest session is
// evicted (counted).
type sessionManager struct {
	mu   sync.Mutex
	live map[string]time.Time
	// batching holds the sessions initialized with protocol version
	// 2025-03-26, the one version whose clients may send batches.
	batching map[string]bool
	order    []string
	max      int
	evicted  uint64
	// onEnd is told of every session that ends (DELETE or eviction), so
	// per-session state (resource subscriptions) goes with it.
	onEnd func(id string)
	// release, when set, ends an evicted session in the MCP server too
	// (mcp-go only hears of a DELETE); it must end in Terminate, which
	// tells onEnd. Without it, onEnd is told directly.
	release func(id string)
}

const maxSessions = 4096

func newSessionManager() *sessionManager {
	return &sessionManager{live: map[string]time.Time{}, batching: map[string]bool{}, max: maxSessions}
}

func (m *sessionManager) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	var ended []string
	m.mu.Lock()
	for len(m.live) >= m.max && len(m.order) > 0 {
		oldest := m.order[0]
		m.order = m.order[1:]
		if _, ok := m.live[oldest]; ok {
			delete(m.live, oldest)
			delete(m.batching, oldest)
			m.evicted++
			ended = append(ended, oldest)
		}
	}
	m.live[id] = time.Now()
	m.order = append(m.order, id)
	m.mu.Unlock()
	for _, e := range ended {
		switch {
		case m.release != nil:
			m.release(e)
		case m.onEnd != nil:
			m.onEnd(e)
		}
	}
	return id
}

func (m *sessionManager) Validate(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.live[id]; !ok {
		return false, fmt.Errorf("unknown session")
	}
	return false, nil
}

// allowBatches marks a live session as one of protocol version 2025-03-26.
func (m *sessionManager) allowBatches(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.live[id]; ok {
		m.batching[id] = true
	}
}

// batches says whether id names a live 2025-03-26 session.
func (m *sessionManager) batches(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.batching[id]
}

// isLive says whether id names a session that has not ended.
func (m *sessionManager) isLive(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.live[id]
	return ok
}

func (m *sessionManager) Terminate(id string) (bool, error) {
	if m.onEnd != nil {
		defer m.onEnd(id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.live, id)
	delete(m.batching, id)
	// compact the order slice now and then
	if len(m.order) > 2*len(m.live)+64 {
		kept := m.order[:0]
		for _, s := range m.order {
			if _, ok := m.live[s]; ok {
				kept = append(kept, s)
			}
		}
		m.order = kept
	}
	return false, nil
}

// httpFront is the HTTP entry: Host allowlist, /health, RFC 9728 metadata,
// Origin check, bearer auth, Accept negotiation, the message's envelope
// (checkEnvelope), session presence, admission (admission.go), then
// mcp-go's streamable HTTP server.
type httpFront struct {
	log          hclog.Logger
	mcp          *server.StreamableHTTPServer
	sessions     *sessionManager
	verify       *verifier
	allowedHosts []string // empty: loopback names; "*" disables
	// allowedOrigins are Origin values accepted besides those whose host
	// is an allowed Host name ("*": any).
	allowedOrigins []string
	resourceURL    *url.URL
	metadataPath   string
	metadataURL    string
	// host admits every POSTed request (admission.go).
	host *mcpHost
	// events holds what a client resuming a broken stream is replayed.
	events *boundedEventStore
}

// newHTTPFront builds the HTTP entry around h's MCP server: a session table
// of at most maxSess sessions, tied to h's subscriptions, and mcp-go's
// stateful streamable HTTP server with an event store holding each
// session's maxStoredEvents most recent events. A session that ends
// (DELETE, or evicted from the full table) takes its subscriptions and
// mcp-go's state for it (registration, streams, stored events) with it.
func newHTTPFront(h *mcpHost, log hclog.Logger, verify *verifier, maxSess int) *httpFront {
	f := &httpFront{log: log, sessions: newSessionManager(), verify: verify, host: h,
		events: newBoundedEventStore(maxStoredEvents)}
	f.sessions.max = maxSess
	h.res.bindSessions(f.sessions)
	f.events.alive = f.sessions.isLive
	f.sessions.release = f.release
	f.mcp = server.NewStreamableHTTPServer(h.srv,
		server.WithEndpointPath("/mcp"),
		server.WithStateful(true),
		server.WithSessionIdManager(f.sessions),
		server.WithEventStore(f.events),
		server.WithDisableLocalhostProtection(true), // the front applies the Host allowlist
		server.WithStreamableHTTPLogger(toSlog(log.Named("http"))),
	)
	return f
}

// release ends an evicted session inside mcp-go: mcp-go frees a session's
// state only on DELETE (or its idle sweeper, which sipnab does not run), so
// the front hands it one. Its Terminate tells the table's onEnd.
func (f *httpFront) release(id string) {
	req, err := http.NewRequest(http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20251125)
	w := &discardResponse{header: http.Header{}}
	f.mcp.ServeHTTP(w, req)
	if w.status != http.StatusOK {
		f.log.Warn("evicted session not released", "status", w.status)
	}
}

// discardResponse is the ResponseWriter of the front's own requests.
type discardResponse struct {
	header http.Header
	status int
}

func (d *discardResponse) Header() http.Header { return d.header }
func (d *discardResponse) WriteHeader(status int) {
	if d.status == 0 {
		d.status = status
	}
}
func (d *discardResponse) Write(p []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	return len(p), nil
}

func (f *httpFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// /health answers any Host: a load balancer probes by address, and the
	// answer carries nothing a rebinding page could use.
	if r.URL.Path == "/health" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
		return
	}
	if !f.hostAllowed(r.Host) {
		http.Error(w, "Forbidden: Host not allowed", http.StatusForbidden)
		return
	}
	switch {
	case f.metadataPath != "" && r.URL.Path == f.metadataPath:
		f.serveMetadata(w)
		return
	case r.URL.Path == "/mcp" || r.URL.Path == "/mcp/":
	default:
		http.NotFound(w, r)
		return
	}
	// A browser sends Origin on every cross-origin request: a page on
	// another site must not reach the endpoint through a user's browser
	// (MCP streamable HTTP, security warning: validate Origin).
	if o := r.Header.Get("Origin"); o != "" && !f.originAllowed(o) {
		http.Error(w, "Forbidden: Origin not allowed", http.StatusForbidden)
		return
	}

	peer := peerAddr(r.RemoteAddr)
	c := caller{peer: peer, label: "peer " + peer.String() + " unauthenticated"}
	if f.verify.configured() {
		authz := r.Header.Get("Authorization")
		scheme, tok, _ := strings.Cut(authz, " ")
		if authz == "" || !strings.EqualFold(scheme, "Bearer") {
			w.Header().Set("WWW-Authenticate", challenge(authz != "", f.metadataURL))
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		id, err := f.verify.verify(strings.TrimSpace(tok))
		if err != nil {
			w.Header().Set("WWW-Authenticate", challenge(true, f.metadataURL))
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		c.scope = id.Scope
		c.label = fmt.Sprintf("peer %s bearer-verified scope=%s token=%s", peer, id.Scope, tokenLabel(id.TokenID))
	}

	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	legacyInit := false // an initialize asking for 2025-03-26
	settle := func() {} // settles the request's ticket before its answer
	switch r.Method {
	case http.MethodPost:
		if !acceptsBoth(r.Header.Values("Accept")) {
			http.Error(w, "Not Acceptable: Accept must offer both application/json and text/event-stream", http.StatusNotAcceptable)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxMessageBytes+1))
		if err != nil {
			http.Error(w, "reading body", http.StatusBadRequest)
			return
		}
		if len(body) > maxMessageBytes {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if sid := r.Header.Get(server.HeaderKeySessionID); sid != "" && f.sessions.batches(sid) &&
			(r.Header.Get(mcp.HeaderProtocolVersion) == "" || r.Header.Get(mcp.HeaderProtocolVersion) == mcp.ProtocolVersion20250326) {
			var elems []json.RawMessage
			if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' && json.Unmarshal(b, &elems) == nil {
				f.serveBatch(w, r.WithContext(withCaller(r.Context(), c)), elems)
				return
			}
		}
		env, envRefusal := checkEnvelope(body)
		if envRefusal != nil {
			writeRefusal(w, envRefusal)
			return
		}
		var refusal *admitRefusal
		var msg struct {
			Params struct {
				Meta            map[string]any `json:"_meta"`
				ProtocolVersion string         `json:"protocolVersion"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		legacyInit = env.method == string(mcp.MethodInitialize) && msg.Params.ProtocolVersion == mcp.ProtocolVersion20250326
		if v, ok := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string); ok && mcp.IsModernProtocol(v) {
			modern = true
		}
		// MCP streamable HTTP, session management: a request without the
		// session id (other than initialize) is 400 Bad Request.
		if !modern && env.method != string(mcp.MethodInitialize) && r.Header.Get(server.HeaderKeySessionID) == "" {
			writeRefusal(w, &rpcRefusal{mcp.INVALID_REQUEST, msgNoSession})
			return
		}
		var tk *ticket
		body, tk, refusal = f.admit(r.WithContext(withCaller(r.Context(), c)), body, env)
		if refusal != nil {
			refusal.writeHTTP(w)
			return
		}
		defer f.host.admitted.forget(tk) // a ticket no handler took, at the latest
		settle = func() { f.host.admitted.forget(tk) }
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		r.ContentLength = int64(len(body))
	case http.MethodGet, http.MethodDelete:
		if !modern && r.Header.Get(server.HeaderKeySessionID) == "" {
			http.Error(w, "Bad Request: "+msgNoSession, http.StatusBadRequest)
			return
		}
		if r.Method == http.MethodGet && !modern && !acceptsType(r.Header.Values("Accept"), "text/event-stream") {
			http.Error(w, "Not Acceptable: Accept must offer text/event-stream", http.StatusNotAcceptable)
			return
		}
	}
	r = r.WithContext(withCaller(r.Context(), c))
	if legacyInit {
		// Remember the 2025-03-26 sessions: their clients may batch.
		rw := &sseResponse{ResponseWriter: w, sse: true, before: settle}
		f.mcp.ServeHTTP(rw, r)
		if sid := w.Header().Get(server.HeaderKeySessionID); sid != "" && rw.status == http.StatusOK {
			f.sessions.allowBatches(sid)
		}
		return
	}
	f.mcp.ServeHTTP(&sseResponse{ResponseWriter: w, sse: r.Method == http.MethodPost, before: settle}, r)
}

// admit runs the admission of one POSTed message (r's context carries its
// caller) in the session r names.
func (f *httpFront) admit(r *http.Request, body []byte, env envelope) ([]byte, *ticket, *admitRefusal) {
	return f.host.admit(r.Context(), callerFrom(r.Context()), r.Header.Get(server.HeaderKeySessionID), f.metadataURL, body, env)
}

func (f *httpFront) hostAllowed(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if len(f.allowedHosts) == 0 {
		if h == "localhost" {
			return true
		}
		a, err := netip.ParseAddr(h)
		return err == nil && a.IsLoopback()
	}
	for _, a := range f.allowedHosts {
		if a == "*" || strings.EqualFold(a, h) || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// originAllowed accepts an Origin whose host is an allowed Host name
// (loopback names when --mcp-allowed-host names none; a "*" there grants
// no origin) or that --mcp-allowed-origin lists. "null" (a sandboxed or
// file: page) is never allowed unless listed.
func (f *httpFront) originAllowed(origin string) bool {
	for _, a := range f.allowedOrigins {
		if a == "*" || strings.EqualFold(strings.TrimRight(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	h := u.Hostname()
	if len(f.allowedHosts) == 0 {
		if strings.EqualFold(h, "localhost") {
			return true
		}
		a, err := netip.ParseAddr(h)
		return err == nil && a.IsLoopback()
	}
	for _, a := range f.allowedHosts {
		if a != "*" && (strings.EqualFold(a, h) || strings.EqualFold(a, u.Host)) {
			return true
		}
	}
	return false
}

// writeRefusal answers a POST the front refuses with 400 and the JSON-RPC
// error as its body, id null (MCP streamable HTTP: the body of an error
// status may be a JSON-RPC error response that has no id).
func writeRefusal(w http.ResponseWriter, r *rpcRefusal) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(append(r.wire(), '\n'))
}

func (f *httpFront) serveMetadata(w http.ResponseWriter) {
	doc := map[string]any{
		"resource":                 f.resourceURL.String(),
		"resource_name":            "sipnab MCP server",
		"resource_documentation":   "https://github.com/sipnab/sipnab/blob/main/docs/mcp.md",
		"bearer_methods_supported": []string{"header"},
		"scopes_supported":         []string{scopeFull, scopeRead},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}

func peerAddr(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		if a, err := netip.ParseAddr(remote); err == nil {
			return a.Unmap()
		}
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// acceptsType says whether an Accept header offers want (RFC 9110 §12.5.1:
// type/* and */* match; q=0 means "not acceptable").
func acceptsType(values []string, want string) bool {
	major, _, _ := strings.Cut(want, "/")
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || !(mt == want || mt == "*/*" || mt == major+"/*") {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f == 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}

func acceptsBoth(values []string) bool {
	return acceptsType(values, "application/json") && acceptsType(values, "text/event-stream")
}

// sseResponse frames mcp-go's HTTP responses. With sse set (a POST carrying
// a request), a single JSON answer is sent as text/event-stream too: an
// empty data: keepalive frame first, then the answer as one message event,
// as the reference server frames it. Other responses pass unchanged.
type sseResponse struct {
	http.ResponseWriter
	sse bool
	// before, when set, is called once before the first byte is written.
	before   func()
	decided  bool
	framing  bool
	status   int
	captured bool
}

func (r *sseResponse) WriteHeader(status int) {
	if r.captured {
		return
	}
	r.captured = true
	if r.before != nil {
		r.before()
	}
	r.status = status
	r.decide()
	r.ResponseWriter.WriteHeader(status)
	if r.framing {
		_, _ = io.WriteString(r.ResponseWriter, "data: \n\n")
	}
}

// decide chooses the framing when the headers are final.
func (r *sseResponse) decide() {
	if r.decided {
		return
	}
	r.decided = true
	h := r.ResponseWriter.Header()
	if r.sse && (r.status == 0 || r.status == http.StatusOK) && strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		r.framing = true
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Del("Content-Length")
	}
}

func (r *sseResponse) Write(p []byte) (int, error) {
	if !r.captured {
		r.WriteHeader(http.StatusOK)
	}
	out := p
	if r.framing {
		out = []byte("event: message\ndata: " + strings.TrimRight(string(out), "\n") + "\n\n")
	}
	if _, err := r.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (r *sseResponse) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// metadataLocation returns the RFC 9728 document path and URL for a
// resource URL: /.well-known/oauth-protected-resource/<path>.
func metadataLocation(u *url.URL) (path, full string) {
	p := strings.TrimPrefix(u.EscapedPath(), "/")
	path = "/.well-known/oauth-protected-resource"
	if p != "" {
		path += "/" + p
	}
	full = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
	return path, full
}

// parseResourceURL validates --mcp-resource-url: an absolute http(s) URL
// with a host and no fragment.
func parseResourceURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" || u.RawQuery != "" {
		return nil, usagef("--mcp-resource-url %q: want an absolute http(s) URL with a host, no query or fragment", s)
	}
	return u, nil
}

// TLS handshake limits of the HTTP listener.
const (
	handshakeTimeout = 10 * time.Second
	maxHandshakes    = 256
)

// tlsListener accepts TCP connections and runs each TLS handshake on its own
// goroutine with a 10 s deadline, at most 256 at once (a connection beyond
// that is closed). Accept returns only handshaken connections, so one slow
// client cannot hold up the accept loop.
type tlsListener struct {
	net.Listener
	cfg   *tls.Config
	slots chan struct{}
	ready chan net.Conn
	errc  chan error
	done  chan struct{}
	once  sync.Once
	log   hclog.Logger
	// timeout bounds one handshake.
	timeout time.Duration
}

func newTLSListener(inner net.Listener, cfg *tls.Config, log hclog.Logger) *tlsListener {
	return newTLSListenerLimits(inner, cfg, log, maxHandshakes, handshakeTimeout)
}

func newTLSListenerLimits(inner net.Listener, cfg *tls.Config, log hclog.Logger, max int, timeout time.Duration) *tlsListener {
	l := &tlsListener{Listener: inner, cfg: cfg, slots: make(chan struct{}, max),
		ready: make(chan net.Conn), errc: make(chan error, 1), done: make(chan struct{}), log: log, timeout: timeout}
	go l.loop()
	return l
}

func (l *tlsListener) loop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case l.errc <- err:
			case <-l.done:
			}
			return
		}
		select {
		case l.slots <- struct{}{}:
		default:
			_ = c.Close() // too many handshakes in flight
			continue
		}
		go func() {
			defer func() { <-l.slots }()
			tc := tls.Server(c, l.cfg)
			ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
			defer cancel()
			if err := tc.HandshakeContext(ctx); err != nil {
				_ = c.Close()
				return
			}
			select {
			case l.ready <- tc:
			case <-l.done:
				_ = tc.Close()
			}
		}()
	}
}

func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.errc:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *tlsListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}
