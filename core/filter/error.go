package filter

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a compile failure with everything validate_filter returns. Every
// error Compile returns for a bad expression is an *Error (use errors.As).
type Error struct {
	// Pos is the byte offset, counted from 0, where the problem starts in
	// the expression; len(expr) for an unexpected end.
	Pos int
	// Msg says what is wrong, as a lowercase phrase without the position:
	// `unknown field "from_user"`.
	Msg string
	// Caret is two lines separated by "\n": the expression (a window of at
	// most about 80 characters around Pos for a long one, control
	// characters shown as spaces) and a line with a ^ under Pos.
	Caret string
	// Hint says how to fix it ("did you mean from.user?"); may be empty.
	Hint string
}

// Error formats the error as one line:
// `parsing filter: unknown field "x" at position 3 (hint: ...)`.
func (e *Error) Error() string {
	s := "parsing filter: " + e.Msg + " at position " + strconv.Itoa(e.Pos)
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

const caretWindow = 40 // characters shown on each side of the caret

// caret renders the expression line and a caret line under byte offset pos.
// Characters are counted as runes (an invalid byte counts as one), control
// characters are shown as spaces, and a long expression is cut to a window
// marked with "...".
func caret(expr string, pos int) string {
	if pos < 0 {
		pos = 0
	}
	if pos > len(expr) {
		pos = len(expr)
	}
	// Window boundaries in bytes, on rune starts.
	start := pos
	for n := 0; start > 0 && n < caretWindow; n++ {
		_, sz := utf8.DecodeLastRuneInString(expr[:start])
		start -= sz
	}
	end := pos
	for n := 0; end < len(expr) && n < caretWindow; n++ {
		_, sz := utf8.DecodeRuneInString(expr[end:])
		end += sz
	}
	var line strings.Builder
	col := 0
	if start > 0 {
		line.WriteString("...")
		col = 3
	}
	for j := start; j < end; {
		r, sz := utf8.DecodeRuneInString(expr[j:])
		if j < pos {
			col++
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			line.WriteByte(' ')
		} else if r == utf8.RuneError && sz == 1 {
			line.WriteRune(utf8.RuneError)
		} else {
			line.WriteString(expr[j : j+sz])
		}
		j += sz
	}
	if end < len(expr) {
		line.WriteString("...")
	}
	line.WriteByte('\n')
	line.WriteString(strings.Repeat(" ", col))
	line.WriteByte('^')
	return line.String()
}

// Suggest returns the candidate closest to word, or "": the "did you mean"
// of a filter and of an unknown tool argument (the host hands it to the
// SDK), by the rules of suggest.
func Suggest(word string, candidates []string) string { return suggest(word, candidates) }

// suggest returns the candidate closest to word (edit distance at most 2,
// or equal after normalising separators and case), or "".
func suggest(word string, candidates []string) string {
	norm := func(s string) string {
		s = strings.ToLower(s)
		return strings.NewReplacer(".", "", "_", "", "-", "", " ", "").Replace(s)
	}
	w := norm(word)
	best, bestD := "", 3
	for _, c := range candidates {
		if norm(c) == w {
			return c
		}
	}
	if len(word) > 64 {
		return ""
	}
	for _, c := range candidates {
		// A word naming the last component of a dotted field ("jitter",
		// "codec") points at that field.
		if i := strings.LastIndexByte(c, '.'); i >= 0 && norm(c[i+1:]) == w {
			return c
		}
	}
	// Edit distance: at most 1 for a short word, 2 from five characters;
	// a word under three characters is too short to guess from.
	limit := 1
	if len(word) >= 5 {
		limit = 2
	}
	if len(word) < 3 {
		return ""
	}
	for _, c := range candidates {
		d := EditDistance(strings.ToLower(word), c)
		if d <= limit && d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between two short strings (a
// longer one than 64 bytes is far from everything). The host's "did you
// mean" for flags and environment variables uses it too.
func EditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
