package sdk

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CursorTimeLayout is the fixed-width UTC timestamp of every compound
// cursor, so cursors compare correctly as text.
const CursorTimeLayout = "2006-01-02T15:04:05.000000000Z"

// IndexWidth is the zero-padded width of a cursor's message index: a
// hand-built "#10" would sort before "#2" and skip eight messages.
const IndexWidth = 10

// Cursor is a parsed compound cursor: the position inside a sealed cursor
// (see [Call.BindCursor]). Positions are compared as text: build row keys
// with the same functions and page with [After].
type Cursor struct {
	// Time is the sort timestamp of the last row returned.
	Time time.Time
	// Key is the text after "|" (a Call-ID, or an SSRC key); empty for a
	// bare timestamp cursor.
	Key string
	// Index is the message index after "#", when HasIndex.
	Index    int
	HasIndex bool
}

// TimeCursor builds "<RFC3339>|<key>" (list_dialogs, find_problems,
// search_by_time, tail_dialogs, the rtp_stats sweep).
func TimeCursor(t time.Time, key string) string {
	return t.UTC().Format(CursorTimeLayout) + "|" + key
}

// IndexCursor builds "<RFC3339>|<key>#<zero-padded index>" (search_messages).
func IndexCursor(t time.Time, key string, index int) string {
	return fmt.Sprintf("%s#%0*d", TimeCursor(t, key), IndexWidth, index)
}

// After reports whether a row with sort key rowKey (built like the cursor)
// comes after cursor. An empty cursor is the start.
func After(rowKey, cursor string) bool { return cursor == "" || rowKey > cursor }

// ParseCursor validates a position (what [Call.BindCursor] returns from a
// sealed cursor) and splits it. A bare RFC3339 timestamp parses (it pages
// strictly after that instant); clients can no longer send one, since a
// cursor they did not get from this server is refused before it is opened.
// A malformed position is an invalid-params error.
func ParseCursor(s string) (Cursor, error) {
	var c Cursor
	ts, rest, hasKey := strings.Cut(s, "|")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return c, Refuse(KindInvalidCursor, "cursor", "invalid cursor %q: want the next_cursor of an earlier page", s)
	}
	c.Time = t
	if !hasKey {
		return c, nil
	}
	c.Key = rest
	if i := strings.LastIndexByte(rest, '#'); i >= 0 {
		if n, err := strconv.Atoi(rest[i+1:]); err == nil && n >= 0 && len(rest)-i-1 == IndexWidth {
			c.Key, c.Index, c.HasIndex = rest[:i], n, true
		}
	}
	return c, nil
}

// A cursor on the wire is sealed: the position (a [TimeCursor] or
// [IndexCursor]) travels with what it was issued for, the capture instance,
// the tool and the arguments that select and order its rows, signed with a
// key this process draws at random, and base64url-encoded. A cursor from
// another capture, another tool or another filter is refused naming what it
// was bound to and what was asked (a position read against another row set
// would answer an empty or wrong "last page"); a cursor altered by hand is
// refused as altered. Clients cannot build one: they pass back next_cursor.

// cursorVersion is the sealed cursor format.
const cursorVersion = 1

// cursorArgBytes is the longest argument value a cursor carries verbatim;
// a longer one travels as its length and a SHA-256 prefix, enough to refuse
// a different value and to say so.
const cursorArgBytes = 64

var cursorKey = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails (crypto/rand)
	return k
})

// cursorScope is what a cursor is bound to.
type cursorScope struct {
	Version  int               `json:"v"`
	Tool     string            `json:"t"`
	Instance string            `json:"c"`
	Args     map[string]string `json:"a,omitempty"`
	Pos      string            `json:"p"`
}

// boundValue is how a cursor records an argument value: verbatim up to
// cursorArgBytes, else its length and digest.
func boundValue(v string) string {
	if len(v) <= cursorArgBytes {
		return v
	}
	d := sha256.Sum256([]byte(v))
	return fmt.Sprintf("sha256:%s (%d bytes)", hex.EncodeToString(d[:8]), len(v))
}

func sealMAC(payload []byte) []byte {
	m := hmac.New(sha256.New, cursorKey())
	m.Write(payload)
	return m.Sum(nil)[:12]
}

// BindCursor opens the cursor a call was given and binds the call's next
// cursors ([Call.Cursor]) to the same scope: the capture instance (the
// identity's instance: a new capture voids every cursor), this tool, and
// args, the name/value pairs of the arguments that select or order the
// rows (a filter, kinds, a query, a time window, a Call-ID ...; not limit,
// fields or max_response_bytes, which only cut a page). It returns the
// position inside the cursor ("" for no cursor). A cursor that is
// malformed, altered, or bound to another capture, tool or arguments is an
// invalid-params error naming what it was bound to and what was asked.
func (c *Call) BindCursor(cursor, instance string, args ...string) (string, error) {
	sc := &cursorScope{Version: cursorVersion, Tool: c.tool, Instance: instance}
	for i := 0; i+1 < len(args); i += 2 {
		if sc.Args == nil {
			sc.Args = map[string]string{}
		}
		sc.Args[args[i]] = boundValue(args[i+1])
	}
	c.cursor = sc
	if cursor == "" {
		return "", nil
	}
	got, signed, err := openCursor(cursor)
	if err != nil {
		return "", err
	}
	switch {
	case got.Instance != sc.Instance:
		return "", InvalidParams("cursor is from capture instance %s, and this is instance %s: a cursor does not outlive its capture; omit cursor to start again", got.Instance, sc.Instance)
	case !signed:
		return "", InvalidParams("invalid cursor: it was altered (its signature does not match what this server issued); pass back next_cursor as it was given")
	case got.Tool != sc.Tool:
		return "", InvalidParams("cursor belongs to %s, not %s: pass it back to %s, or omit cursor to start %s", got.Tool, sc.Tool, got.Tool, sc.Tool)
	}
	if was, asked := scopeDiff(got.Args, sc.Args); was != "" {
		return "", InvalidParams("cursor belongs to %s with %s; this call asks %s: a cursor continues only the listing that issued it; omit cursor to start this one", sc.Tool, was, asked)
	}
	return got.Pos, nil
}

// Cursor seals a position as a next_cursor bound to the scope of
// [Call.BindCursor]; "" stays "" (no next page). A call that bound nothing
// (a handler under test with [NewCall]) seals to an empty scope.
func (c *Call) Cursor(pos string) string {
	if pos == "" {
		return ""
	}
	sc := cursorScope{Version: cursorVersion, Tool: c.tool}
	if c.cursor != nil {
		sc = *c.cursor
	}
	sc.Pos = pos
	payload, _ := json.Marshal(sc)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(sealMAC(payload))
}

// openCursor decodes a sealed cursor and says whether its signature holds.
// The caller reads the instance before the signature, so a cursor of
// another server (another key, another instance) is refused as another
// capture's, not as altered.
func openCursor(cursor string) (cursorScope, bool, error) {
	var sc cursorScope
	bad := func() (cursorScope, bool, error) {
		shown := cursor
		if len(shown) > 80 {
			shown = shown[:80] + "..."
		}
		return sc, false, InvalidParams("invalid cursor %q: not a next_cursor this server issued; pass back next_cursor as it was given, or omit cursor to start", shown)
	}
	p64, m64, ok := strings.Cut(cursor, ".")
	if !ok {
		return bad()
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.Strict().DecodeString(m64)
	if err1 != nil || err2 != nil || json.Unmarshal(payload, &sc) != nil || sc.Version != cursorVersion {
		return bad()
	}
	return sc, hmac.Equal(mac, sealMAC(payload)), nil
}

// scopeDiff describes the arguments on which two scopes differ, as the
// cursor had them and as the call asks them; "" when they agree.
func scopeDiff(was, asked map[string]string) (string, string) {
	var names []string
	for k := range was {
		names = append(names, k)
	}
	for k := range asked {
		if _, ok := was[k]; !ok {
			names = append(names, k)
		}
	}
	sortStrings(names)
	var w, a []string
	for _, k := range names {
		if was[k] != asked[k] {
			w = append(w, showArg(k, was[k]))
			a = append(a, showArg(k, asked[k]))
		}
	}
	return strings.Join(w, ", "), strings.Join(a, ", ")
}

func showArg(name, v string) string {
	if v == "" {
		return name + " absent"
	}
	if strings.HasPrefix(v, "sha256:") {
		return name + " " + v
	}
	return fmt.Sprintf("%s %q", name, v)
}

// PageEnd says where a page ends when k of the page's rows are kept
// (a page cut to fit the response, [Call.FitPage]): last is the sealed
// cursor of its last kept row, keys[k-1], or of pos when it keeps none;
// more is whether rows follow it (the listing had more, or rows of the
// page were cut off); next is last when more, else "" (no next page).
func (c *Call) PageEnd(pos string, keys []string, k int, listingHasMore bool) (last string, more bool, next string) {
	at := pos
	if k > 0 {
		at = keys[k-1]
	}
	last = c.Cursor(at)
	more = listingHasMore || k < len(keys)
	if more {
		next = last
	}
	return last, more, next
}
