package callreport

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sipnab/sipnab/internal/textsafe"
)

// showID is textsafe.ID for a rendered format: in Markdown the identifier is
// a code span, so Markdown escaping never doubles its backslashes.
func showID(s string, n int, md bool) string {
	if md {
		return mdCode(textsafe.ID(s, n))
	}
	return textsafe.ID(s, n)
}

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
