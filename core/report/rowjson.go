package report

import (
	"encoding/hex"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/packet"
)

// The dialog rows of the batch outputs (--json-run's dialogs[], the
// --json-dialogs lines) are written by rowAppender, not by encoding/json:
// one row per dialog is most of what those outputs write, and
// encoding/json's reflection over it cost more than making the row. The
// bytes are encoding/json's (json.Encoder with SetEscapeHTML(false), then
// indented as json.Indent indents): the same key order (the struct's field
// order, dialog.Summary's fields flattened into DialogRow), omitempty, float
// and string forms. rowjson_test.go holds the appender to encoding/json on
// every row of every capture under testdata/, on each field set alone (a
// field added to a row type and not written here fails it), on hostile
// values, and under fuzzing.
//
// A value encoding/json refuses (a NaN or infinite float, a time outside
// RFC 3339's years) marks the row bad: its writer then encodes that row
// with encoding/json, which returns the error it always returned.

// rowAppender appends JSON values to b, compact or indented.
type rowAppender struct {
	b []byte
	// indent: each member on its own line, started by ws cut to the
	// depth (json.Indent(dst, src, prefix, "  "): a newline, the prefix,
	// two spaces a depth), a space after each colon. Else compact.
	indent bool
	ws     string
	depth  int
	more   bool // the open object or array has a member already
	bad    bool // a value encoding/json refuses was met
}

// maxRowDepth is the deepest ws reaches: a leg's members, inside the row
// and its other_legs, are at depth 3.
const maxRowDepth = 4

// rowIndent is ws for the --json-run document's rows: a row is an element
// of the dialogs array, so its lines start at four spaces (the prefix),
// then two spaces a depth up to maxRowDepth.
const rowIndent = "\n    " + "        "

func (a *rowAppender) newline() {
	if a.indent {
		a.b = append(a.b, a.ws[:len(a.ws)-2*(maxRowDepth-a.depth)]...)
	}
}

func (a *rowAppender) open(c byte) {
	a.b = append(a.b, c)
	a.depth++
	a.more = false
}

// close ends the open object or array: an empty one stays {} or [].
func (a *rowAppender) close(c byte) {
	a.depth--
	if a.more {
		a.newline()
	}
	a.b = append(a.b, c)
	a.more = true
}

// key starts an object member; k is the json tag name quoted, with its
// colon ("call_id":), which needs no escaping (the tests compare every key
// with encoding/json's).
func (a *rowAppender) key(k string) {
	if a.more {
		a.b = append(a.b, ',')
	}
	a.more = true
	a.newline()
	a.b = append(a.b, k...)
	if a.indent {
		a.b = append(a.b, ' ')
	}
}

// elem starts an array element.
func (a *rowAppender) elem() {
	if a.more {
		a.b = append(a.b, ',')
	}
	a.more = true
	a.newline()
}

func (a *rowAppender) str(s string) { a.b = appendJSONString(a.b, s) }

// frameRef writes f as the string f.String() quoted: the source escaped
// as appendJSONString escapes it (the '#' after it is ASCII, so escaping
// the source alone gives the same bytes as escaping the whole string),
// then the ordinal and the digest, which need no escaping.
func (a *rowAppender) frameRef(f packet.FrameRef) {
	a.b = append(a.b, '"')
	a.b = appendJSONStringBody(a.b, f.Source)
	a.b = append(a.b, '#')
	a.b = strconv.AppendUint(a.b, f.Ordinal, 10)
	a.b = append(a.b, '@')
	a.b = hex.AppendEncode(a.b, f.Digest[:])
	a.b = append(a.b, '"')
}

func (a *rowAppender) int(n int64) { a.b = strconv.AppendInt(a.b, n, 10) }

func (a *rowAppender) bool(v bool) { a.b = strconv.AppendBool(a.b, v) }

func (a *rowAppender) float(f float64) {
	var ok bool
	if a.b, ok = appendJSONFloat(a.b, f); !ok {
		a.bad = true
	}
}

// time writes t as time.Time.MarshalJSON does: RFC 3339 with nanoseconds,
// quoted (AppendText is the same text, unquoted, with the same refusals).
func (a *rowAppender) time(t time.Time) {
	a.b = append(a.b, '"')
	var err error
	if a.b, err = t.AppendText(a.b); err != nil {
		a.bad = true
	}
	a.b = append(a.b, '"')
}

// row writes a DialogRow: dialog.Summary's fields in their order (the
// embedded struct is flattened; failCode is unexported and not written).
func (a *rowAppender) row(r *DialogRow) {
	s := &r.Summary
	a.open('{')
	a.key(`"call_id":`)
	a.str(s.CallID)
	a.key(`"state":`)
	a.str(s.State)
	a.key(`"method":`)
	a.str(s.Method)
	a.key(`"msg_count":`)
	a.int(int64(s.MsgCount))
	if s.FromUser != "" {
		a.key(`"from_user":`)
		a.str(s.FromUser)
	}
	if s.ToUser != "" {
		a.key(`"to_user":`)
		a.str(s.ToUser)
	}
	a.key(`"duration_sec":`)
	a.float(s.DurationSec)
	a.key(`"created_at":`)
	a.time(s.CreatedAt)
	a.key(`"updated_at":`)
	a.time(s.UpdatedAt)
	a.key(`"timing":`)
	a.timing(&s.Timing)
	if s.Frame != "" {
		a.key(`"frame":`)
		a.str(s.Frame)
	} else if !r.frame.IsZero() {
		a.key(`"frame":`)
		a.frameRef(r.frame)
	}
	if s.FinalStatusCode != 0 {
		a.key(`"final_status_code":`)
		a.int(int64(s.FinalStatusCode))
	}
	if s.Challenges != 0 {
		a.key(`"challenges":`)
		a.int(int64(s.Challenges))
	}
	if len(s.OtherLegs) > 0 {
		a.key(`"other_legs":`)
		a.open('[')
		for i := range s.OtherLegs {
			a.elem()
			a.legBrief(&s.OtherLegs[i])
		}
		a.close(']')
	}
	if s.InputOrigin != "" {
		a.key(`"input_origin":`)
		a.str(s.InputOrigin)
	}
	if s.Ended != nil {
		a.key(`"ended":`)
		a.bool(*s.Ended)
	}
	if s.DurationToCaptureEndMs != nil {
		a.key(`"duration_to_capture_end_ms":`)
		a.int(*s.DurationToCaptureEndMs)
	}
	a.close('}')
}

func (a *rowAppender) timing(t *dialog.Timing) {
	a.open('{')
	if t.PDDMs != nil {
		a.key(`"pdd_ms":`)
		a.int(*t.PDDMs)
	}
	if t.SetupMs != nil {
		a.key(`"setup_ms":`)
		a.int(*t.SetupMs)
	}
	if t.AuthWaitMs != nil {
		a.key(`"auth_wait_ms":`)
		a.int(*t.AuthWaitMs)
	}
	a.key(`"retransmits":`)
	a.int(int64(t.Retransmits))
	if t.Duplicates != 0 {
		a.key(`"duplicates":`)
		a.int(int64(t.Duplicates))
	}
	if t.DurationMs != nil {
		a.key(`"duration_ms":`)
		a.int(*t.DurationMs)
	}
	a.close('}')
}

func (a *rowAppender) legBrief(l *dialog.LegBrief) {
	a.open('{')
	if l.Method != "" {
		a.key(`"method":`)
		a.str(l.Method)
	}
	a.key(`"state":`)
	a.str(l.State)
	if l.FinalStatusCode != 0 {
		a.key(`"final_status_code":`)
		a.int(int64(l.FinalStatusCode))
	}
	if l.Challenges != 0 {
		a.key(`"challenges":`)
		a.int(int64(l.Challenges))
	}
	a.close('}')
}

// appendRowJSON appends r as encoding/json writes it with
// SetEscapeHTML(false): compact, or indented as an element of the
// --json-run document's dialogs array (json.Indent(dst, src, "    ",
// "  "), the first line unprefixed). ok is false when r holds a value
// encoding/json refuses; dst's added bytes are then garbage.
func appendRowJSON(dst []byte, r *DialogRow, indent bool) ([]byte, bool) {
	a := rowAppender{b: dst, indent: indent, ws: rowIndent}
	a.row(r)
	return a.b, !a.bad
}

// plainJSON marks the ASCII bytes a JSON string holds as they are:
// everything from the space on but the quote and the backslash (RFC 8259
// §7). Bytes from 0x80 are not plain: they are read as UTF-8.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// plainRun is the length of s's leading run of plain bytes (plainJSON).
func plainRun(s string) int {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			return i
		}
	}
	return len(s)
}

// appendJSONString appends s quoted as encoding/json quotes a string
// without HTML escaping: \" and \\; \b \f \n \r \t; other controls as
// \u00XX; each byte of invalid UTF-8 as \ufffd; U+2028 and U+2029 as
// \u2028 and \u2029; everything else as it is.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendJSONStringBody(dst, s)
	return append(dst, '"')
}

// appendJSONStringBody is appendJSONString without the quotes.
func appendJSONStringBody(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		i += plainRun(s[i:])
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// appendJSONFloat appends f as encoding/json writes a float64: the
// shortest decimal that reads back as f, in plain notation unless |f| is
// below 1e-6 or from 1e21 on (then with an exponent, e-7 rather than
// e-07), -0 as -0. ok is false for NaN and the infinities, which
// encoding/json refuses.
func appendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		if n := len(dst); dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}
