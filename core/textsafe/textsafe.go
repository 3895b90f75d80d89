// Package textsafe is the one place that decides which characters of
// sender-written text (a display name, a User-Agent, a reason phrase, a
// Call-ID) a rendered document may carry. Every renderer of capture text
// uses it: core/report (--report, get_capture_report), core/callreport
// (render_ladder, get_dialog_report, --call-report), core/repro and
// core/wsfilter, so a character one of them drops is dropped by all.
//
// Invisible characters are never printed: a control character (Unicode
// Cc: C0, DEL, C1, so a terminal escape such as ESC "[2J" loses its ESC and
// is inert), a bidirectional control (U+202A–U+202E, U+2066–U+2069,
// U+200E, U+200F, U+061C: an override makes a line read differently from
// the bytes it holds, "Trojan Source") or any other format character
// (Unicode Cf: U+200B–U+200D, U+FEFF, U+00AD, ...). The fence code points
// U+27E6/U+27E7, the brackets of the untrusted-capture-data markers
// (sdk/fence.go, docs/mcp-tools.md), become ASCII brackets so a rendered
// document never holds a forged marker. core may not import sdk, whose
// fencing keeps its own copy of that rule.
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
// line breaks and tabs become spaces, invisible characters (IsInvisible)
// are dropped, a byte that is not UTF-8 becomes U+FFFD, the fence code
// points U+27E6/U+27E7 become '[' and ']', and the text is cut at n
// characters followed by "…" when a kept character remains (n < 0: no
// cut).
func Line(s string, n int) string {
	if n < 0 {
		n = len(s) + 1
	}
	var b strings.Builder
	count := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			r = '\uFFFD'
		case isLineBreak(r):
			r = ' '
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
