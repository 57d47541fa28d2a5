package sluice

import (
	"bytes"
	"strconv"
)

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
// string of a JSON object, or -1, -1.
func findModel(b []byte) (start, end int) {
	start, end = findKey(b, "model")
	if start < 0 || b[start] != '"' {
		return -1, -1
	}
	return start, end
}

// jsonInt returns the top-level integer called key of a JSON object.
func jsonInt(b []byte, key string) (int64, bool) {
	start, end := findKey(b, key)
	if start < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b[start:end])), 10, 64)
	return n, err == nil
}

// findKey returns the bounds of the value of the top-level key of a JSON
// object, or -1, -1. It scans without allocating and gives up on anything
// that is not a well-formed object prefix.
func findKey(b []byte, key string) (start, end int) {
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
		vs := i
		if i = skipValue(b, i); i < 0 {
			return -1, -1
		}
		if string(b[ks+1:ke-1]) == key {
			ve := i
			for ve > vs && (b[ve-1] == ' ' || b[ve-1] == '\t' || b[ve-1] == '\n' || b[ve-1] == '\r') {
				ve--
			}
			return vs, ve
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
