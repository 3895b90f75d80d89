package host

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sipnab/sipnab/sdk"
)

// Subscription bounds (mcp-surface §4.3).
const (
	maxSubscriptions  = 16          // per connection
	subscribeDebounce = time.Second // per URI per connection
	subscribePoll     = 100 * time.Millisecond
	maxCompletions    = 100
)

// served is one resource or template as the host dispatches it.
type served struct {
	read     func(ctx context.Context, uri string, vars map[string]string) (sdk.ResourceContent, error)
	revision func() uint64
	instance func() string
	mime     string
}

// resourceHost registers the selected bundles' resources with mcp-go,
// answers completions, and tracks subscriptions itself.
type resourceHost struct {
	log hclog.Logger
	// admitted holds the contents of reads done at admission.
	admitted  *tickets
	srv       *server.MCPServer
	fixed     map[string]served
	templates []templateEntry
	maxValues int
	// hostTemplates are the host's own templates (the reference pages when a
	// loaded tool takes a filter, the file resource with a file root).
	hostTemplates []sdk.ResourceTemplate

	mu       sync.Mutex
	sessions map[string]map[string]*watch // session id → uri → watch
	// base is the server's lifetime (set by start): the poller runs under
	// it, and only while some connection holds a subscription.
	base    context.Context
	polling bool // a poller goroutine is running or about to (under mu)
	// closed is set when the only connection (stdio) ended: a subscribe
	// still in flight is not recorded.
	closed bool
	// alive, when set, says whether a session id still names a live
	// connection (the HTTP session table): a subscribe that raced the
	// DELETE ending its session is not recorded.
	alive func(id string) bool
	// pollers counts running poller goroutines (0 or 1).
	pollers atomic.Int32

	// notify sends notifications/resources/updated to one session (the
	// server's, replaced in tests).
	notify func(session, uri string) error
	// now is the clock a notification's send time is read from (time.Now;
	// replaced in tests).
	now func() time.Time
}

type templateEntry struct {
	tpl      sdk.ResourceTemplate
	compiled mcp.ResourceTemplate
	// prefix and variable describe a template of the form <prefix>{var}
	// (one trailing simple expansion), which also resolves a raw,
	// unencoded value; prefix is "" for any other shape.
	prefix, variable string
}

// watch is one subscription. Changes are detected cheaply (revision and
// instance reads) on every poll, but the content is rendered at most once
// per debounce window: a change inside the window marks the watch dirty and
// is rendered when the window opens (held, never dropped).
type watch struct {
	s          served
	uri        string
	vars       map[string]string
	rev        uint64
	instance   string
	digest     [32]byte
	dirty      bool // the revision or instance moved since the last render
	forced     bool // the instance moved: notify even on an identical rendering
	lastRender time.Time
	// lastSent is when the last notification left (read after rendering,
	// which can take a while during a big load): the next one waits a full
	// window from it, not from the poll that started the rendering.
	lastSent time.Time
}

func newResourceHost(log hclog.Logger, maxRows int) *resourceHost {
	maxValues := maxCompletions
	if maxRows > 0 && maxRows < maxValues {
		maxValues = maxRows
	}
	return &resourceHost{log: log, fixed: map[string]served{}, maxValues: maxValues, sessions: map[string]map[string]*watch{}, now: time.Now}
}

// collect takes the resources of every bundle with a loaded tool.
func (rh *resourceHost) collect(reg *sdk.Registry, selected map[string]bool) (subscribable, completes bool) {
	for _, t := range rh.hostTemplates {
		rh.templates = append(rh.templates, newTemplateEntry(t))
		completes = completes || t.Complete != nil
	}
	for _, b := range reg.Bundles() {
		loaded := false
		for _, t := range b.Tools {
			loaded = loaded || selected[t.Name]
		}
		if !loaded {
			continue
		}
		for _, r := range b.Resources {
			r := r
			rh.fixed[r.URI] = served{mime: r.MIMEType, revision: r.Revision, instance: r.Instance,
				read: func(ctx context.Context, _ string, _ map[string]string) (sdk.ResourceContent, error) {
					return r.Read(ctx)
				}}
			subscribable = subscribable || r.Revision != nil
		}
		for _, t := range b.Templates {
			rh.templates = append(rh.templates, newTemplateEntry(t))
			subscribable = subscribable || t.Revision != nil
			completes = completes || t.Complete != nil
		}
	}
	return subscribable, completes
}

func newTemplateEntry(t sdk.ResourceTemplate) templateEntry {
	te := templateEntry{tpl: t,
		compiled: mcp.NewResourceTemplate(t.URITemplate, t.Name, mcp.WithTemplateDescription(t.Description), mcp.WithTemplateMIMEType(t.MIMEType))}
	if i := strings.IndexByte(t.URITemplate, '{'); i >= 0 && strings.Count(t.URITemplate, "{") == 1 && strings.HasSuffix(t.URITemplate, "}") {
		name := t.URITemplate[i+1 : len(t.URITemplate)-1]
		if name != "" && strings.IndexFunc(name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
		}) < 0 {
			te.prefix, te.variable = t.URITemplate[:i], name
		}
	}
	return te
}

func (rh *resourceHost) empty() bool { return len(rh.fixed) == 0 && len(rh.templates) == 0 }

// register adds the resources to the server (call after NewMCPServer).
func (rh *resourceHost) register(reg *sdk.Registry, selected map[string]bool) {
	rh.fixedResources(reg, selected, func(r sdk.Resource) {
		res := mcp.NewResource(r.URI, r.Name, mcp.WithResourceDescription(r.Description), mcp.WithMIMEType(r.MIMEType))
		rh.srv.AddResource(res, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return rh.read(ctx, req)
		})
	})
	for _, te := range rh.templates {
		rh.srv.AddResourceTemplate(te.compiled, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return rh.read(ctx, req)
		})
	}
	if rh.notify == nil {
		rh.notify = func(session, uri string) error {
			return rh.srv.SendNotificationToSpecificClient(session, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": uri})
		}
	}
}

// requestedMetaKey carries, in a rewritten resources/read, the URI the
// client sent (see canonicalRead).
const requestedMetaKey = "sipnab.dev/requested-uri"

func requestedURI(req mcp.ReadResourceRequest) string {
	if m := req.Params.Meta; m != nil {
		if s, ok := m.AdditionalFields[requestedMetaKey].(string); ok {
			return s
		}
	}
	return ""
}

func (rh *resourceHost) fixedResources(reg *sdk.Registry, selected map[string]bool, fn func(sdk.Resource)) {
	for _, b := range reg.Bundles() {
		for _, r := range b.Resources {
			if _, ok := rh.fixed[r.URI]; ok {
				fn(r)
			}
		}
	}
}

// lookup finds what serves a URI: a fixed resource first, then the first
// template the URI is an RFC 6570 expansion of, then (for a raw value that
// was not percent-encoded, such as a Call-ID holding @ or /) the
// <prefix>{var} template with the longest matching prefix, the rest of the
// URI taken verbatim as the value.
func (rh *resourceHost) lookup(uri string) (served, map[string]string, bool) {
	s, vars, _, ok := rh.resolve(uri)
	return s, vars, ok
}

// resolve is lookup that also returns the URI's canonical form (itself
// unless it resolved as a raw value: then the encoded URI).
func (rh *resourceHost) resolve(uri string) (served, map[string]string, string, bool) {
	if s, ok := rh.fixed[uri]; ok {
		return s, nil, uri, true
	}
	for _, te := range rh.templates {
		if vals := te.compiled.URITemplate.Match(uri); vals != nil {
			vars := map[string]string{}
			for k, v := range vals {
				vars[k] = strings.Join(v.V, ",")
			}
			return te.served(), vars, uri, true
		}
	}
	var best *templateEntry
	for i := range rh.templates {
		te := &rh.templates[i]
		if te.prefix != "" && len(uri) > len(te.prefix) && strings.HasPrefix(uri, te.prefix) && (best == nil || len(te.prefix) > len(best.prefix)) {
			best = te
		}
	}
	if best == nil {
		return served{}, nil, "", false
	}
	raw := uri[len(best.prefix):]
	return best.served(), map[string]string{best.variable: raw}, best.prefix + pctEncode(raw), true
}

func (te *templateEntry) served() served {
	t := te.tpl
	return served{mime: t.MIMEType, revision: t.Revision, instance: t.Instance, read: t.Read}
}

// pctEncode percent-encodes every byte but RFC 3986's unreserved ones, as
// an RFC 6570 simple expansion does.
func pctEncode(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// canonicalRead lets a resources/read name a raw value: mcp-go routes a
// read by RFC 6570 matching only, so the incoming request (decoded and
// encoded again as JSON, never matched as bytes) of a URI that matches no
// template but resolves as a raw value (sipnab://live/dialogs/abc@host)
// names its encoded form before mcp-go sees it, the client's URI kept in
// _meta so the answer names the URI the client asked for. Any other message
// passes unchanged.
func (rh *resourceHost) canonicalRead(msg []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	var method string
	if json.Unmarshal(m["method"], &method) != nil || method != string(mcp.MethodResourcesRead) {
		return msg
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m["params"], &params) != nil {
		return msg
	}
	var uri string
	if json.Unmarshal(params["uri"], &uri) != nil {
		return msg
	}
	_, _, canon, ok := rh.resolve(uri)
	if !ok || canon == uri {
		return msg
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return msg
	}
	meta[requestedMetaKey], _ = json.Marshal(uri)
	params["uri"], _ = json.Marshal(canon)
	params["_meta"], _ = json.Marshal(meta)
	m["params"], _ = json.Marshal(params)
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// read answers a resources/read mcp-go routed here: the contents read at
// admission (admission.go), or read now for a request that did not pass
// the front.
func (rh *resourceHost) read(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	if t := rh.admitted.take(req.Params.Meta); t != nil && t.contents != nil {
		return t.contents, nil
	}
	return rh.readURI(ctx, req.Params.URI, requestedURI(req))
}

func (rh *resourceHost) readURI(ctx context.Context, uri, requested string) ([]mcp.ResourceContents, error) {
	s, vars, ok := rh.lookup(uri)
	if !ok {
		return nil, fmt.Errorf("no resource %q", uri)
	}
	// A rewritten read answers under the URI the client sent, when that
	// URI resolves to this one.
	if requested != "" {
		if _, _, canon, ok := rh.resolve(requested); ok && canon == uri {
			uri = requested
		}
	}
	c, err := s.read(ctx, uri, vars)
	if err != nil {
		return nil, sdk.AsError(err)
	}
	mime := c.MIMEType
	if mime == "" {
		mime = s.mime
	}
	if c.Text == "" && c.Blob != nil {
		return []mcp.ResourceContents{mcp.BlobResourceContents{URI: uri, MIMEType: mime, Blob: base64.StdEncoding.EncodeToString(c.Blob)}}, nil
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: mime, Text: c.Text}}, nil
}

// CompleteResourceArgument answers completion/complete for a template
// variable: live values, capped, with the total; unknown → empty.
func (rh *resourceHost) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	out := &mcp.Completion{Values: []string{}}
	for _, te := range rh.templates {
		if te.tpl.URITemplate != uri || te.tpl.Complete == nil {
			continue
		}
		vals := te.tpl.Complete(ctx, arg.Name, arg.Value)
		out.Total = len(vals)
		if len(vals) > rh.maxValues {
			vals = vals[:rh.maxValues]
			out.HasMore = true
		}
		out.Values = append(out.Values, vals...)
	}
	return out, nil
}

// checkSubscribe refuses a subscription of session before mcp-go records
// it (admission.go): the URI must be subscribable and the connection under
// its cap. A request without a session (2026-07-28) passes: mcp-go answers
// that the method was removed.
func (rh *resourceHost) checkSubscribe(session, uri string) error {
	s, _, ok := rh.lookup(uri)
	if !ok || s.revision == nil {
		return sdk.InvalidParams("resource %q cannot be subscribed to: only live views change", uri)
	}
	if session == "" {
		return nil
	}
	rh.mu.Lock()
	defer rh.mu.Unlock()
	if w := rh.sessions[session]; len(w) >= maxSubscriptions && w[uri] == nil {
		return sdk.InvalidParams("at most %d subscriptions per connection", maxSubscriptions)
	}
	return nil
}

func (rh *resourceHost) subscribe(ctx context.Context, uri string) {
	sess := server.ClientSessionFromContext(ctx)
	s, vars, ok := rh.lookup(uri)
	if sess == nil || sess.SessionID() == "" || !ok || s.revision == nil {
		return
	}
	w := &watch{s: s, uri: uri, vars: vars, rev: s.revision()}
	if s.instance != nil {
		w.instance = s.instance()
	}
	if c, err := s.read(ctx, uri, vars); err == nil {
		w.digest = digest(c)
	}
	id := sess.SessionID()
	rh.mu.Lock()
	defer rh.mu.Unlock()
	if rh.closed || (rh.alive != nil && !rh.alive(id)) {
		rh.log.Debug("subscription of an ended connection not recorded", "session", id, "uri", uri)
		return
	}
	m := rh.sessions[id]
	if m == nil {
		m = map[string]*watch{}
		rh.sessions[id] = m
	}
	if m[uri] == nil {
		m[uri] = w
	}
	rh.startPollerLocked()
}

func (rh *resourceHost) unsubscribe(ctx context.Context, uri string) {
	if sess := server.ClientSessionFromContext(ctx); sess != nil {
		rh.mu.Lock()
		id := sess.SessionID()
		delete(rh.sessions[id], uri)
		if len(rh.sessions[id]) == 0 {
			delete(rh.sessions, id)
		}
		rh.mu.Unlock()
	}
}

// forget drops every subscription of a connection that went away (the
// poller exits at its next tick when none is left).
func (rh *resourceHost) forget(id string) {
	rh.mu.Lock()
	n := len(rh.sessions[id])
	delete(rh.sessions, id)
	total := rh.countLocked()
	rh.mu.Unlock()
	if n > 0 {
		rh.log.Debug("connection ended; its subscriptions dropped", "session", id, "dropped", n, "subscriptions", total)
	}
}

// bindSessions ties subscriptions to the HTTP session table: a session
// that ends (DELETE, eviction) takes its subscriptions with it, and a
// subscribe for a session already ended is not recorded.
func (rh *resourceHost) bindSessions(m *sessionManager) {
	m.onEnd = rh.forget
	rh.alive = m.isLive
}

// shut ends the only connection (stdio, at EOF): every subscription is
// dropped and a subscribe still in flight is not recorded.
func (rh *resourceHost) shut() {
	rh.mu.Lock()
	rh.closed = true
	n := rh.countLocked()
	rh.sessions = map[string]map[string]*watch{}
	rh.mu.Unlock()
	if n > 0 {
		rh.log.Debug("connection ended; its subscriptions dropped", "dropped", n, "subscriptions", 0)
	}
}

// count is the number of subscriptions held, over every connection.
func (rh *resourceHost) count() int {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	return rh.countLocked()
}

func (rh *resourceHost) countLocked() int {
	n := 0
	for _, m := range rh.sessions {
		n += len(m)
	}
	return n
}

func digest(c sdk.ResourceContent) [32]byte {
	h := sha256.New()
	h.Write([]byte(c.MIMEType))
	h.Write([]byte{0})
	h.Write([]byte(c.Text))
	h.Write([]byte{0})
	h.Write(c.Blob)
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

// run watches subscribed URIs until ctx ends: an unchanged revision costs
// one counter read; a moved revision (or instance) marks the watch dirty;
// a dirty watch renders once its debounce window is open (at most one
// rendering per window per URI and connection, never one per poll) and
// notifies when the digest changed, or always after a capture swap. A
// change inside the window is held, not dropped.
//
// The poller runs only while some connection holds a subscription: the
// first subscription starts it, and it exits at the first tick that finds
// none left (or when the server stops).
func (rh *resourceHost) run(ctx context.Context) {
	rh.pollers.Add(1)
	defer rh.pollers.Add(-1)
	rh.log.Debug("subscription poller started")
	defer rh.log.Debug("subscription poller stopped")
	t := time.NewTicker(subscribePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			rh.mu.Lock()
			rh.polling = false
			rh.mu.Unlock()
			return
		case now := <-t.C:
			rh.mu.Lock()
			if len(rh.sessions) == 0 {
				rh.polling = false
				rh.mu.Unlock()
				return
			}
			rh.mu.Unlock()
			rh.tick(ctx, now)
		}
	}
}

// resourceProbeKey, in the context start receives, carries a func told of
// the resourceHost (tests read its subscription and poller counts).
type resourceProbeKey struct{}

// start records the server's lifetime: the poller runs under it.
func (rh *resourceHost) start(ctx context.Context) {
	if probe, ok := ctx.Value(resourceProbeKey{}).(func(*resourceHost)); ok {
		probe(rh)
	}
	rh.mu.Lock()
	rh.base = ctx
	rh.startPollerLocked()
	rh.mu.Unlock()
}

// startPollerLocked starts the poller when a subscription exists and none
// runs (rh.mu held).
func (rh *resourceHost) startPollerLocked() {
	if rh.polling || rh.base == nil || rh.base.Err() != nil || len(rh.sessions) == 0 {
		return
	}
	rh.polling = true
	go rh.run(rh.base)
}

type sessionWatch struct {
	session string
	w       *watch
}

func (rh *resourceHost) tick(ctx context.Context, now time.Time) {
	rh.mu.Lock()
	var all []sessionWatch
	for id, m := range rh.sessions {
		for _, w := range m {
			all = append(all, sessionWatch{id, w})
		}
	}
	rh.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].session+all[i].w.uri < all[j].session+all[j].w.uri })
	for _, sw := range all {
		w := sw.w
		if rev := w.s.revision(); rev != w.rev {
			w.rev, w.dirty = rev, true
		}
		if w.s.instance != nil {
			if inst := w.s.instance(); inst != w.instance {
				w.instance, w.dirty, w.forced = inst, true, true
			}
		}
		if !w.dirty || now.Sub(w.lastRender) < subscribeDebounce || now.Sub(w.lastSent) < subscribeDebounce {
			continue
		}
		w.dirty, w.lastRender = false, now
		changed := w.forced
		if c, err := w.s.read(ctx, w.uri, w.vars); err == nil {
			if d := digest(c); d != w.digest {
				w.digest, changed = d, true
			}
		} else {
			rh.log.Debug("resource not rendered for its subscriber", "uri", w.uri, "error", err)
		}
		if !changed {
			continue
		}
		w.forced, w.lastSent = false, rh.now()
		if err := rh.notify(sw.session, w.uri); err != nil {
			rh.log.Debug("resource update not delivered", "uri", w.uri, "error", err)
		}
	}
}
