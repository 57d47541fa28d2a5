package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// What the converters share to read and write JSON: an object's members
// in order (keys matched exactly, a key twice refused, unlike
// encoding/json's case-folded last-one-wins), and an object written in
// the order its members are set, nested objects built in place.

// member is one member of a JSON object.
type member struct {
	Key   string
	Value json.RawMessage
}

var (
	errNotObject = errors.New("not a JSON object")
	errTrailing  = errors.New("data after the JSON value")
)

// membersSlow is members read by encoding/json's tokens: the reference
// the fast read is held to, and the reader of a text it leaves, which
// says why it is refused.
func membersSlow(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errNotObject
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errNotObject
		}
		for _, m := range ms {
			if m.Key == key {
				return nil, errors.New("member " + strconv.Quote(key) + " given twice")
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errTrailing
	}
	return ms, nil
}

// isNull reports whether v is JSON null (or absent).
func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// isObject reports whether v is a JSON object.
func isObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{' && json.Valid(v)
}

// isString reports whether v is a JSON string.
func isString(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '"'
}

// unmarshal decodes v into p, an error naming key when it does not. What
// encoding/json decodes goes through a copy of *p, so that p, which
// encoding/json would keep, stays where its caller put it, most often on
// the stack.
func unmarshal[T any](v json.RawMessage, p *T, key string) error {
	if unmarshalFast(v, p) {
		return nil
	}
	q := new(T)
	*q = *p
	err := json.Unmarshal(v, q)
	*p = *q
	if err != nil {
		return errors.New(key + ": " + err.Error())
	}
	return nil
}

// rawsIn reads the JSON array v into its elements as unmarshal does, for
// a v that is a part of a text already checked and this read's own copy
// (a request's members, a message's, a block's), whose strings it does
// not check again and whose bytes it does not copy again
// (elementsOwned).
func rawsIn(v json.RawMessage, p *[]json.RawMessage, key string) error {
	if raws, ok := elementsOwned(v); ok {
		*p = raws
		return nil
	}
	return unmarshal(v, p, key)
}

// unmarshalFresh decodes data into *p as json.Unmarshal decodes it into
// a zero T, through a T of its own, so that p stays where its caller put
// it: the slow read of a value first read fast.
func unmarshalFresh[T any](data []byte, p *T) error {
	q := new(T)
	err := json.Unmarshal(data, q)
	*p = *q
	return err
}

// object is a JSON object written in the order its members are set.
// Setting a member that does not marshal keeps the first error, which
// MarshalJSON returns.
type object struct {
	members []pair
	err     error
}

// pair is a member of an object: its key and its value, a
// json.RawMessage, an *object, or any value to marshal.
type pair struct {
	key string
	val any
}

// set sets member k to v, replacing a member set before.
func (o *object) set(k string, v any) {
	for i := range o.members {
		if o.members[i].key == k {
			o.members[i].val = v
			return
		}
	}
	if o.members == nil { // room for an API's object, grown once at most
		o.members = make([]pair, 0, 8)
	}
	o.members = append(o.members, pair{k, v})
}

// obj returns member k, an object, set empty if it was not set.
func (o *object) obj(k string) *object {
	for _, m := range o.members {
		if m.key == k {
			if c, ok := m.val.(*object); ok {
				return c
			}
		}
	}
	c := &object{}
	o.set(k, c)
	return c
}

// has reports whether member k is set.
func (o *object) has(k string) bool {
	for _, m := range o.members {
		if m.key == k {
			return true
		}
	}
	return false
}

// MarshalJSON writes the object, members in the order set.
func (o *object) MarshalJSON() ([]byte, error) {
	if b, ok := o.appendTo(nil); ok {
		return b, nil
	}
	return o.marshalSlow()
}

// marshalSlow is MarshalJSON by encoding/json, member by member: the
// reference appendTo is held to, and the writer of an object that does
// not marshal, which says why.
func (o *object) marshalSlow() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	b := []byte{'{'}
	for i, m := range o.members {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, rawString(m.key)...)
		b = append(b, ':')
		v, err := json.Marshal(m.val)
		if err != nil {
			return nil, errors.New(m.key + ": " + err.Error())
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// bytes returns the object's JSON.
func (o *object) bytes() ([]byte, error) {
	if b, ok := o.appendTo(make([]byte, 0, 512)); ok { // a request's or an answer's room, grown a few times at most
		return b, nil
	}
	return o.marshalSlow()
}

// kv returns an object of the key and value pairs given, in order.
func kv(pairs ...any) *object {
	n := len(pairs) / 2
	o := &object{members: make([]pair, 0, n)}
	for i := 0; i+1 < len(pairs); i += 2 {
		o.set(pairs[i].(string), pairs[i+1])
	}
	return o
}
