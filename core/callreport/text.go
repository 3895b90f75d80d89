package callreport

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// bidiControls are the Unicode bidirectional formatting characters
// (category Cf): an override or isolate in a rendered document can make a
// line read differently from the bytes it holds ("Trojan Source").
func isBidi(r rune) bool {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return true
	}
	return false
}

// clean makes sender-written text safe to print in a document: control and
// bidi characters are dropped, line breaks become spaces, invalid UTF-8 is
// replaced, the fence code points U+27E6/U+27E7 become ASCII brackets, and
// the text is cut at n characters with "…".
func clean(s string, n int) string {
	var b strings.Builder
	count := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			r = '\uFFFD'
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case unicode.IsControl(r) || isBidi(r):
			continue
		case r == '⟦':
			r = '['
		case r == '⟧':
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

// DisplayID writes an identifier (a Call-ID) into a rendered document.
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
func DisplayID(s string, n int) string {
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

// invisibleInID reports the characters DisplayID escapes: controls, format
// characters (bidi controls among them), blanks other than the space, and
// the fence code points.
func invisibleInID(r rune) bool {
	return unicode.IsControl(r) || isBidi(r) || unicode.Is(unicode.Cf, r) ||
		(unicode.IsSpace(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Zs)) && r != ' ' ||
		r == '\u27e6' || r == '\u27e7'
}

// showID is DisplayID for a rendered format: in Markdown the identifier is
// a code span, so Markdown escaping never doubles its backslashes.
func showID(s string, n int, md bool) string {
	if md {
		return mdCode(DisplayID(s, n))
	}
	return DisplayID(s, n)
}

// CleanText is the cleaning every rendered document applies to text the
// sender wrote (clean): control and bidi characters dropped, line breaks
// as spaces, the fence code points as ASCII brackets, cut at n characters
// with "…". Other renderers of capture text (core/report's findings) use
// it so the rendered documents agree.
func CleanText(s string, n int) string { return clean(s, n) }

// mdEscape backslash-escapes the characters that would format Markdown, so
// capture text renders as the text it is.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>#|~&!", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdCode wraps s in a code span whose backtick fence is longer than any run
// of backticks inside it (CommonMark), padded when s starts or ends with
// one.
func mdCode(s string) string {
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// longestRun is the longest run of c in s.
func longestRun(s string, c rune) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

func itoa(n int) string { return strconv.Itoa(n) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// runeLen is the number of characters of s.
func runeLen(s string) int { return utf8.RuneCountInString(s) }

// cut shortens s to at most n characters, ending with "…" when cut.
func cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if runeLen(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
