// Package scrub replaces secrets in what an upstream sends back: the
// gateway's injected keys (every provider's, fallbacks' and pools'
// included), in an answer's headers and in its body read chunk by chunk.
// An upstream that echoes the request's headers in an error must not hand
// the key to the client.
package scrub

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
)

// Redacted replaces a key in what an upstream sends back.
const Redacted = "[redacted]"

// Keys is a set of keys to scrub. A nil *Keys scrubs nothing. It is never
// changed once made, so it is safe for concurrent use.
type Keys struct {
	keys [][]byte // distinct, longest first
}

// New returns the set of the non-empty keys, nil when there is none.
func New(keys ...string) *Keys {
	seen := map[string]bool{}
	s := &Keys{}
	for _, k := range keys {
		if k != "" && !seen[k] {
			seen[k] = true
			s.keys = append(s.keys, []byte(k))
		}
	}
	if len(s.keys) == 0 {
		return nil
	}
	slices.SortFunc(s.keys, func(a, b []byte) int { return len(b) - len(a) })
	return s
}

// Header replaces every key in h's values.
func (s *Keys) Header(h http.Header) {
	if s == nil {
		return
	}
	for _, vs := range h {
		for i, v := range vs {
			for _, k := range s.keys {
				if strings.Contains(v, string(k)) {
					v = strings.ReplaceAll(v, string(k), Redacted)
				}
			}
			vs[i] = v
		}
	}
}

// Body returns a scrubber of one body, read chunk by chunk.
func (s *Keys) Body() *Body { return &Body{s: s} }

// next returns the index and length of the first key in b, the longest
// at that index, or -1, 0.
func (s *Keys) next(b []byte) (int, int) {
	at, n := -1, 0
	for _, k := range s.keys {
		if i := bytes.Index(b, k); i >= 0 && (at < 0 || i < at) {
			at, n = i, len(k)
		}
	}
	return at, n
}

// partial returns the index of the first byte of b's longest suffix that
// is the start of a key, len(b) when none.
func (s *Keys) partial(b []byte) int {
	from := len(b)
	for _, k := range s.keys {
		for i := max(0, len(b)-len(k)+1); i < from; i++ {
			if b[i] == k[0] && bytes.HasPrefix(k, b[i:]) {
				from = i
				break
			}
		}
	}
	return from
}

// Body replaces keys in a body read chunk by chunk. A key split between
// two chunks is caught: the end of a chunk that may begin a key is held
// back until the next one shows whether it does. Nothing else is held, so
// an event's line ends pass at once. It is not safe for concurrent use.
type Body struct {
	s    *Keys
	tail []byte
}

// Scrub returns p, after what was held back, with every key replaced,
// less an end that may begin a key. With final, nothing is held back.
func (sc *Body) Scrub(p []byte, final bool) []byte {
	buf := p
	if len(sc.tail) > 0 {
		buf = append(sc.tail, p...)
		sc.tail = nil
	}
	hold := len(buf)
	if !final {
		hold = sc.s.partial(buf)
	}
	var out []byte
	i := 0
	for {
		j, n := sc.s.next(buf[i:])
		if j < 0 || i+j >= hold {
			break
		}
		if out == nil {
			out = make([]byte, 0, len(buf))
		}
		out = append(append(out, buf[i:i+j]...), Redacted...)
		i += j + n
	}
	end := max(i, hold)
	if end < len(buf) {
		sc.tail = append([]byte(nil), buf[end:]...)
	}
	if out == nil {
		return buf[:end]
	}
	return append(out, buf[i:end]...)
}
