package wsfilter

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzQuote checks that Quote never panics, refuses exactly the inputs with
// control or bidi characters, and that its literal decodes back to the
// input under the display-filter escapes it uses (\\, \", \xhh); and that
// ShellQuote's output decodes back under POSIX single-quote rules.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"a@b", `x"y\z`, "a\xffb", "a\r\nb", "\u202e", "it's", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Quote(s)
		if err != nil {
			return
		}
		if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
			t.Fatalf("%q: literal %q not quoted", s, q)
		}
		body := q[1 : len(q)-1]
		var b strings.Builder
		for i := 0; i < len(body); i++ {
			c := body[i]
			if c == '"' {
				t.Fatalf("%q: unescaped quote in %q", s, q)
			}
			if c != '\\' {
				b.WriteByte(c)
				continue
			}
			i++
			switch {
			case i < len(body) && (body[i] == '\\' || body[i] == '"'):
				b.WriteByte(body[i])
			case i+2 < len(body) && body[i] == 'x':
				v, perr := strconv.ParseUint(body[i+1:i+3], 16, 8)
				if perr != nil {
					t.Fatalf("%q: bad escape in %q", s, q)
				}
				b.WriteByte(byte(v))
				i += 2
			default:
				t.Fatalf("%q: dangling escape in %q", s, q)
			}
		}
		if b.String() != s {
			t.Fatalf("%q: literal %q decodes to %q", s, q, b.String())
		}
		sq := ShellQuote(s)
		if strings.HasPrefix(sq, "'") {
			dec := strings.ReplaceAll(sq[1:len(sq)-1], `'\''`, "'")
			if dec != s {
				t.Fatalf("%q: shell quoting %q decodes to %q", s, sq, dec)
			}
		} else if sq != s {
			t.Fatalf("%q: bare %q", s, sq)
		}
	})
}
