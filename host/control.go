package host

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sipnab/sipnab/sdk"
)

// buildInfoOf is what this binary was built with, for the bundles
// (sdk.BuildInfo, read by server_capabilities): the version line is the
// one --version prints (versionLine), the features are what is compiled
// into every build of this module (both MCP transports, the HEP listener
// and sender), the bundles those cmd/sipnab passed in.
func buildInfoOf(bundles []sdk.Bundle) sdk.BuildInfo {
	bi := sdk.BuildInfo{Version: Version, VersionLine: versionLine(), Features: builtFeatures()}
	for _, b := range bundles {
		bi.Bundles = append(bi.Bundles, b.Info().ID)
	}
	return bi
}

// builtFeatures are the build features every sipnab binary carries: the
// stdio and streamable HTTP transports (host/transport.go), the HEP
// listener (-L, core/heplisten) and the HEP sender (-H, core/hepsend).
// There are no build tags: a feature is listed only when its code is in
// this module and linked.
func builtFeatures() []string { return []string{"mcp", "mcp-http", "hep", "hep-send"} }

// stopper is the host's clean stop (sdk.Shutdowner): Shutdown marks the
// stop requested by the call in flight (its JSON-RPC id, from the call's
// context); the transports call answered after every message they write,
// and the stopping call's own answer cancels the serve context. The server
// then ends as it does on EOF or a signal: sources stop, -O/-H are
// flushed, the audit file is closed, exit 0.
type stopper struct {
	log       hclog.Logger
	cancel    context.CancelFunc
	requested atomic.Bool
	mu        sync.Mutex
	id        string // the stopping call's id; "" when unknown
	once      sync.Once
}

var _ sdk.Shutdowner = (*stopper)(nil)

// callIDKey carries a tool call's JSON-RPC id in its context
// (runWithDeadline).
type callIDKey struct{}

func (s *stopper) Shutdown(ctx context.Context, reason string) bool {
	if !s.requested.CompareAndSwap(false, true) {
		return false
	}
	id, _ := ctx.Value(callIDKey{}).(string)
	s.mu.Lock()
	s.id = id
	s.mu.Unlock()
	s.log.Warn("stopping the server on request", "reason", reason, "id", id)
	return true
}

// answered is told of each message written (msg nil: an HTTP request
// answered whole); once the stop is requested, the stopping call's answer
// (or, its id unknown, the next message) cancels the serve context.
func (s *stopper) answered(msg []byte) {
	if s == nil || !s.requested.Load() {
		return
	}
	s.mu.Lock()
	id := s.id
	s.mu.Unlock()
	if msg != nil && id != "" {
		got, ok := responseID(msg)
		if !ok || (got != id && got != strconv.Quote(id)) {
			return // another message: the stopping call's answer is still to come
		}
	}
	s.once.Do(s.cancel)
}

// elicitor asks the person behind the client (sdk.Elicitor) through
// mcp-go's elicitation/create; srv is set once the MCP server exists.
type elicitor struct {
	srv atomic.Pointer[server.MCPServer]
}

var _ sdk.Elicitor = (*elicitor)(nil)

// Supported: the calling session declared the elicitation capability in
// its initialize request.
func (e *elicitor) Supported(ctx context.Context) bool {
	if e.srv.Load() == nil {
		return false
	}
	s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	return s.GetClientCapabilities().Elicitation != nil
}

// Confirm sends a form with one required boolean "confirm" and reports
// true only on accept with confirm: true (mcp-surface §4.6).
func (e *elicitor) Confirm(ctx context.Context, message string) (bool, error) {
	srv := e.srv.Load()
	if srv == nil {
		return false, server.ErrElicitationNotSupported
	}
	res, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params: mcp.ElicitationParams{
			Mode:    mcp.ElicitationModeForm,
			Message: message,
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"confirm": map[string]any{"type": "boolean", "description": "true to go ahead"},
				},
				"required": []string{"confirm"},
			},
		},
	})
	if err != nil {
		return false, err
	}
	if res.Action != mcp.ElicitationResponseActionAccept {
		return false, nil
	}
	c, _ := res.Content.(map[string]any)
	ok, _ := c["confirm"].(bool)
	return ok, nil
}
