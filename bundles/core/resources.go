package core

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

// The live views (mcp-surface §4.1): the dialog list and one dialog, as
// resources a client can read and subscribe to. They live with list_dialogs
// and get_dialog because they are rendered by those tools' own code: the
// resource text is the tool's answer to a call without arguments, so an
// operator never holds two renderings of one capture.

// maxResourceBytes is the ceiling of one resources/read (MAX_RESOURCE_BYTES):
// a live view is rendered under min(--mcp-max-response-bytes, this).
const maxResourceBytes = 8 << 20

// Live view URIs.
const (
	liveDialogsURI         = "sipnab://live/dialogs"
	liveDialogTemplate     = "sipnab://live/dialogs/{call_id}"
	liveDialogTemplateName = "call_id"
)

// addResources registers the live views. Both are subscribable: the
// revision is the dialog store's (RTP moves only the stream store, so audio
// never wakes a subscriber), and a Call-ID completion offers the Call-IDs
// held now.
func addResources(env sdk.Env, d *deps) {
	limits := env.Limits()
	if limits.MaxResponseBytes <= 0 || limits.MaxResponseBytes > maxResourceBytes {
		limits.MaxResponseBytes = maxResourceBytes
	}
	list, get := listDialogsTool(d), getDialogTool(d)
	rev := newLiveRevision(d.capture)
	// A capture swap always notifies, even a subscriber whose rendering
	// stays the same (an empty page before and after).
	instance := func() string { return d.capture.Identity().Instance }
	env.AddResource(sdk.Resource{
		URI:      liveDialogsURI,
		Name:     "live dialogs",
		MIMEType: "application/json",
		Description: "The dialog list now: list_dialogs' first page without arguments (same rows, limits and " +
			"fenced sender-written text). Subscribe to hear when it changes (at most once a second).",
		Read: func(ctx context.Context) (sdk.ResourceContent, error) {
			return render(ctx, list, json.RawMessage(`{}`), limits)
		},
		Revision: rev.revision,
		Instance: instance,
	})
	env.AddResourceTemplate(sdk.ResourceTemplate{
		URITemplate: liveDialogTemplate,
		Name:        "live dialog",
		MIMEType:    "application/json",
		Description: "One dialog now, rendered as get_dialog's first page; the Call-ID percent-encoded (RFC 6570) or raw. " +
			"A Call-ID the store does not hold is an empty page (no dialog, no messages), not an error. Subscribable.",
		Read: func(ctx context.Context, _ string, vars map[string]string) (sdk.ResourceContent, error) {
			return liveDialog(ctx, d, get, vars[liveDialogTemplateName], limits)
		},
		Revision: rev.revision,
		Instance: instance,
		Complete: func(_ context.Context, variable, prefix string) []string {
			if variable != liveDialogTemplateName {
				return nil
			}
			return completeCallIDs(d.capture.Dialogs(), prefix)
		},
	})
}

// completeCallIDs returns the Call-IDs the store holds now that start with
// prefix, in created_at order. Never cached: a completion offering an
// evicted Call-ID would cost an agent a call to discover.
func completeCallIDs(s *dialog.Store, prefix string) []string {
	ids := s.CallIDs()
	out := ids[:0]
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	return out
}

// render runs a tool's handler on args and returns its answer text: the
// same bytes tools/call carries as its first block.
func render(ctx context.Context, t sdk.Tool, args json.RawMessage, limits sdk.Limits) (sdk.ResourceContent, error) {
	r, err := t.Invoke(ctx, args, limits)
	if err != nil {
		return sdk.ResourceContent{}, err
	}
	if len(r.Blocks) == 0 {
		return sdk.ResourceContent{}, sdk.Internal("%s rendered nothing", t.Name)
	}
	if len(r.Blocks[0]) > limits.MaxResponseBytes {
		return sdk.ResourceContent{}, sdk.InvalidParams("rendering of %d bytes exceeds the %d bytes a resource read carries",
			len(r.Blocks[0]), limits.MaxResponseBytes)
	}
	return sdk.ResourceContent{Text: r.Blocks[0]}, nil
}

// liveDialog renders one Call-ID with get_dialog's handler, or the empty
// page when the store does not hold it (now, or any more by the time the
// handler looked).
func liveDialog(ctx context.Context, d *deps, get sdk.Tool, callID string, limits sdk.Limits) (sdk.ResourceContent, error) {
	if _, ok := d.capture.Dialogs().Lookup(callID); ok {
		args, err := json.Marshal(getDialogIn{CallID: callID})
		if err != nil {
			return sdk.ResourceContent{}, sdk.Internal("encoding call_id: %v", err)
		}
		c, err := render(ctx, get, args, limits)
		if err == nil {
			return c, nil
		}
		if _, still := d.capture.Dialogs().Lookup(callID); still {
			return sdk.ResourceContent{}, err
		}
	}
	b, err := json.Marshal(emptyDialogPage(answer.SourceState(d.capture.Status())))
	if err != nil {
		return sdk.ResourceContent{}, sdk.Internal("rendering the empty page: %v", err)
	}
	return sdk.ResourceContent{Text: string(b)}, nil
}

// liveEmptyPage is sipnab://live/dialogs/<Call-ID> for a Call-ID the
// store does not hold: get_dialog's envelope with no dialog and no
// messages. "Right now, nothing" is an answer, so a subscriber watching a
// call that has not started, or that was evicted, has content on both
// sides of the change.
type liveEmptyPage struct {
	// SchemaVersion is get_dialog's (2).
	SchemaVersion int `json:"schema_version"`
	// Messages is empty.
	Messages []GetDialogMessage `json:"messages"`
	// TotalMessages is 0: the store holds no message of the Call-ID now.
	TotalMessages int `json:"total_messages"`
	// Returned is 0.
	Returned int `json:"returned"`
	// FirstIndex is 0.
	FirstIndex int `json:"first_index"`
	// NextCursor is null.
	NextCursor *string `json:"next_cursor"`
	// Complete is false: an absent dialog may have been evicted.
	Complete bool `json:"complete"`
	sdk.SourceFlags
}

func emptyDialogPage(src sdk.SourceState) liveEmptyPage {
	return liveEmptyPage{SchemaVersion: getDialogSchemaVersion, Messages: []GetDialogMessage{}, SourceFlags: src.Flags()}
}

// liveRevision is the live views' change counter. It moves whenever the
// dialog store's revision moves, and also when the capture behind the
// views changes (a new instance or a new dialog store), so a capture swap
// always reaches the digest comparison even if the new store's counter
// happens to equal the old one's. Reading it costs two counter loads and
// the capture's identity; nothing is rendered.
type liveRevision struct {
	capture *engine.Capture

	mu       sync.Mutex
	store    *dialog.Store
	instance string
	storeRev uint64
	n        uint64
}

func newLiveRevision(c *engine.Capture) *liveRevision {
	return &liveRevision{capture: c}
}

func (l *liveRevision) revision() uint64 {
	s := l.capture.Dialogs()
	inst := l.capture.Identity().Instance
	r := s.Revision()
	l.mu.Lock()
	defer l.mu.Unlock()
	if s != l.store || inst != l.instance || r != l.storeRev {
		l.store, l.instance, l.storeRev = s, inst, r
		l.n++
	}
	return l.n
}
