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

// findKey returns the bounds of the value of the first top-level key of a
// JSON object, or -1, -1, without allocating. It reads b up to that
// member only (members), and gives up on anything that is not a
// well-formed object prefix.
func findKey(b []byte, key string) (start, end int) {
	start, end = -1, -1
	Members(b, func(k, v []byte) bool {
		if string(k) != key {
			return true
		}
		start, end = offset(b, v)
		return false
	})
	return start, end
}

// offset returns the bounds in b of v, a slice of b that members showed.
func offset(b, v []byte) (start, end int) {
	start = cap(b) - cap(v)
	return start, start + len(v)
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

// KeyIs reports whether key, as Walk gives it, names name as encoding/json
// matches keys to a struct's fields: escapes decoded, case folded. name is
// ASCII.
func KeyIs(key []byte, name string) bool { return jsonName(key, name) }
