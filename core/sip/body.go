package sip

import (
	"bytes"
	"errors"
	"strings"
)

// MaxParts bounds the body parts SplitMultipart returns.
const MaxParts = 64

// maxNesting bounds multipart-in-multipart recursion in FindBodyPart.
const maxNesting = 4

var (
	errNoBoundary = errors.New("multipart content type has no boundary")
	errNoParts    = errors.New("multipart body has no delimiter line")
)

// Part is one body part of a multipart body (RFC 2046).
type Part struct {
	ContentType string // the part's Content-Type value; "" when the part has none
	MediaType   string // lower-cased media type without parameters; "text/plain" when none
	// Headers are the part's header lines; Start and End are offsets in the
	// multipart body given to SplitMultipart.
	Headers []Header
	Body    []byte // sub-slice of the multipart body
}

// SplitMultipart splits a multipart body. contentType is the full
// Content-Type header value (the boundary parameter is required). A missing
// close delimiter is tolerated (the last part runs to the end). At most
// MaxParts parts are returned. Part bodies share memory with body.
func SplitMultipart(contentType string, body []byte) ([]Part, error) {
	params := ""
	if i := strings.IndexByte(contentType, ';'); i >= 0 {
		params = contentType[i:]
	}
	boundary, ok := ParamValue(params, "boundary")
	if !ok || boundary == "" {
		return nil, errNoBoundary
	}
	delim := make([]byte, 0, len(boundary)+2)
	delim = append(delim, "--"...)
	delim = append(delim, boundary...)

	// Offsets of delimiter lines (at the start of body or of a line).
	var parts []Part
	pos := 0
	start := -1 // content start of the current part
	for pos <= len(body) {
		k := bytes.Index(body[pos:], delim)
		if k < 0 {
			break
		}
		d := pos + k
		if d > 0 && body[d-1] != '\n' {
			pos = d + 1
			continue
		}
		if start >= 0 {
			end := d
			// The CRLF before the delimiter belongs to the delimiter.
			if end > start && body[end-1] == '\n' {
				end--
				if end > start && body[end-1] == '\r' {
					end--
				}
			}
			parts = append(parts, parsePart(body, start, end))
			if len(parts) >= MaxParts {
				return parts, nil
			}
		}
		after := d + len(delim)
		if bytes.HasPrefix(body[after:], []byte("--")) {
			return parts, nil // close delimiter
		}
		_, next := lineEnd(body, after)
		start = next
		pos = next
		if pos >= len(body) {
			break
		}
	}
	if start < 0 {
		return nil, errNoParts
	}
	if start < len(body) {
		parts = append(parts, parsePart(body, start, len(body)))
	}
	return parts, nil
}

func parsePart(body []byte, s, e int) Part {
	p := Part{MediaType: "text/plain"}
	i := s
	for i < e {
		end, next := lineEnd(body[:e], i)
		ce := end
		if ce > i && body[ce-1] == '\r' {
			ce--
		}
		if ce == i {
			i = next
			break
		}
		line := body[i:ce]
		if c := bytes.IndexByte(line, ':'); c > 0 && !isWS(line[0]) {
			name := strings.TrimRight(string(line[:c]), " \t")
			h := Header{
				ID:    LookupHeader(name),
				Name:  name,
				Value: strings.Trim(string(line[c+1:]), " \t"),
				Start: i,
				End:   ce,
			}
			if h.ID == HdrContentType && p.ContentType == "" {
				p.ContentType = h.Value
				p.MediaType = MediaType(h.Value)
			}
			if len(p.Headers) < MaxHeaders {
				p.Headers = append(p.Headers, h)
			}
		}
		i = next
		if i >= e {
			i = e
		}
	}
	p.Body = body[i:e:e]
	return p
}

// FindBodyPart returns the first part of the given media type (lower case,
// e.g. "application/sdp") in a body: the body itself when its Content-Type
// matches, else the first matching part of a multipart body, searching
// nested multipart bodies up to a small depth. It also returns that part's
// full Content-Type value.
func FindBodyPart(contentType string, body []byte, mediaType string) ([]byte, string, bool) {
	return findBodyPart(contentType, body, mediaType, 0)
}

func findBodyPart(contentType string, body []byte, mediaType string, depth int) ([]byte, string, bool) {
	mt := MediaType(contentType)
	if mt == mediaType {
		return body, contentType, true
	}
	if !strings.HasPrefix(mt, "multipart/") || depth >= maxNesting {
		return nil, "", false
	}
	parts, err := SplitMultipart(contentType, body)
	if err != nil {
		return nil, "", false
	}
	for _, p := range parts {
		if b, ct, ok := findBodyPart(p.ContentType, p.Body, mediaType, depth+1); ok {
			return b, ct, true
		}
	}
	return nil, "", false
}

// BodyPart returns the part of the message body with the given media type
// (see FindBodyPart), e.g. "application/sdp" or "application/rs-metadata+xml".
func (m *Message) BodyPart(mediaType string) ([]byte, bool) {
	ct, ok := m.Header(HdrContentType)
	if !ok || len(m.Body) == 0 {
		return nil, false
	}
	b, _, ok := FindBodyPart(ct, m.Body, mediaType)
	return b, ok
}

// SDPBody returns the SDP carried by the message, directly
// (application/sdp) or inside a multipart body.
func (m *Message) SDPBody() ([]byte, bool) { return m.BodyPart("application/sdp") }

// Stream framing errors of MessageLen.
var (
	// ErrIncomplete means more bytes are needed to frame the message.
	ErrIncomplete = errors.New("incomplete sip message")
)

// MessageLen frames the first SIP message of a byte stream (TCP, TLS,
// WebSocket text) by Content-Length (RFC 3261 §18.3; absent means 0). It
// returns the number of bytes the message occupies, junk before the start
// line included, so a caller consumes b[:n] and calls Parse on it.
// ErrIncomplete: more bytes are needed. ErrNotSIP: the stream does not start
// with SIP within MaxJunkBytes (a caller resynchronizes or drops).
func MessageLen(b []byte) (int, error) {
	sl, ok := findStartLine(b)
	if !ok {
		// A start line may still begin in an unterminated last line that
		// starts within the junk window.
		lastLF := bytes.LastIndexByte(b, '\n')
		if lastLF+1 < MaxJunkBytes {
			return 0, ErrIncomplete
		}
		return 0, ErrNotSIP
	}
	if sl.next == len(b) && (sl.next == 0 || b[sl.next-1] != '\n') {
		return 0, ErrIncomplete
	}
	cl, haveCL := 0, false
	i := sl.next
	for {
		if i >= len(b) {
			return 0, ErrIncomplete
		}
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0, ErrIncomplete
		}
		end, next := i+j, i+j+1
		ce := end
		if ce > i && b[ce-1] == '\r' {
			ce--
		}
		if ce == i {
			i = next
			break
		}
		line := b[i:ce]
		if c := bytes.IndexByte(line, ':'); c > 0 && !isWS(line[0]) {
			name := bytes.TrimRight(line[:c], " \t")
			if !haveCL && lookupHeaderBytes(name) == HdrContentLength {
				// The first Content-Length counts, as in Parse.
				haveCL = true
				if n, ok := atoiBounded(strings.TrimSpace(string(line[c+1:])), 1<<30); ok {
					cl = n
				}
			}
		}
		i = next
	}
	if len(b)-i < cl {
		return 0, ErrIncomplete
	}
	return i + cl, nil
}
