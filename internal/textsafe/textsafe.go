// Package textsafe is the one place that decides which characters of
// sender-written text (a display name, a User-Agent, a reason phrase, a
// Call-ID) an answer or a rendered document may carry. Every renderer of
// capture text uses it: sdk's fences (sdk.Fence, sdk.FenceBody and the
// unfenced values of bundles/internal/answer), core/report (--report,
// get_capture_report), core/callreport (render_ladder, get_dialog_report,
// --call-report), core/repro and core/wsfilter, so a character one of them
// drops is dropped by all.
//
// Invisible characters are never printed: a control character (Unicode
// Cc: C0, DEL, C1), a bidirectional control (U+202A–U+202E, U+2066–U+2069,
// U+200E, U+200F, U+061C: an override makes a line read differently from
// the bytes it holds, "Trojan Source") or any other format character
// (Unicode Cf: U+200B–U+200D, U+FEFF, U+00AD, ...). A terminal escape
// sequence (ECMA-48: ESC or C1 CSI with its parameters and final byte, an
// OSC/DCS string to its terminator, a two-byte escape) is dropped whole, so
// neither the escape nor its "[31m" residue reaches a terminal or a
// transcript. The fence code points U+27E6/U+27E7, the brackets of the
// untrusted-capture-data markers (sdk/fence.go, docs/mcp-tools.md), become
// ASCII brackets so no answer holds a forged marker.
//
// The package lives outside core and sdk because both use it: core may
// import only the standard library and core, sdk only the standard library
// and mcp-go's wire types (tests/imports_test.go), and a leaf importing the
// standard library alone is the one place both may share. It is internal:
// a bundle outside this module reaches it through sdk's fence helpers.
package textsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// IsBidi reports the Unicode bidirectional formatting characters (all in
// category Cf): embeddings and overrides U+202A–U+202E, isolates
// U+2066–U+2069, the marks U+200E/U+200F and the Arabic letter mark U+061C.
func IsBidi(r rune) bool {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return true
	}
	return false
}

// IsControl reports the control characters (Unicode Cc: C0, DEL, C1).
func IsControl(r rune) bool { return unicode.IsControl(r) }

// IsInvisible reports the characters a rendered document never prints: a
// control character, a bidi control or any other format character (Cf).
func IsInvisible(r rune) bool {
	return unicode.IsControl(r) || IsBidi(r) || unicode.Is(unicode.Cf, r)
}

// isLineBreak reports the characters Line turns into a space: the C0
// breaks and tab, NEL (U+0085) and the Unicode line and paragraph
// separators (U+2028, U+2029).
func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\t', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// Line makes sender-written text safe to print as one line of a document:
// line breaks and tabs become spaces, terminal escape sequences and
// invisible characters (IsInvisible) are dropped, a byte that is not UTF-8
// becomes U+FFFD, the fence code points U+27E6/U+27E7 become '[' and ']',
// and the text is cut at n characters followed by "…" when a kept
// character remains (n < 0: no cut).
func Line(s string, n int) string { return clean(s, false, n) }

// Clean applies Line's rules without a cut. With keepLines (a body: SDP, a
// snippet) '\n' and '\t' are kept, '\r' is dropped and the other line
// breaks (NEL, U+2028, U+2029) become '\n'; without it the value is one
// line. It is the payload rule of sdk.Fence and sdk.FenceBody.
func Clean(s string, keepLines bool) string { return clean(s, keepLines, -1) }

func clean(s string, keepLines bool, n int) string {
	if n < 0 {
		n = len(s) + 1
	}
	var b strings.Builder
	b.Grow(min(len(s), 4*n))
	count := 0
	for i := 0; i < len(s); {
		if k := escapeLen(s[i:]); k > 0 {
			i += k
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			r = '\uFFFD'
		case keepLines && (r == '\n' || r == '\t'):
		case keepLines && r == '\r':
			continue
		case isLineBreak(r):
			r = ' '
			if keepLines {
				r = '\n'
			}
		case IsInvisible(r):
			continue
		case r == '\u27e6':
			r = '['
		case r == '\u27e7':
			r = ']'
		}
		if count == n {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}

// escapeLen returns the byte length of the terminal escape sequence s
// starts with (ECMA-48 §5.3-5.6), 0 when it starts with none. A control
// sequence (ESC '[', or C1 CSI U+009B followed by a parameter byte) runs
// through its parameter and intermediate bytes to its final byte; a control string (OSC, DCS, SOS,
// PM, APC: ESC ']' 'P' 'X' '^' '_' or their C1 forms) runs to its
// terminator (BEL, ESC '\\' or C1 ST) when it has one, else only its
// introducer is dropped and the rest prints as inert text; any other escape
// is ESC with its intermediate bytes and final byte. A lone ESC or C1
// control is left to the caller (dropped as a control character).
func escapeLen(s string) int {
	var body int // offset of what follows the introducer
	var kind byte
	switch {
	case len(s) >= 2 && s[0] == 0x1b:
		kind, body = s[1], 2
	case len(s) >= 2 && s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f:
		// a C1 control in UTF-8: U+0080-U+009F is 0xC2 0x80-0x9F
		kind, body = s[1]-0x40, 2
	default:
		return 0
	}
	switch kind {
	case '[':
		i := body
		for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
			i++
		}
		if s[0] != 0x1b && i == body {
			// a C1 CSI with no parameter: only the control is dropped, so
			// text such as "user\u009b@host" keeps its '@'
			return 0
		}
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
			i++
		}
		return i
	case ']', 'P', 'X', '^', '_':
		for i := body; i < len(s); i++ {
			switch {
			case s[i] == 0x07:
				return i + 1
			case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
				return i + 2
			case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c:
				return i + 2
			}
		}
		return body
	}
	if s[0] != 0x1b {
		return 0 // another C1 control: one character, the caller drops it
	}
	i := 1
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		return i + 1
	}
	return 0
}

// Strip removes the control and bidi characters of s and returns how many
// it removed; bytes that are not UTF-8 are kept. It is for text written
// back onto the wire (core/repro), where other format characters (a
// zero-width joiner inside a display name) are the captured value.
func Strip(s string) (string, int) {
	n := 0
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if (r != utf8.RuneError || w > 1) && (unicode.IsControl(r) || IsBidi(r)) {
			n++
		} else {
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	return b.String(), n
}

// invisibleInID reports the characters ID escapes: invisible characters,
// blanks other than the space, and the fence code points.
func invisibleInID(r rune) bool {
	return IsInvisible(r) ||
		(unicode.IsSpace(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Zs)) && r != ' ' ||
		r == '\u27e6' || r == '\u27e7'
}

// ID writes an identifier (a Call-ID) into a rendered document.
// Identifiers are verbatim (mcp-surface §2.5: a changed Call-ID is a
// lookup miss), but a rendered document must not carry invisible
// characters, so nothing is dropped: a control character, a bidi control
// or other format character (Unicode Cf: U+200B, U+FEFF, ...), a blank
// other than the space (U+00A0, U+2028, ...) and the fence code points
// U+27E6/U+27E7 are written as \uXXXX escapes (a surrogate pair past
// U+FFFF), a backslash as \\ and a double quote as \". The shown text is
// then the body of a JSON string holding the identifier verbatim: put
// between double quotes in a tool argument it is the Call-ID again. A byte
// that is not UTF-8 is shown as \xHH (no JSON string can carry it). At most
// n characters are written, then "…". The JSON answers (get_dialog_report,
// list_dialogs, ...) carry identifiers unescaped.
func ID(s string, n int) string {
	var b strings.Builder
	count := 0
	for i := 0; i < len(s); {
		if count == n {
			b.WriteString("…")
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case invisibleInID(r):
			if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
		i += size
		count++
	}
	return b.String()
}

// JSON appends to dst the encoded JSON text src (encoding/json's output)
// with every character ID escapes written as a \uXXXX escape inside its
// string: a control character encoding/json leaves literal (DEL, C1), a
// bidi control or other format character, a blank other than the space
// and the fence code points. The escape is the same JSON string, so a JSON
// reader gets the value back byte for byte; a terminal showing the text
// shows no invisible character. Bytes outside strings are copied.
func JSON(dst, src []byte) []byte { return appendJSON(dst, src, true) }

// appendJSON is JSON; runs false walks every byte one at a time, the
// reference the fast path of plain runs is held to (FuzzJSONEqualsByteByByte).
func appendJSON(dst, src []byte, runs bool) []byte {
	in := false
	for i := 0; i < len(src); {
		// A run of printable ASCII other than the quote and the backslash
		// is copied as it is inside a string or out, and changes neither:
		// copied whole (most of a line is such runs).
		if runs {
			if j := plainRun(src[i:]); j > 0 {
				dst = append(dst, src[i:i+j]...)
				i += j
				continue
			}
		}
		c := src[i]
		if !in {
			dst = append(dst, c)
			in = c == '"'
			i++
			continue
		}
		switch {
		case c == '"':
			dst = append(dst, c)
			in = false
			i++
			continue
		case c == '\\' && i+1 < len(src):
			dst = append(dst, c, src[i+1])
			i += 2
			continue
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			if c < 0x20 || c == 0x7f {
				dst = fmt.Appendf(dst[:len(dst)-1], `\u%04x`, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			dst = append(dst, `\ufffd`...)
		} else if invisibleInID(r) {
			if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				dst = fmt.Appendf(dst, `\u%04x\u%04x`, r1, r2)
			} else {
				dst = fmt.Appendf(dst, `\u%04x`, r)
			}
		} else {
			dst = append(dst, src[i:i+size]...)
		}
		i += size
	}
	return dst
}

// plainJSON marks the bytes JSON copies whatever its state: printable
// ASCII but the quote and the backslash.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainRun is the length of b's leading run of plainJSON bytes.
func plainRun(b []byte) int {
	for i, c := range b {
		if !plainJSON[c] {
			return i
		}
	}
	return len(b)
}

// JSONUnchanged reports whether JSON leaves src as it is: src is printable
// ASCII (no control, DEL or byte from 0x80, which are what JSON rewrites)
// and ends outside a string, so a line break after it is copied too. A
// writer that made src itself can then write it without JSON's copy.
func JSONUnchanged(src []byte) bool {
	in := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c-0x20 > 0x7e-0x20 { // below 0x20 (wraps), DEL, or from 0x80
			return false
		}
		switch {
		case c == '"':
			in = !in
		case c == '\\' && in:
			i++ // the escaped byte: JSON copies it whatever it is
		}
	}
	return !in
}
