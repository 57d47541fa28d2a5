package idempotency

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"net/http"
	"time"
)

// Answer is a kept answer: what a replay sends instead of calling
// upstream.
type Answer struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the answer's content headers. Keep keeps only those
	// ContentHeaders lets through, whatever the caller puts here.
	Header http.Header
	// Body is the body byte for byte; for a stream, every event as it was
	// sent, in order, framing included.
	Body []byte
	// Stream reports that the answer was a stream (server-sent events).
	Stream bool
	// RequestID is the original call's Sluice request id, what a replay
	// names in Sluice-Replay-Of.
	RequestID string
	// CostUSD is what the original call cost: what a replay did not spend.
	CostUSD float64
	// Kept is when the answer was kept; Keep sets it.
	Kept time.Time
}

// Size is what an answer counts against a store's MaxAnswer: the length
// of its body.
func (a *Answer) Size() int64 { return int64(len(a.Body)) }

// contentHeaders is the allowlist of ContentHeaders, canonical names.
var contentHeaders = []string{"Content-Type", "Content-Encoding", "Content-Language"}

// ContentHeaders returns a copy of the headers of h that a store may keep:
// Content-Type, Content-Encoding and Content-Language, and nothing else.
// It is an allowlist, so no credential, cookie or Authorization value can
// pass, whatever header carries it; Content-Length is left out as the
// replay sets it from the body.
func ContentHeaders(h http.Header) http.Header {
	out := http.Header{}
	for _, name := range contentHeaders {
		if vs := h[name]; len(vs) > 0 { // the names are canonical: Values would canonicalize each again
			out[name] = append([]string(nil), vs...)
		}
	}
	return out
}

// answerVersion starts an encoded answer; a change of layout changes it.
const answerVersion = 1

// errBadAnswer is the error of decoding an answer that was cut short or
// damaged: a store treats it as absent.
var errBadAnswer = errors.New("idempotency: damaged answer record")

// MarshalBinary encodes a with its content headers only
// (ContentHeaders): the form the stores keep. It never fails.
func (a *Answer) MarshalBinary() ([]byte, error) {
	return a.appendBinary(make([]byte, 0, 64+len(a.RequestID)+len(a.Body))), nil
}

// appendBinary appends MarshalBinary's encoding of a to b.
func (a *Answer) appendBinary(b []byte) []byte {
	b = append(b, answerVersion)
	b = binary.AppendUvarint(b, uint64(a.Status))
	stream := byte(0)
	if a.Stream {
		stream = 1
	}
	b = append(b, stream)
	b = binary.AppendVarint(b, a.Kept.UnixNano())
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(a.CostUSD))
	b = appendString(b, a.RequestID)
	n := 0
	for _, name := range contentHeaders {
		if len(a.Header[name]) > 0 {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for _, name := range contentHeaders {
		vs := a.Header[name]
		if len(vs) == 0 {
			continue
		}
		b = appendString(b, name)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendString(b, v)
		}
	}
	return appendBytes(b, a.Body)
}

func appendBytes(b, s []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// UnmarshalBinary decodes what MarshalBinary encoded into a, copying
// what it keeps of b. Its error says the record was cut short or damaged;
// a store then treats the answer as absent.
func (a *Answer) UnmarshalBinary(b []byte) error {
	return a.decode(bytes.Clone(b))
}

// decode is UnmarshalBinary without the copy: a's body and strings share
// b, which the caller owns.
func (a *Answer) decode(b []byte) error {
	d := decoder{b: b}
	if d.byte() != answerVersion {
		return errBadAnswer
	}
	*a = Answer{Status: int(d.uvarint()), Stream: d.byte() == 1}
	a.Kept = time.Unix(0, d.varint())
	a.CostUSD = math.Float64frombits(d.uint64())
	a.RequestID = string(d.bytes())
	n := d.uvarint()
	if n > uint64(len(contentHeaders)) {
		return errBadAnswer
	}
	a.Header = make(http.Header, n)
	for range n {
		name := http.CanonicalHeaderKey(string(d.bytes()))
		m := d.uvarint()
		if m > uint64(len(d.b)) {
			return errBadAnswer
		}
		for range m {
			a.Header[name] = append(a.Header[name], string(d.bytes()))
		}
	}
	a.Body = d.bytes()
	if d.bad || len(d.b) != 0 || a.Status < 100 || a.Status > 999 {
		return errBadAnswer
	}
	return nil
}

// decoder reads an encoded answer; a read past its end sets bad.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint64() uint64 {
	if len(d.b) < 8 {
		d.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}
