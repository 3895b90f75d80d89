package host

import (
	"fmt"
	"strconv"
	"strings"
)

// configFile is the config file a run read: its path and bytes, kept to
// name the line of a key in an error. koanf's parsers return values, not
// positions, so the line is found by scanning the text for the key
// (keyLines).
type configFile struct {
	path   string
	format string // "toml" or "yaml"
	data   []byte
	lines  map[string]int // built on first use
}

// line returns the 1-based line where key is set, else the line of its
// nearest enclosing table or mapping that appears in the file, else 0.
func (f *configFile) line(key string) int {
	if f == nil {
		return 0
	}
	if f.lines == nil {
		f.lines = keyLines(f.data, f.format)
	}
	for k := key; k != ""; {
		if n, ok := f.lines[k]; ok {
			return n
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0
}

// at is "path:line", or "path" when the line is unknown (0), or "config"
// without a file.
func (f *configFile) at(line int) string {
	switch {
	case f == nil:
		return "config"
	case line > 0:
		return f.path + ":" + strconv.Itoa(line)
	}
	return f.path
}

// errorf is an error prefixed with where key is set ("path:line: ...").
func (f *configFile) errorf(key, format string, a ...any) error {
	return fmt.Errorf("%s: %s", f.at(f.line(key)), fmt.Sprintf(format, a...))
}

// keyLines maps every key a TOML or YAML config file sets (dotted, as
// koanf flattens it) to its first line, tables and mappings included.
func keyLines(data []byte, format string) map[string]int {
	if format == "yaml" {
		return yamlKeyLines(string(data))
	}
	return tomlKeyLines(string(data))
}

// tomlKeyLines reads TOML's structure from its lines: [table] and
// [[array]] headers set the prefix of the keys that follow; a key may be
// dotted (a.b = 1) or quoted ("a.b" = 1); an inline table (a = {b = 1})
// sets its members on its own line; multi-line arrays and strings are
// skipped to their end.
func tomlKeyLines(text string) map[string]int {
	out := map[string]int{}
	record := func(key string, n int) {
		if _, ok := out[key]; !ok && key != "" {
			out[key] = n
		}
	}
	table := ""
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		n := i + 1
		l := strings.TrimSpace(stripTOMLComment(lines[i]))
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "[") {
			inner := strings.TrimPrefix(strings.TrimSuffix(l, "]"), "[")
			inner = strings.TrimPrefix(strings.TrimSuffix(inner, "]"), "[")
			table = strings.Join(tomlKeyPath(inner), ".")
			record(table, n)
			continue
		}
		eq := indexOutsideQuotes(l, '=')
		if eq < 0 {
			continue
		}
		key := strings.Join(tomlKeyPath(l[:eq]), ".")
		if table != "" {
			key = table + "." + key
		}
		record(key, n)
		val := strings.TrimSpace(l[eq+1:])
		switch {
		case strings.HasPrefix(val, "{"):
			inner := strings.TrimSuffix(strings.TrimPrefix(val, "{"), "}")
			for _, part := range splitOutsideQuotes(inner, ',') {
				if e := indexOutsideQuotes(part, '='); e >= 0 {
					record(key+"."+strings.Join(tomlKeyPath(part[:e]), "."), n)
				}
			}
		case strings.HasPrefix(val, `"""`) || strings.HasPrefix(val, "'''"):
			q := val[:3]
			if !strings.Contains(val[3:], q) {
				for i+1 < len(lines) && !strings.Contains(lines[i+1], q) {
					i++
				}
				i++
			}
		case strings.HasPrefix(val, "["):
			depth := bracketDepth(val)
			for depth > 0 && i+1 < len(lines) {
				i++
				depth += bracketDepth(stripTOMLComment(lines[i]))
			}
		}
	}
	return out
}

// tomlKeyPath splits a TOML key (bare, quoted or dotted) into its parts.
func tomlKeyPath(s string) []string {
	var parts []string
	for _, p := range splitOutsideQuotes(s, '.') {
		p = strings.TrimSpace(p)
		if len(p) >= 2 && (p[0] == '"' || p[0] == '\'') && p[len(p)-1] == p[0] {
			if p[0] == '"' {
				if u, err := strconv.Unquote(p); err == nil {
					p = u
				} else {
					p = p[1 : len(p)-1]
				}
			} else {
				p = p[1 : len(p)-1]
			}
		}
		parts = append(parts, p)
	}
	return parts
}

// yamlKeyLines reads a YAML mapping's structure from indentation: a key
// line ("key: value" or "key:") is a child of the nearest less-indented key
// line above it that opened a mapping. List items and block scalars
// (| and >) are skipped.
func yamlKeyLines(text string) map[string]int {
	out := map[string]int{}
	type level struct {
		indent int
		key    string
	}
	var stack []level
	skipDeeper := -1 // inside a block scalar or list: lines indented more than this
	for i, raw := range strings.Split(text, "\n") {
		n := i + 1
		l := strings.TrimRight(stripYAMLComment(raw), " \t\r")
		body := strings.TrimLeft(l, " ")
		if body == "" || body == "---" || body == "..." {
			continue
		}
		indent := len(l) - len(body)
		if skipDeeper >= 0 {
			if indent > skipDeeper {
				continue
			}
			skipDeeper = -1
		}
		if strings.HasPrefix(body, "- ") || body == "-" {
			skipDeeper = indent
			continue
		}
		colon := yamlColon(body)
		if colon < 0 {
			continue
		}
		key := strings.TrimSpace(body[:colon])
		if len(key) >= 2 && (key[0] == '"' || key[0] == '\'') && key[len(key)-1] == key[0] {
			key = key[1 : len(key)-1]
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		full := key
		if len(stack) > 0 {
			full = stack[len(stack)-1].key + "." + key
		}
		if _, ok := out[full]; !ok {
			out[full] = n
		}
		val := strings.TrimSpace(body[colon+1:])
		switch {
		case val == "":
			stack = append(stack, level{indent, full})
		case strings.HasPrefix(val, "|") || strings.HasPrefix(val, ">"):
			skipDeeper = indent
		case strings.HasPrefix(val, "{"):
			inner := strings.TrimSuffix(strings.TrimPrefix(val, "{"), "}")
			for _, part := range splitOutsideQuotes(inner, ',') {
				if c := yamlColon(strings.TrimSpace(part)); c >= 0 {
					k := strings.Trim(strings.TrimSpace(strings.TrimSpace(part)[:c]), `"'`)
					if _, ok := out[full+"."+k]; !ok {
						out[full+"."+k] = n
					}
				}
			}
		}
	}
	return out
}

// yamlColon is the index of the colon that ends a mapping key (followed by
// a space or the end of the line, outside quotes), or -1.
func yamlColon(s string) int {
	return yamlIndex(s, func(i int) bool { return s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') })
}

// yamlIndex is the index of the first byte outside YAML quotes ('...' or
// "...") at which at holds, or -1.
func yamlIndex(s string, at func(i int) bool) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case at(i):
			return i
		}
	}
	return -1
}

func stripTOMLComment(s string) string {
	if i := indexOutsideQuotes(s, '#'); i >= 0 {
		return s[:i]
	}
	return s
}

// stripYAMLComment cuts a # that starts a comment (at the line's start or
// after a space, outside quotes).
func stripYAMLComment(s string) string {
	if i := yamlIndex(s, func(i int) bool { return s[i] == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t') }); i >= 0 {
		return s[:i]
	}
	return s
}

// indexOutsideQuotes is strings.IndexByte ignoring bytes inside "..." or
// '...' (a backslash escapes inside double quotes).
func indexOutsideQuotes(s string, b byte) int {
	at := -1
	eachOutsideQuotes(s, func(i int) bool {
		if s[i] == b {
			at = i
			return false
		}
		return true
	})
	return at
}

// eachOutsideQuotes calls f with the index of every byte of s outside
// "..." or '...' (a backslash escapes inside double quotes), quote marks
// excluded, until f returns false.
func eachOutsideQuotes(s string, f func(i int) bool) {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		default:
			if !f(i) {
				return
			}
		}
	}
}

func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	for {
		i := indexOutsideQuotes(s, sep)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

// bracketDepth is the net count of [ over ] outside quotes.
func bracketDepth(s string) int {
	d := 0
	eachOutsideQuotes(s, func(i int) bool {
		switch s[i] {
		case '[':
			d++
		case ']':
			d--
		}
		return true
	})
	return d
}
