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
// JSON object, or -1, -1. It scans without allocating and gives up on
// anything that is not a well-formed object prefix.
func findKey(b []byte, key string) (start, end int) {
	o := members(b)
	for {
		k, vs, ve, ok := o.next()
		if !ok {
			return -1, -1
		}
		if string(k) == key {
			return vs, ve
		}
	}
}

// object walks the top-level members of a JSON object, in order, without
// allocating. It stops at the end of the object and at anything that is
// not a well-formed object prefix.
type object struct {
	b []byte
	i int // where the next member starts; -1 when the walk is over
}

// members returns the walk of the object b; a walk that is over at once
// when b does not start with '{'.
func members(b []byte) object {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return object{i: -1}
	}
	return object{b: b, i: i + 1}
}

// next returns the next member: its key as written (no quotes, escapes
// kept) and the bounds of its value, trailing space trimmed; ok is false
// when the walk is over.
func (o *object) next() (key []byte, vs, ve int, ok bool) {
	b, i := o.b, o.i
	o.i = -1
	if i < 0 {
		return nil, 0, 0, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '"' {
		return nil, 0, 0, false
	}
	ks, ke, ok := scanString(b, i)
	if !ok {
		return nil, 0, 0, false
	}
	i = skipSpace(b, ke)
	if i >= len(b) || b[i] != ':' {
		return nil, 0, 0, false
	}
	vs = skipSpace(b, i+1)
	if i = skipValue(b, vs); i < 0 {
		return nil, 0, 0, false
	}
	ve = i
	for ve > vs && (b[ve-1] == ' ' || b[ve-1] == '\t' || b[ve-1] == '\n' || b[ve-1] == '\r') {
		ve--
	}
	if i = skipSpace(b, i); i < len(b) && b[i] == ',' {
		o.i = i + 1
	}
	return b[ks+1 : ke-1], vs, ve, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the bounds of the string starting at b[i] == '"',
// quotes included. It jumps from quote to quote (bytes.IndexByte); a quote
// after an odd run of backslashes is escaped.
func scanString(b []byte, i int) (start, end int, ok bool) {
	for j := i + 1; ; j++ {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, 0, false
		}
		j += k
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return i, j + 1, true
		}
	}
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

// Walk calls fn with the key (as written: no quotes, escapes kept) and the
// value of each top-level member of the JSON object b, in order, until fn
// returns false. It reads b without allocating and stops at anything that
// is not a well-formed object. It serves any JSON object, an answer's as
// well as a request's: spend reads an answer's usage with it without
// decoding the rest.
func Walk(b []byte, fn func(key, value []byte) bool) {
	o := members(b)
	for {
		k, vs, ve, ok := o.next()
		if !ok || !fn(k, b[vs:ve]) {
			return
		}
	}
}

// KeyIs reports whether key, as Walk gives it, names name as encoding/json
// matches keys to a struct's fields: escapes decoded, case folded. name is
// ASCII.
func KeyIs(key []byte, name string) bool { return jsonName(key, name) }
