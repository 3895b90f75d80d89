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
	mime     string
}

// resourceHost registers the selected bundles' resources with mcp-go,
// answers completions, and tracks subscriptions itself.
type resourceHost struct {
	log       hclog.Logger
	srv       *server.MCPServer
	fixed     map[string]served
	templates []templateEntry
	maxValues int
	// hostTemplates are the host's own templates (the file resource),
	// served whatever the tool selection.
	hostTemplates []sdk.ResourceTemplate

	mu       sync.Mutex
	sessions map[string]map[string]*watch // session id → uri → watch
}

type templateEntry struct {
	tpl      sdk.ResourceTemplate
	compiled mcp.ResourceTemplate
}

type watch struct {
	s        served
	uri      string
	vars     map[string]string
	rev      uint64
	digest   [32]byte
	lastSent time.Time
	pending  bool
}

func newResourceHost(log hclog.Logger, maxRows int) *resourceHost {
	maxValues := maxCompletions
	if maxRows > 0 && maxRows < maxValues {
		maxValues = maxRows
	}
	return &resourceHost{log: log, fixed: map[string]served{}, maxValues: maxValues, sessions: map[string]map[string]*watch{}}
}

// collect takes the resources of every bundle with a loaded tool.
func (rh *resourceHost) collect(reg *sdk.Registry, selected map[string]bool) (subscribable, completes bool) {
	for _, t := range rh.hostTemplates {
		rh.templates = append(rh.templates, templateEntry{tpl: t,
			compiled: mcp.NewResourceTemplate(t.URITemplate, t.Name, mcp.WithTemplateDescription(t.Description), mcp.WithTemplateMIMEType(t.MIMEType))})
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
			rh.fixed[r.URI] = served{mime: r.MIMEType, revision: r.Revision,
				read: func(ctx context.Context, _ string, _ map[string]string) (sdk.ResourceContent, error) {
					return r.Read(ctx)
				}}
			subscribable = subscribable || r.Revision != nil
		}
		for _, t := range b.Templates {
			rh.templates = append(rh.templates, templateEntry{tpl: t,
				compiled: mcp.NewResourceTemplate(t.URITemplate, t.Name, mcp.WithTemplateDescription(t.Description), mcp.WithTemplateMIMEType(t.MIMEType))})
			subscribable = subscribable || t.Revision != nil
			completes = completes || t.Complete != nil
		}
	}
	return subscribable, completes
}

func (rh *resourceHost) empty() bool { return len(rh.fixed) == 0 && len(rh.templates) == 0 }

// register adds the resources to the server (call after NewMCPServer).
func (rh *resourceHost) register(reg *sdk.Registry, selected map[string]bool) {
	rh.fixedResources(reg, selected, func(r sdk.Resource) {
		res := mcp.NewResource(r.URI, r.Name, mcp.WithResourceDescription(r.Description), mcp.WithMIMEType(r.MIMEType))
		rh.srv.AddResource(res, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return rh.readURI(ctx, req.Params.URI)
		})
	})
	for _, te := range rh.templates {
		rh.srv.AddResourceTemplate(te.compiled, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return rh.readURI(ctx, req.Params.URI)
		})
	}
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
// matching template.
func (rh *resourceHost) lookup(uri string) (served, map[string]string, bool) {
	if s, ok := rh.fixed[uri]; ok {
		return s, nil, true
	}
	for _, te := range rh.templates {
		if vals := te.compiled.URITemplate.Match(uri); vals != nil {
			vars := map[string]string{}
			for k, v := range vals {
				vars[k] = strings.Join(v.V, ",")
			}
			t := te.tpl
			return served{mime: t.MIMEType, revision: t.Revision, read: t.Read}, vars, true
		}
	}
	return served{}, nil, false
}

func (rh *resourceHost) readURI(ctx context.Context, uri string) ([]mcp.ResourceContents, error) {
	s, vars, ok := rh.lookup(uri)
	if !ok {
		return nil, fmt.Errorf("no resource %q", uri)
	}
	c, err := s.read(ctx, uri, vars)
	if err != nil {
		return nil, wireError(err)
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

// checkSubscribe refuses a subscription before mcp-go records it: the URI
// must be subscribable and the connection under its cap.
func (rh *resourceHost) checkSubscribe(ctx context.Context, raw json.RawMessage) error {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &msg) != nil || msg.Method != string(mcp.MethodResourcesSubscribe) {
		return nil
	}
	s, _, ok := rh.lookup(msg.Params.URI)
	if !ok || s.revision == nil {
		return wireError(sdk.InvalidParams("resource %q cannot be subscribed to: only live views change", msg.Params.URI))
	}
	sess := server.ClientSessionFromContext(ctx)
	if sess == nil {
		return wireError(sdk.InvalidParams("subscriptions need a session"))
	}
	rh.mu.Lock()
	defer rh.mu.Unlock()
	if w := rh.sessions[sess.SessionID()]; len(w) >= maxSubscriptions && w[msg.Params.URI] == nil {
		return wireError(sdk.InvalidParams("at most %d subscriptions per connection", maxSubscriptions))
	}
	return nil
}

func (rh *resourceHost) subscribe(ctx context.Context, uri string) {
	sess := server.ClientSessionFromContext(ctx)
	s, vars, ok := rh.lookup(uri)
	if sess == nil || !ok || s.revision == nil {
		return
	}
	w := &watch{s: s, uri: uri, vars: vars, rev: s.revision(), lastSent: time.Time{}}
	if c, err := s.read(ctx, uri, vars); err == nil {
		w.digest = digest(c)
	}
	rh.mu.Lock()
	defer rh.mu.Unlock()
	m := rh.sessions[sess.SessionID()]
	if m == nil {
		m = map[string]*watch{}
		rh.sessions[sess.SessionID()] = m
	}
	if m[uri] == nil {
		m[uri] = w
	}
}

func (rh *resourceHost) unsubscribe(ctx context.Context, uri string) {
	if sess := server.ClientSessionFromContext(ctx); sess != nil {
		rh.mu.Lock()
		delete(rh.sessions[sess.SessionID()], uri)
		rh.mu.Unlock()
	}
}

// forget drops every subscription of a connection that went away.
func (rh *resourceHost) forget(id string) {
	rh.mu.Lock()
	delete(rh.sessions, id)
	rh.mu.Unlock()
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
// one counter read; a new revision renders and compares digests; a changed
// rendering notifies, at most once per debounce window per URI and
// connection (a change inside the window is held, not dropped).
func (rh *resourceHost) run(ctx context.Context) {
	t := time.NewTicker(subscribePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			rh.tick(ctx, now)
		}
	}
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
			w.rev = rev
			if c, err := w.s.read(ctx, w.uri, w.vars); err == nil {
				if d := digest(c); d != w.digest {
					w.digest, w.pending = d, true
				}
			}
		}
		if w.pending && now.Sub(w.lastSent) >= subscribeDebounce {
			w.pending, w.lastSent = false, now
			err := rh.srv.SendNotificationToSpecificClient(sw.session, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": w.uri})
			if err != nil {
				rh.log.Debug("resource update not delivered", "uri", w.uri, "error", err)
			}
		}
	}
}
