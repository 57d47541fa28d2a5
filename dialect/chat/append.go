package chat

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/sluice-llm/sluice/internal/request"
)

// The writing of JSON without reflection: an object's members, and the
// values the converters set, appended byte for byte as json.Marshal
// writes them (HTML characters escaped, raw values compacted). A value of
// another type is marshaled by encoding/json; a value that does not
// marshal makes the append fail, and the caller writes it the slow way,
// which says why.

// appendValue appends v as json.Marshal writes it; false when v does not
// marshal.
func appendValue(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendString(b, v), true
	case StopReason:
		return appendString(b, string(v)), true
	case bool:
		return strconv.AppendBool(b, v), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case float64:
		return appendFloat(b, v)
	case *object:
		return v.appendTo(b)
	case json.RawMessage:
		return appendRaw(b, v)
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendValue(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case []string:
		if v == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		return append(b, ']'), true
	case struct{}:
		return append(b, "{}"...), true
	case textPart:
		return v.appendTo(b), true
	case *anthropicUsage:
		return v.appendTo(b), true
	case *openAIUsage:
		return v.appendTo(b), true
	}
	m, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, m...), true
}

// appendTo appends the object's JSON, members in the order set; false
// when a member does not marshal.
func (o *object) appendTo(b []byte) ([]byte, bool) {
	if o.err != nil {
		return b, false
	}
	b = append(b, '{')
	for i, m := range o.members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, m.key)
		b = append(b, ':')
		var ok bool
		if b, ok = appendValue(b, m.val); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendFloat appends f as json.Marshal writes a float64; false for NaN
// and the infinities, which it refuses.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 is written e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendRaw appends the raw JSON v as json.Marshal writes a
// json.RawMessage: as it is when it is compact and holds no character
// that encoding/json escapes for HTML, else compacted and escaped by
// encoding/json; false when it is not JSON.
func appendRaw(b []byte, v json.RawMessage) ([]byte, bool) {
	if v == nil {
		return append(b, "null"...), true
	}
	if plainRaw(v) && request.Valid(v) {
		return append(b, v...), true
	}
	m, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, m...), true
}

// plainRaw reports whether v has no white space outside its strings and
// none of the bytes that encoding/json escapes for HTML (<, >, &, and the
// first byte of U+2028 and U+2029).
func plainRaw(v []byte) bool {
	in := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '<', '>', '&', 0xE2:
			return false
		case ' ', '\t', '\n', '\r':
			if !in {
				return false
			}
		case '"':
			in = !in
		case '\\':
			i++ // the escaped byte is never a quote that ends the string
		}
	}
	return true
}

// jsonSafe marks the ASCII bytes json.Marshal writes as they are in a
// string: not a control character, a quote, a backslash, or <, > and &.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendString appends s as json.Marshal writes a string: quoted, HTML
// characters and U+2028, U+2029 escaped, invalid UTF-8 written as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s)
	return append(b, '"')
}

// appendEscaped appends s as appendString does, without the quotes.
func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}

// appendTo appends u as json.Marshal writes it: the members set, in the
// fields' order.
func (u *anthropicUsage) appendTo(b []byte) []byte {
	if u == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	n := len(b)
	for i, p := range [...]*int64{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens} {
		if p == nil {
			continue
		}
		if len(b) > n {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, anthropicUsageNames[i]...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, *p, 10)
	}
	return append(b, '}')
}

// appendTo appends u as json.Marshal writes it.
func (u *openAIUsage) appendTo(b []byte) []byte {
	if u == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, u.PromptTokens, 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, u.CompletionTokens, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, u.TotalTokens, 10)
	if u.PromptDetails != nil {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, u.PromptDetails.CachedTokens, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// textPart is a text part, {"type":"text","text":...}, as Anthropic
// writes a content block and OpenAI a content part without more members:
// one value, where an object takes three.
type textPart string

func (t textPart) appendTo(b []byte) []byte {
	b = append(b, `{"type":"text","text":`...)
	b = appendString(b, string(t))
	return append(b, '}')
}

// MarshalJSON writes the part, for encoding/json's writing of an object
// (marshalSlow).
func (t textPart) MarshalJSON() ([]byte, error) { return t.appendTo(nil), nil }
