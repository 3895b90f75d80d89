package query

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sipnab/sipnab/core/dialog"
)

// IndexWidth is the zero-padded width of a message index in a cursor: the
// server compares cursors as text, and a hand-built "#10" would sort before
// "#2" and skip eight messages.
const IndexWidth = 10

// ErrCursor is returned (wrapped) for a cursor that cannot be read.
var ErrCursor = errors.New("invalid cursor: want the next_cursor of an earlier page")

// Cursor is a position in a listing: the sort time and the Call-ID of the
// last row returned and, for a message position, the index of the last
// message returned. A cursor without a Call-ID (a bare timestamp, kept for
// compatibility) starts strictly after that instant, so it drops or
// repeats rows that share it.
type Cursor struct {
	Time      time.Time
	CallID    string
	HasCallID bool
	Index     int
	HasIndex  bool
}

// DialogCursor renders "<RFC 3339>|<Call-ID>" with a fixed-width UTC
// timestamp (the cursor of list_dialogs, find_problems, search_by_time and
// tail_dialogs).
func DialogCursor(t time.Time, callID string) string {
	return t.UTC().Format(dialog.CursorLayout) + "|" + callID
}

// MessageCursor renders "<RFC 3339>|<Call-ID>#<zero-padded index>" (the
// cursor of search_messages and get_dialog).
func MessageCursor(t time.Time, callID string, index int) string {
	return fmt.Sprintf("%s#%0*d", DialogCursor(t, callID), IndexWidth, index)
}

// CursorOf returns the cursor of a row in the given order.
func CursorOf(s *dialog.Summary, o dialog.Order) string {
	return DialogCursor(sortKey(s, o), s.CallID)
}

// ParseDialogCursor reads "<RFC 3339>|<Call-ID>" or a bare RFC 3339
// timestamp. Everything after the first "|" is the Call-ID, verbatim.
func ParseDialogCursor(s string) (Cursor, error) {
	ts, id, hasID := strings.Cut(s, "|")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Cursor{}, fmt.Errorf("%w (got %q)", ErrCursor, clip(s))
	}
	return Cursor{Time: t, CallID: id, HasCallID: hasID}, nil
}

// ParseMessageCursor reads "<RFC 3339>|<Call-ID>#<index>" with an index of
// exactly IndexWidth digits. A cursor whose Call-ID part does not end in
// "#" and digits is read as a dialog cursor: the position after every
// message of that dialog. One ending in "#" and a run of digits of another
// width is refused (ErrCursor, saying so): the index is compared as text,
// so a hand-built "#2" would sort after "#10" and silently skip the rest of
// the dialog's messages.
func ParseMessageCursor(s string) (Cursor, error) {
	c, err := ParseDialogCursor(s)
	if err != nil || !c.HasCallID {
		return c, err
	}
	i := strings.LastIndexByte(c.CallID, '#')
	if i < 0 || i == len(c.CallID)-1 {
		return c, nil
	}
	digits := c.CallID[i+1:]
	for _, r := range digits {
		if r < '0' || r > '9' {
			return c, nil
		}
	}
	if len(digits) != IndexWidth {
		return Cursor{}, fmt.Errorf("%w: the message index after '#' must be zero-padded to %d digits (got %q): pass next_cursor unchanged", ErrCursor, IndexWidth, clip("#"+digits))
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return Cursor{}, fmt.Errorf("%w (got %q)", ErrCursor, clip(s))
	}
	c.CallID, c.Index, c.HasIndex = c.CallID[:i], n, true
	return c, nil
}

// afterRow reports whether a row with sort time t and Call-ID id comes
// strictly after the cursor.
func (c *Cursor) afterRow(t time.Time, id string) bool {
	if d := t.Compare(c.Time); d != 0 || !c.HasCallID {
		return d > 0
	}
	return id > c.CallID
}

// atOrAfterRow reports whether the row is the cursor's own row or comes
// after it (search: the cursor's dialog may hold further hits).
func (c *Cursor) atOrAfterRow(t time.Time, id string) bool {
	if d := t.Compare(c.Time); d != 0 || !c.HasCallID {
		return d > 0
	}
	return id >= c.CallID
}

// clip shortens text echoed in an error message.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	cut := 80
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func sortKey(s *dialog.Summary, o dialog.Order) time.Time {
	if o == dialog.ByUpdated {
		return s.UpdatedAt
	}
	return s.CreatedAt
}
