package request

import (
	"bytes"
	"encoding/binary"
)

// The one JSON reader of Sluice: one pass that validates a text exactly
// as json.Valid does and shows the members of its top-level object as it
// reads them, without allocating. Scan reads a request's fields with it,
// Model and Int a member, and the dialects an answer's usage (a body that
// is not JSON yields no usage).

// maxDepth is how deep encoding/json lets objects and arrays nest: one
// level more and json.Valid reports the text invalid.
const maxDepth = 10000

// strPlain marks the bytes a JSON string holds as they are: any byte but a
// quote, a backslash or a control character. Bytes from 0x80 are plain,
// valid UTF-8 or not, as encoding/json's scanner takes them.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Valid reports whether data is one JSON value, white space around it
// allowed, exactly as json.Valid does (nesting up to maxDepth levels), in
// one pass that allocates nothing for up to 256 levels.
func Valid(data []byte) bool { return Walk(data, nil) }

// Walk is Valid that also calls member, if not nil, with each member of
// data when data is an object, in order, as the pass reads it: the key as
// written (no quotes, escapes kept; KeyIs matches it) and the value
// without the white space around it. A member shown before the pass fails
// is of a text that is not valid, for the caller to drop. When member
// returns false the walk stops there, and Walk returns false. It serves
// any JSON object, an answer's as well as a request's.
func Walk(data []byte, member func(key, value []byte) bool) (valid bool) {
	return walk(data, member, nil, nil, true)
}

// Elements is Walk for an array: it validates data exactly as json.Valid
// does and calls element, if not nil, with each element of data when data
// is an array, in order, as the pass reads it: the value without the
// white space around it. An element shown before the pass fails is of a
// text that is not valid, for the caller to drop. When element returns
// false the walk stops there, and Elements returns false.
func Elements(data []byte, element func(value []byte) bool) (valid bool) {
	return walk(data, nil, element, nil, true)
}

// Members is Walk on a request's hot path: the same pass, but the
// strings' contents are passed over quote to quote (bytes.IndexByte), not
// checked, so that a body of long messages is read at memchr's speed. A
// text that Walk finds valid, or a part of one such as a member's value,
// shows the same members, and Members is true unless member stops it;
// one Walk does not find valid may show members past a string it would
// have refused.
func Members(data []byte, member func(key, value []byte) bool) bool {
	return walk(data, member, nil, nil, false)
}

// Items is Elements as Members is Walk: for an array that is a text Walk
// or Elements finds valid, or a part of one, it shows the same elements,
// its strings passed over quote to quote, not checked again.
func Items(data []byte, element func(value []byte) bool) bool {
	return walk(data, nil, element, nil, false)
}

// ItemMembers is Items that also shows, in the same pass, the members of
// each element that is an object: member is called with each of them (as
// Members shows them) before element is called with the element. A
// callback that returns false stops the pass, and ItemMembers returns
// false. It reads an array of objects, such as an answer's content
// blocks, in one pass where Items and then Members on each element take
// two.
func ItemMembers(data []byte, member func(key, value []byte) bool, element func(value []byte) bool) bool {
	return walk(data, nil, element, member, false)
}

// walk is Walk, Members, Elements, Items and ItemMembers (inner: the
// members of an array's objects), checking the strings' contents when
// strict.
func walk(data []byte, member func(key, value []byte) bool, element func(value []byte) bool,
	inner func(key, value []byte) bool, strict bool) (valid bool) {
	skipString := skipString
	if !strict {
		skipString = jumpString
	}
	keyAt, keyEnd, valAt := 0, 0, 0        // the current top-level member's
	innerAt, innerEnd, innerVal := 0, 0, 0 // the current member of an element
	var small [4]uint64
	objects := small[:] // a bit per open level: set for an object
	depth := 0
	i := skipSpace(data, 0)
value: // a value starts at i
	for {
		if i >= len(data) {
			return false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if depth == maxDepth {
				return false
			}
			if depth/64 == len(objects) {
				objects = append(objects, 0)
			}
			bit := uint64(1) << (depth % 64)
			depth++
			i = skipSpace(data, i+1)
			if c == '[' {
				objects[(depth-1)/64] &^= bit
				if i < len(data) && data[i] == ']' {
					i++
					depth--
					break
				}
				if depth == 1 {
					valAt = i
				}
				continue value
			}
			objects[(depth-1)/64] |= bit
			if i < len(data) && data[i] == '}' {
				i++
				depth--
				break
			}
			at := i
			end := 0
			if end, i = readKey(data, i, skipString); i < 0 {
				return false
			}
			if depth == 1 {
				keyAt, keyEnd, valAt = at, end, i
			} else if depth == 2 {
				innerAt, innerEnd, innerVal = at, end, i
			}
			continue value
		case c == '"':
			if i = skipString(data, i); i < 0 {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = skipNumber(data, i); i < 0 {
				return false
			}
		case c == 't':
			if i = skipWord(data, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = skipWord(data, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = skipWord(data, i, "null"); i < 0 {
				return false
			}
		default:
			return false
		}
		// A value ended at i: what may follow it in its container.
		for {
			if depth == 1 {
				if objects[0]&1 != 0 {
					if member != nil && !member(data[keyAt+1:keyEnd-1], data[valAt:i]) {
						return false
					}
				} else if element != nil && !element(data[valAt:i]) {
					return false
				}
			} else if depth == 2 && inner != nil && objects[0]&3 == 2 { // a member of an array's object
				if !inner(data[innerAt+1:innerEnd-1], data[innerVal:i]) {
					return false
				}
			}
			i = skipSpace(data, i)
			if depth == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			inObject := objects[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			switch c := data[i]; {
			case c == ',':
				i = skipSpace(data, i+1)
				if inObject {
					at := i
					end := 0
					if end, i = readKey(data, i, skipString); i < 0 {
						return false
					}
					if depth == 1 {
						keyAt, keyEnd, valAt = at, end, i
					} else if depth == 2 {
						innerAt, innerEnd, innerVal = at, end, i
					}
				} else if depth == 1 {
					valAt = i
				}
				continue value
			case c == '}' && inObject, c == ']' && !inObject:
				i++
				depth--
			default:
				return false
			}
		}
	}
}

// readKey reads an object member's key and colon at i, and returns where
// the key ends (after its closing quote) and where its value may start
// (after white space), or -1.
func readKey(data []byte, i int, skipString func([]byte, int) int) (keyEnd, value int) {
	if i >= len(data) || data[i] != '"' {
		return 0, -1
	}
	keyEnd = skipString(data, i)
	if i = skipSpace(data, keyEnd); i < 0 || i >= len(data) || data[i] != ':' {
		return 0, -1
	}
	return keyEnd, skipSpace(data, i+1)
}

// skipSpace returns the index of the first byte from i that is not JSON
// white space; a negative i is returned as it is.
func skipSpace(data []byte, i int) int {
	for i >= 0 && i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string starting at i (its opening
// quote), or -1 if it is not a valid JSON string. It passes over eight
// plain bytes at a time (see plain8), a message's text being most of a
// request.
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		for i+8 <= len(data) && plain8(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		if i >= len(data) {
			break
		}
		c := data[i]
		if strPlain[c] {
			continue
		}
		switch c {
		case '"':
			return i + 1
		case '\\':
			i++
			if i >= len(data) {
				return -1
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) || !isHex(data[i+1]) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) {
					return -1
				}
				i += 4
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
	return -1
}

// jumpString returns the index after the string starting at i (its
// opening quote), or -1 when it has no end: the next quote that no odd run
// of backslashes escapes. Its contents are not checked.
func jumpString(data []byte, i int) int {
	for j := i + 1; ; j++ {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		n := 0
		for p := j - 1; p > i && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
	}
}

// Plain reports whether s, the contents of a JSON string, holds only
// bytes a string holds as they are: no quote, backslash or control
// character, so nothing to unescape. It reads eight bytes at a time.
func Plain(s []byte) bool {
	i := 0
	for i+8 <= len(s) && plain8(binary.LittleEndian.Uint64(s[i:])) {
		i += 8
	}
	for ; i < len(s); i++ {
		if !strPlain[s[i]] {
			return false
		}
	}
	return true
}

// plain8 reports whether the eight bytes of w are all plain in a string
// (strPlain): none is a quote, a backslash or a control character. Each
// test sets a byte's high bit where the byte is below a bound, exactly
// for bounds up to 0x80 (bytes from 0x80 are never flagged).
func plain8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := w^(ones*'"'), w^(ones*'\\') // a zero byte where a quote, a backslash is
	return ((w-ones*0x20)&^w|(q-ones)&^q|(b-ones)&^b)&highs == 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipNumber returns the index after the number starting at i, or -1 if it
// is not a valid JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(data []byte, i int) int {
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return -1
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		if i = skipDigits(data, i+1); data[i-1] == '.' {
			return -1
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

// skipWord returns the index after the literal word at i, or -1 if data
// does not hold it there.
func skipWord(data []byte, i int, word string) int {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}
