package query

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sip"
)

// MaxQueryBytes bounds a search string.
const MaxQueryBytes = 1024

// The message parts a search looks in, in the order they are tried.
const (
	PartMethod = "method"
	PartFrom   = "from"
	PartTo     = "to"
	PartUA     = "ua"
	PartBody   = "body"
)

// SearchOptions select a page of search hits.
type SearchOptions struct {
	// Query is the text searched for (ASCII case-insensitive), 1 to
	// MaxQueryBytes bytes.
	Query string
	// After, when set, starts strictly after this message position.
	After *Cursor
	// Limit caps the hits returned; <= 0 returns every hit after the
	// cursor.
	Limit int
	// SnippetBytes caps a snippet (0: 4096).
	SnippetBytes int
}

// Hit is one message that contains the query.
type Hit struct {
	CallID string
	// CreatedAt is the dialog's created_at (the cursor's time).
	CreatedAt time.Time
	// Index is the message's 0-based index in its dialog.
	Index int
	// Part is where the query was found first: method, from, to, ua or
	// body.
	Part string
	// Snippet is the text around the match as the sender wrote it: the
	// start line for a method, "From: ..." for a header, the matching body
	// line with one line of context each side. Unfenced: the caller fences
	// it.
	Snippet string
}

// Cursor returns the hit's position ("<RFC 3339>|<Call-ID>#<index>").
func (h *Hit) Cursor() string { return MessageCursor(h.CreatedAt, h.CallID, h.Index) }

// SearchPage is one page of hits.
type SearchPage struct {
	Hits []Hit
	// TotalMatched counts every hit (one per message) in the retained
	// messages of every dialog, whatever the cursor.
	TotalMatched int
	// More: hits remain after the page.
	More bool
	// MessagesSearched counts the retained messages looked at.
	MessagesSearched int
}

// ErrQuery is returned for an empty or oversized search string.
var ErrQuery = errors.New("query must be 1 to 1024 bytes")

// Search finds the messages whose method, From, To, User-Agent or body
// contains the query (ASCII case-insensitive), in (created_at, Call-ID,
// message index) order. Only retained messages are searched (a dialog keeps
// at most the store's per-dialog cap). Each message is one hit at most.
func (q *Querier) Search(ctx context.Context, o SearchOptions) (SearchPage, error) {
	if o.Query == "" || len(o.Query) > MaxQueryBytes {
		return SearchPage{}, ErrQuery
	}
	if o.SnippetBytes <= 0 {
		o.SnippetBytes = 4096
	}
	needle := foldASCII(nil, o.Query)
	rows := q.Rows(dialog.ByCreated)
	var p SearchPage
	var buf []byte
	for i := range rows {
		if i%64 == 0 && ctx.Err() != nil {
			return SearchPage{}, ctx.Err()
		}
		row := &rows[i]
		d, ok := q.dialogs.Get(row.CallID)
		if !ok {
			continue
		}
		inPage := o.After == nil || o.After.atOrAfterRow(row.CreatedAt, row.CallID)
		sameAsCursor := o.After != nil && o.After.HasCallID && row.CreatedAt.Equal(o.After.Time) && row.CallID == o.After.CallID
		for j := range d.Messages {
			m := &d.Messages[j]
			p.MessagesSearched++
			var part string
			var at int
			part, at, buf = find(m.Msg, needle, buf)
			if part == "" {
				continue
			}
			p.TotalMatched++
			if !inPage || (sameAsCursor && (!o.After.HasIndex || m.Index <= o.After.Index)) {
				continue
			}
			if o.Limit > 0 && len(p.Hits) >= o.Limit {
				p.More = true
				continue
			}
			p.Hits = append(p.Hits, Hit{
				CallID: row.CallID, CreatedAt: row.CreatedAt, Index: m.Index, Part: part,
				Snippet: snippet(m.Msg, part, at, len(o.Query), o.SnippetBytes),
			})
		}
	}
	return p, nil
}

// find returns the first part of m containing needle (already folded) and
// the match offset within that part's text.
func find(m *sip.Message, needle []byte, buf []byte) (string, int, []byte) {
	if m == nil {
		return "", 0, buf
	}
	for _, part := range [...]string{PartMethod, PartFrom, PartTo, PartUA, PartBody} {
		text := partText(m, part)
		if len(text) < len(needle) {
			continue
		}
		buf = foldASCII(buf[:0], text)
		if at := bytes.Index(buf, needle); at >= 0 {
			return part, at, buf
		}
	}
	return "", 0, buf
}

func partText(m *sip.Message, part string) string {
	switch part {
	case PartMethod:
		return m.Method
	case PartFrom:
		v, _ := m.Header(sip.HdrFrom)
		return v
	case PartTo:
		v, _ := m.Header(sip.HdrTo)
		return v
	case PartUA:
		return m.UserAgent
	case PartBody:
		return string(m.Body)
	}
	return ""
}

// foldASCII appends s with ASCII letters lower-cased (same length, so
// offsets carry over).
func foldASCII[T string | []byte](dst []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func snippet(m *sip.Message, part string, at, n, max int) string {
	switch part {
	case PartMethod:
		if m.StartLine != "" {
			return m.StartLine
		}
		return m.Method
	case PartFrom:
		v, _ := m.Header(sip.HdrFrom)
		return "From: " + v
	case PartTo:
		v, _ := m.Header(sip.HdrTo)
		return "To: " + v
	case PartUA:
		if m.IsRequest {
			return "User-Agent: " + m.UserAgent
		}
		if _, ok := m.Header(sip.HdrUserAgent); ok {
			return "User-Agent: " + m.UserAgent
		}
		return "Server: " + m.UserAgent
	}
	body := string(m.Body)
	start := lineStart(body, at)
	if start > 0 {
		start = lineStart(body, start-1)
	}
	end := lineEnd(body, at+n)
	if end < len(body) {
		end = lineEnd(body, end+1)
	}
	if end-start > max {
		// A long line: a window of max bytes that holds the match.
		start = max0(at - max/4)
		if start < lineStart(body, at) {
			start = lineStart(body, at)
		}
		end = start + max
		if end > len(body) {
			end = len(body)
		}
	}
	for start > 0 && start < len(body) && !utf8.RuneStart(body[start]) {
		start--
	}
	for end < len(body) && end > start && !utf8.RuneStart(body[end]) {
		end--
	}
	return strings.TrimRight(body[start:end], "\r\n")
}

func lineStart(s string, i int) int {
	if i > len(s) {
		i = len(s)
	}
	return strings.LastIndexByte(s[:i], '\n') + 1
}

func lineEnd(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}

func max0(i int) int {
	if i < 0 {
		return 0
	}
	return i
}
