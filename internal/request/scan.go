package request

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Model returns the top-level "model" string of the JSON object b,
// decoded, or "" when there is none or it is not a string. It does not
// allocate for a name without escapes beyond the returned string.
func Model(b []byte) string {
	start, end := findModel(b)
	if start < 0 {
		return ""
	}
	return unquote(b[start+1 : end-1])
}

// WithModel returns a copy of the JSON object b whose top-level "model"
// is model, and true; b itself and false when b has no "model" string to
// replace.
func WithModel(b []byte, model string) ([]byte, bool) {
	start, end := findModel(b)
	if start < 0 {
		return b, false
	}
	out := make([]byte, 0, len(b)+len(model))
	out = append(out, b[:start]...)
	q, _ := json.Marshal(model) // a string always marshals
	out = append(out, q...)
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

// Int returns the top-level integer called key of the JSON object b, and
// false when there is none.
func Int(b []byte, key string) (int64, bool) {
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

// unquote decodes the escapes of a JSON string's contents. An escape that
// is not valid JSON is kept as written.
func unquote(s []byte) string {
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s)
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			out = append(out, s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := unicodeEscape(s[i-1:])
			if n == 0 {
				out = append(out, '\\', c)
				continue
			}
			out = utf8.AppendRune(out, r)
			i += n - 2
		default: // '"', '\\', '/', and anything else as written
			out = append(out, c)
		}
	}
	return string(out)
}

// unicodeEscape decodes the \uXXXX escape (or surrogate pair) at the start
// of s and returns the rune and the bytes it took, or 0, 0.
func unicodeEscape(s []byte) (rune, int) {
	r, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex4(s[6:]); ok {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}

// hex4 reads "\uXXXX" at the start of s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s[2:6]), 16, 32)
	return rune(n), err == nil
}
