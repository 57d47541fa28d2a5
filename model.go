package sluice

// jsonModel returns the top-level "model" string of a JSON object, or ""
// when there is none.
func jsonModel(b []byte) string {
	start, end := findModel(b)
	if start < 0 {
		return ""
	}
	return unquote(b[start+1 : end-1])
}

// withModel returns a copy of the JSON object b whose top-level "model" is
// model, and false when b has no "model" string to replace.
func withModel(b []byte, model string) ([]byte, bool) {
	start, end := findModel(b)
	if start < 0 {
		return b, false
	}
	out := make([]byte, 0, len(b)+len(model))
	out = append(out, b[:start]...)
	out = appendString(out, model)
	return append(out, b[end:]...), true
}

// findModel returns the bounds, quotes included, of the top-level "model"
// string of a JSON object, or -1, -1. It scans without allocating and gives
// up on anything that is not a well-formed object prefix.
func findModel(b []byte) (start, end int) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return -1, -1
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return -1, -1
		}
		ks, ke, ok := scanString(b, i)
		if !ok {
			return -1, -1
		}
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return -1, -1
		}
		i = skipSpace(b, i+1)
		if string(b[ks+1:ke-1]) == "model" && i < len(b) && b[i] == '"' {
			vs, ve, ok := scanString(b, i)
			if !ok {
				return -1, -1
			}
			return vs, ve
		}
		if i = skipValue(b, i); i < 0 {
			return -1, -1
		}
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ',' {
			return -1, -1
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the bounds of the string starting at b[i] == '"',
// quotes included.
func scanString(b []byte, i int) (start, end int, ok bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return i, j + 1, true
		}
	}
	return 0, 0, false
}

// skipValue returns the index just past the JSON value at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			_, e, ok := scanString(b, i)
			if !ok {
				return -1
			}
			i = e
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(b) && (b[i] == ',' || b[i] == '}') {
			return i
		}
	}
	return -1
}

// unquote decodes the few escapes a model name may hold; a name with
// others is returned as written.
func unquote(s []byte) string {
	for _, c := range s {
		if c == '\\' {
			out := make([]byte, 0, len(s))
			for i := 0; i < len(s); i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
					switch s[i] {
					case 'n':
						out = append(out, '\n')
					case 't':
						out = append(out, '\t')
					default:
						out = append(out, s[i])
					}
					continue
				}
				out = append(out, s[i])
			}
			return string(out)
		}
	}
	return string(s)
}
