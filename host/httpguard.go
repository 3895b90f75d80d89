package host

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The HTTP transport holds no resource for a client that has not proved
// who it is, and no connection may starve the others (docs/mcp-protocol.md,
// Streamable HTTP: "Slow clients", "Connections"):
//
//   - headers must arrive within headerTimeout (http.Server's
//     ReadHeaderTimeout); an idle keep-alive connection is closed after
//     idleTimeout;
//   - a request body must keep a minimum rate: bodyGrace to start, then
//     minBodyRate bytes per second on average, or the connection is cut;
//   - a response written before the request body was read (a 401 to an
//     unauthenticated request, a 403, a 406) closes the connection instead
//     of draining the unread body first, so the refusal leaves at once and
//     a slow body holds nothing;
//   - open connections are capped below the process's file limit; at the
//     cap the connection idle longest (a keep-alive between requests, or
//     one that has sent nothing for newConnGrace) is closed to admit the
//     new one, otherwise the new one is closed; both are counted and
//     logged.
const (
	headerTimeout = 10 * time.Second
	idleTimeout   = 2 * time.Minute
	bodyGrace     = 10 * time.Second
	minBodyRate   = 64 << 10 // bytes per second, averaged from the first body byte asked for
	newConnGrace  = 2 * time.Second
	maxConnsCap   = 8192
	minConnsCap   = 64
	fdReserve     = 256 // descriptors kept for captures, files, the audit log
)

// connCap is the open-connection cap for a file-descriptor limit: half of
// what is left after fdReserve, between minConnsCap and maxConnsCap.
func connCap(nofile uint64) int {
	if nofile <= fdReserve {
		return minConnsCap
	}
	n := (nofile - fdReserve) / 2
	switch {
	case n < minConnsCap:
		return minConnsCap
	case n > maxConnsCap:
		return maxConnsCap
	}
	return int(n)
}

// defaultConnCap reads the process's file limit (the Go runtime raises
// the soft limit to the hard one at start on Linux).
func defaultConnCap() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return minConnsCap
	}
	return connCap(rl.Cur)
}

// connGuard caps the open connections of a listener and, through
// http.Server.ConnState, knows which are idle.
type connGuard struct {
	net.Listener
	max int
	log hclog.Logger
	now func() time.Time

	mu    sync.Mutex
	conns map[net.Conn]*guardedConn

	refused  atomic.Uint64 // new connections closed at the cap
	evicted  atomic.Uint64 // idle connections closed to admit a new one
	lastWarn atomic.Int64
}

type guardedConn struct {
	state http.ConnState
	since time.Time // when it entered state
}

func newConnGuard(inner net.Listener, max int, log hclog.Logger) *connGuard {
	return &connGuard{Listener: inner, max: max, log: log, now: time.Now, conns: map[net.Conn]*guardedConn{}}
}

// Accept admits a connection under the cap.
func (g *connGuard) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if g.admit(c) {
			return c, nil
		}
		_ = c.Close()
		n := g.refused.Add(1)
		g.warn("HTTP connection refused: open connections at the cap", "cap", g.max, "refused_total", n)
	}
}

// admit registers c, closing the idlest connection first at the cap.
func (g *connGuard) admit(c net.Conn) bool {
	now := g.now()
	g.mu.Lock()
	if len(g.conns) >= g.max {
		var victim net.Conn
		var vt time.Time
		for vc, st := range g.conns {
			idle := st.state == http.StateIdle || (st.state == http.StateNew && now.Sub(st.since) >= newConnGrace)
			if idle && (victim == nil || st.since.Before(vt)) {
				victim, vt = vc, st.since
			}
		}
		if victim == nil {
			g.mu.Unlock()
			return false
		}
		delete(g.conns, victim)
		g.mu.Unlock()
		_ = victim.Close()
		n := g.evicted.Add(1)
		g.warn("HTTP connection closed at the connection cap to admit a new one", "idle_for", now.Sub(vt).Round(time.Millisecond).String(), "evicted_total", n)
		g.mu.Lock()
	}
	g.conns[c] = &guardedConn{state: http.StateNew, since: now}
	g.mu.Unlock()
	return true
}

// connState is the http.Server.ConnState hook.
func (g *connGuard) connState(c net.Conn, s http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st, ok := g.conns[c]
	if !ok {
		return
	}
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(g.conns, c)
	default:
		st.state, st.since = s, g.now()
	}
}

// open counts the connections held now.
func (g *connGuard) open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

// warn logs at most once a second.
func (g *connGuard) warn(msg string, kv ...any) {
	now := g.now().UnixNano()
	last := g.lastWarn.Load()
	if now-last < int64(time.Second) || !g.lastWarn.CompareAndSwap(last, now) {
		return
	}
	g.log.Warn(msg, kv...)
}

// bodyGuard is the handler in front of the MCP endpoint that enforces the
// body rate and closes connections answered before their body was read.
type bodyGuard struct {
	next     http.Handler
	grace    time.Duration
	minRate  float64
	now      func() time.Time
	slowCuts atomic.Uint64
	log      hclog.Logger
}

func newBodyGuard(next http.Handler, log hclog.Logger) *bodyGuard {
	return &bodyGuard{next: next, grace: bodyGrace, minRate: minBodyRate, now: time.Now, log: log}
}

func (b *bodyGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		b.next.ServeHTTP(w, r)
		return
	}
	body := &rateBody{rc: r.Body, ctl: http.NewResponseController(w), g: b}
	r.Body = body
	b.next.ServeHTTP(&closeUnreadWriter{ResponseWriter: w, body: body}, r)
}

// rateBody reads a request body under a moving deadline: grace from the
// first read, plus the time minRate needs for the bytes read so far.
type rateBody struct {
	rc    io.ReadCloser
	ctl   *http.ResponseController
	g     *bodyGuard
	start time.Time
	n     int64
	eof   atomic.Bool
}

func (rb *rateBody) Read(p []byte) (int, error) {
	if rb.start.IsZero() {
		rb.start = rb.g.now()
	}
	allowed := rb.g.grace + time.Duration(float64(rb.n)/rb.g.minRate*float64(time.Second))
	_ = rb.ctl.SetReadDeadline(rb.start.Add(allowed))
	n, err := rb.rc.Read(p)
	rb.n += int64(n)
	if err != nil {
		// Done with the body: no deadline on what follows (the server's
		// own read that notices a client going away must not time out).
		_ = rb.ctl.SetReadDeadline(time.Time{})
		if err == io.EOF {
			rb.eof.Store(true)
		} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			rb.g.slowCuts.Add(1)
			rb.g.log.Warn("HTTP request body too slow: connection cut", "bytes", rb.n, "seconds", rb.g.now().Sub(rb.start).Seconds())
		}
	}
	return n, err
}

func (rb *rateBody) Close() error { return rb.rc.Close() }

// closeUnreadWriter marks the response Connection: close when it is
// written before the request body was read to its end, so net/http does
// not drain a body that may never come before sending the answer.
type closeUnreadWriter struct {
	http.ResponseWriter
	body    *rateBody
	decided bool
}

func (w *closeUnreadWriter) decide() {
	if w.decided {
		return
	}
	w.decided = true
	if !w.body.eof.Load() {
		w.ResponseWriter.Header().Set("Connection", "close")
	}
}

func (w *closeUnreadWriter) WriteHeader(status int) {
	w.decide()
	w.ResponseWriter.WriteHeader(status)
}

func (w *closeUnreadWriter) Write(p []byte) (int, error) {
	w.decide()
	return w.ResponseWriter.Write(p)
}

func (w *closeUnreadWriter) Flush() {
	w.decide()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *closeUnreadWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
