package sdk

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CursorTimeLayout is the fixed-width UTC timestamp of every compound
// cursor, so cursors compare correctly as text.
const CursorTimeLayout = "2006-01-02T15:04:05.000000000Z"

// IndexWidth is the zero-padded width of a cursor's message index: a
// hand-built "#10" would sort before "#2" and skip eight messages.
const IndexWidth = 10

// Cursor is a parsed compound cursor. Cursors are opaque to clients and
// compared as text: build row keys with the same functions and page with
// [After].
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

// ParseCursor validates a cursor and splits it. A bare RFC3339 timestamp is
// accepted for compatibility (it pages strictly after that instant). A
// malformed cursor is an invalid-params error.
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
