package chat

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/sluice-llm/sluice/internal/request"
)

// The reading of JSON without encoding/json's tokens and reflection: an
// object's members shown by the module's one JSON reader
// (internal/request's Walk, which validates as json.Valid does), and the
// plain values the converters read (strings without escapes, integers,
// booleans) taken as they are written. Whatever is not that plain goes to
// encoding/json, which reads it as before: the fast read gives what
// encoding/json gives, or gives way to it.

// members reads the members of the JSON object data, in order. A key
// given twice is an error: APIs and JSON parsers disagree on which wins.
func members(data []byte) ([]member, error) {
	if ms, ok := membersFast(data); ok {
		return ms, nil
	}
	return membersSlow(data)
}

// membersOwned is members for data that is a part of a text already
// checked (such as an element that elements split), and its caller's own
// copy: the values are slices of data itself, and its strings are not
// checked again.
func membersOwned(data []byte) ([]member, error) {
	if ms, ok := walkMembers(data, false); ok {
		return ms, nil
	}
	return membersSlow(data)
}

// membersFast is members for a valid object whose keys are plain
// (no escapes, valid UTF-8) and given once; false for anything else.
// The values are slices of one copy of data.
func membersFast(data []byte) ([]member, bool) {
	return walkMembers(data, true)
}

// walkMembers is membersFast, on a copy of data and checking it when
// strict, or on data itself, a part of a text already checked.
func walkMembers(data []byte, strict bool) ([]member, bool) {
	i := 0
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	if i == len(data) || data[i] != '{' {
		return nil, false
	}
	if strict {
		data = bytes.Clone(data)
	}
	ms := make([]member, 0, 4) // a message's or a block's members; a body's grow once
	ok := true
	show := func(k, v []byte) bool {
		if bytes.IndexByte(k, '\\') >= 0 || !utf8.Valid(k) {
			ok = false
			return false
		}
		for _, m := range ms {
			if m.Key == string(k) {
				ok = false
				return false
			}
		}
		ms = append(ms, member{intern(k), v[:len(v):len(v)]})
		return true
	}
	var valid bool
	if strict {
		valid = request.Walk(data, show)
	} else {
		valid = request.Members(data, show)
	}
	return ms, ok && valid
}

// elements splits the JSON array v into its elements, as json.Unmarshal
// reads it into a []json.RawMessage: each element as written, in one copy
// of v; false when v is no valid array.
func elements(v []byte) ([]json.RawMessage, bool) {
	return splitArray(v, true, true)
}

// elementsIn is elements for v, a part of a text already checked, whose
// strings it does not check again.
func elementsIn(v []byte) ([]json.RawMessage, bool) {
	return splitArray(v, false, true)
}

// elementsOwned is elementsIn for v, a part of a text already checked
// and this read's own copy of it (a request's members, as members copied
// them): the elements are slices of v itself, not of a copy.
func elementsOwned(v []byte) ([]json.RawMessage, bool) {
	return splitArray(v, false, false)
}

// splitArray is elements when strict, else elementsIn, on a copy of v
// when clone, else on v itself (elementsOwned).
func splitArray(v []byte, strict, clone bool) ([]json.RawMessage, bool) {
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	if clone {
		v = bytes.Clone(v)
	}
	raws := make([]json.RawMessage, 0, 4)
	element := func(e []byte) bool {
		raws = append(raws, e[:len(e):len(e)])
		return true
	}
	var valid bool
	if strict {
		valid = request.Elements(v, element)
	} else {
		valid = request.Items(v, element)
	}
	return raws, valid
}

// plainString returns the JSON string v's contents when it has no
// escapes and is valid UTF-8, as it is written.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	s := v[1 : len(v)-1]
	if !request.Plain(s) || !utf8.Valid(s) {
		return "", false
	}
	return intern(s), true
}

// intern returns s as a string, the names the stream events and the
// requests' keys repeat without allocating.
func intern(s []byte) string {
	switch string(s) {
	case "":
		return ""
	case "content_block_delta":
		return "content_block_delta"
	case "text_delta":
		return "text_delta"
	case "input_json_delta":
		return "input_json_delta"
	case "content_block_start":
		return "content_block_start"
	case "content_block_stop":
		return "content_block_stop"
	case "function":
		return "function"
	case "assistant":
		return "assistant"
	case "stop":
		return "stop"
	case "tool_calls":
		return "tool_calls"
	case "end_turn":
		return "end_turn"
	case "tool_use":
		return "tool_use"
	case "text":
		return "text"
	case "type":
		return "type"
	case "role":
		return "role"
	case "content":
		return "content"
	case "model":
		return "model"
	case "messages":
		return "messages"
	case "system":
		return "system"
	case "max_tokens":
		return "max_tokens"
	case "stream":
		return "stream"
	case "tools":
		return "tools"
	case "tool_choice":
		return "tool_choice"
	case "name":
		return "name"
	case "id":
		return "id"
	case "input":
		return "input"
	case "user":
		return "user"
	}
	return string(s)
}

// plainInt returns the JSON integer v (no fraction, no exponent) when it
// fits in bits bits.
func plainInt(v []byte, bits int) (int64, bool) {
	d := v
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 1 && d[0] == '0' {
		return 0, false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, bits)
	return n, err == nil
}

// unmarshalFast decodes the plain values into p as json.Unmarshal does:
// a string, an integer, a boolean, or null (which leaves them as they
// are), and an array split into its elements; false, nothing written, for
// anything else.
func unmarshalFast(v []byte, p any) bool {
	if string(v) == "null" {
		switch p := p.(type) {
		case *string, *bool, *int, *int64:
			return true
		case *[]json.RawMessage:
			*p = nil
			return true
		}
		return false
	}
	switch p := p.(type) {
	case *[]json.RawMessage:
		raws, ok := elements(v)
		if ok {
			*p = raws
		}
		return ok
	case *string:
		s, ok := plainString(v)
		if ok {
			*p = s
		}
		return ok
	case *bool:
		switch string(v) {
		case "true":
			*p = true
		case "false":
			*p = false
		default:
			return false
		}
		return true
	case *int:
		n, ok := plainInt(v, strconv.IntSize)
		if ok {
			*p = int(n)
		}
		return ok
	case *int64:
		n, ok := plainInt(v, 64)
		if ok {
			*p = n
		}
		return ok
	}
	return false
}

// unmarshalString reads the JSON string v into p, as json.Unmarshal does.
func unmarshalString(v []byte, p *string) error {
	if s, ok := plainString(v); ok {
		*p = s
		return nil
	}
	return json.Unmarshal(v, p)
}

// fields walks the JSON object v as json.Unmarshal matches its members
// to a struct's fields named names: each member named exactly so is
// passed to f with its name's index; a member named by none is passed
// over. It is false — the read gives way to encoding/json — when v is no
// valid object, a name is given twice, a key matches a name only as
// encoding/json folds keys (case, escapes), or f is false.
//
// The walk checks v as json.Valid does; fieldsIn is fields for a v that
// is part of a text fields checked, whose strings it does not check
// again.
func fields(v []byte, names []string, f func(i int, v []byte) bool) bool {
	return walkFields(v, names, true, f)
}

func fieldsIn(v []byte, names []string, f func(i int, v []byte) bool) bool {
	return walkFields(v, names, false, f)
}

// walkFields is fields when strict, else fieldsIn.
func walkFields(v []byte, names []string, strict bool, f func(i int, v []byte) bool) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	var seen uint64
	member := func(k, val []byte) bool {
		for i, n := range names {
			if string(k) == n {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return f(i, val)
			}
		}
		for _, n := range names {
			if request.KeyIs(k, n) {
				return false
			}
		}
		return true
	}
	if strict {
		return request.Walk(v, member)
	}
	return request.Members(v, member)
}

// only returns the one element of the JSON array v, an object, and true;
// nil and true for an empty array; false when v holds no object first (or
// is no array). A v of several elements gives what is not one object, for
// fields to refuse.
func only(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return nil, false
	}
	e := bytes.TrimSpace(v[1 : len(v)-1])
	if len(e) == 0 {
		return nil, true
	}
	return e, e[0] == '{' // two objects are no one value: the walk of e refuses them
}

// readString reads the JSON string v into p, or leaves p for null, as
// json.Unmarshal reads one into a string.
func readString(v []byte, p *string) bool {
	if string(v) == "null" {
		return true
	}
	if s, ok := plainString(v); ok {
		*p = s
		return true
	}
	return v[0] == '"' && unmarshalFresh(v, p) == nil
}

// readStringPtr reads the JSON string v into *p, pointing it at s, or sets
// *p to nil for null, as json.Unmarshal reads one into a *string.
func readStringPtr(v []byte, p **string, s *string) bool {
	if string(v) == "null" {
		*p = nil
		return true
	}
	*s = ""
	if !readString(v, s) {
		return false
	}
	*p = s
	return true
}

// readInt reads the JSON integer v into p, or leaves p for null.
func readInt(v []byte, p *int) bool {
	if string(v) == "null" {
		return true
	}
	n, ok := plainInt(v, strconv.IntSize)
	*p = int(n)
	return ok
}
