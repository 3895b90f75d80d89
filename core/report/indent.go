package report

// appendIndented appends src, one JSON value as encoding/json writes it
// compactly, to dst indented exactly as json.Indent(dst, src, prefix,
// indent) would (and so as json.Encoder with SetIndent writes it), without
// json.Indent's validating scanner: the value is known valid, so tracking
// strings and their escapes is enough. Whitespace outside strings (there is
// none in encoding/json's compact output) is dropped, as json.Indent drops
// it.
func appendIndented(dst, src []byte, prefix, indent string) []byte {
	needIndent, inStr, esc := false, false, false
	depth := 0
	for _, c := range src {
		if inStr {
			dst = append(dst, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
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
			inStr = true
			dst = append(dst, c)
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

func appendNewline(dst []byte, prefix, indent string, depth int) []byte {
	dst = append(dst, '\n')
	dst = append(dst, prefix...)
	for i := 0; i < depth; i++ {
		dst = append(dst, indent...)
	}
	return dst
}
