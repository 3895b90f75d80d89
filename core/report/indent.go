package report

import "bytes"

// appendIndented appends src, one JSON value as encoding/json writes it
// compactly, to dst indented exactly as json.Indent(dst, src, prefix,
// indent) would (and so as json.Encoder with SetIndent writes it), without
// json.Indent's validating scanner: the value is known valid, so tracking
// strings and their escapes is enough. Whitespace outside strings (there is
// none in encoding/json's compact output) is dropped, as json.Indent drops
// it.
func appendIndented(dst, src []byte, prefix, indent string) []byte {
	needIndent := false
	depth := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			depth++
			dst = appendNewline(dst, prefix, indent, depth)
		}
		switch c {
		case '"':
			// a string (key or value) is copied whole, escapes included
			n := stringEnd(src[i+1:])
			dst = append(dst, src[i:i+1+n]...)
			i += n
		case '{', '[':
			// An empty object or array stays {} or [].
			needIndent = true
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			dst = appendNewline(dst, prefix, indent, depth)
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if needIndent {
				needIndent = false
			} else {
				depth--
				dst = appendNewline(dst, prefix, indent, depth)
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// stringEnd returns the length of the rest of a JSON string whose opening
// quote came just before b: up to and including its closing quote (all of
// b when it has none).
func stringEnd(b []byte) int {
	for i := 0; ; {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		q += i
		// the quote closes the string unless an odd run of backslashes
		// escapes it
		bs := 0
		for j := q - 1; j >= 0 && b[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}

func appendNewline(dst []byte, prefix, indent string, depth int) []byte {
	dst = append(dst, '\n')
	dst = append(dst, prefix...)
	for i := 0; i < depth; i++ {
		dst = append(dst, indent...)
	}
	return dst
}
