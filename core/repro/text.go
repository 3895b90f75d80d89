package repro

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sipnab/sipnab/internal/textsafe"
)

// sippText writes one captured value into a SIPp message: control and
// bidi characters stripped (counted), then every character SIPp or XML
// would read as syntax written as SIPp's \xHH escape, which SIPp decodes to
// the byte itself: '[' (a keyword), '\' (an escape), the '>' of "]]>" (the
// end of the CDATA), bytes that are not UTF-8, and, at the start of a body
// line (lineStart), a blank SIPp would trim. The fence code points U+27E6
// and U+27E7 are written as the escapes of their three UTF-8 bytes: the
// target receives them as captured, but the scenario, which an MCP answer
// carries unfenced, holds no marker a sender could forge.
func sippText(s string, lineStart bool) (string, int) {
	// One pass over the captured bytes: a byte that is not UTF-8 is written
	// as an escape at once, so stripping a control character between two
	// such bytes can never join them into a new character.
	n := 0
	var b strings.Builder
	first := true
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		valid := r != utf8.RuneError || w > 1
		switch {
		case !valid:
			fmt.Fprintf(&b, `\x%02X`, s[i])
		case unicode.IsControl(r) || textsafe.IsBidi(r):
			n++
			i += w
			continue
		case r == '[' || r == '\\':
			fmt.Fprintf(&b, `\x%02X`, r)
		case r == '\u27e6' || r == '\u27e7':
			// The fence code points: the same bytes on the wire, but the
			// answer carrying the scenario holds no forged marker.
			for j := 0; j < w; j++ {
				fmt.Fprintf(&b, `\x%02X`, s[i+j])
			}
		case r == '>' && strings.HasSuffix(b.String(), "]]"):
			b.WriteString(`\x3E`)
		case r == ' ' && ((first && lineStart) || lastKept(s[i+w:])):
			b.WriteString(`\x20`)
		default:
			b.WriteString(s[i : i+w])
		}
		first = false
		i += w
	}
	return b.String(), n
}

// lastKept reports whether nothing but stripped characters follows: the
// character before is the last one written.
func lastKept(rest string) bool {
	for _, r := range rest {
		if !(unicode.IsControl(r) || textsafe.IsBidi(r)) || r == utf8.RuneError {
			return false
		}
	}
	return true
}
