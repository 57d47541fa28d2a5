// Package awsevent reads and writes AWS event-stream frames
// (application/vnd.amazon.eventstream), the framing of Bedrock Runtime's
// streams, with aws-sdk-go-v2's eventstream codec. Unlike the AWS SDKs,
// which take a stream that stops at a frame's boundary with an unexpected
// EOF for its end, it tells a stream that ended between frames (io.EOF)
// from one cut inside a frame or by the transport (io.ErrUnexpectedEOF),
// so that whoever judges a stream can tell a cut from an end.
package awsevent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// ContentType is the content type of an AWS event stream.
const ContentType = "application/vnd.amazon.eventstream"

// The kinds of frame, as a frame's :message-type header names them.
const (
	// Event is a frame of the stream's answer, named by :event-type
	// (messageStart, contentBlockDelta, chunk, …).
	Event = "event"
	// Exception is a modeled error, named by :exception-type
	// (throttlingException, serviceUnavailableException,
	// modelStreamErrorException, …), its payload a JSON {"message": …}.
	Exception = "exception"
	// Error is an unmodeled error, named by :error-code, its message in
	// :error-message.
	Error = "error"
)

// Frame is one event-stream message.
type Frame struct {
	// Type is the frame's kind: Event, Exception or Error.
	Type string
	// Name is its :event-type, :exception-type or :error-code, by Type.
	Name string
	// Payload is its body: JSON for Bedrock. An Error frame's is its
	// :error-message.
	Payload []byte
}

// ErrMalformed is wrapped by the error of a frame that does not decode: a
// bad length, a checksum that does not match, a frame with no
// :message-type.
var ErrMalformed = errors.New("awsevent: malformed frame")

// Reader reads the frames of a stream one at a time. It is not safe for
// concurrent use.
type Reader struct {
	r   countingReader
	dec *eventstream.Decoder
}

// NewReader returns a Reader of the frames r holds.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: countingReader{r: r}, dec: eventstream.NewDecoder()}
}

// Next returns the next frame, its Payload its own. At the stream's end
// between two frames it returns io.EOF; a stream that ends inside a frame,
// or whose transport reports a cut, returns io.ErrUnexpectedEOF; a frame
// that does not decode an error wrapping ErrMalformed; any other read
// error as the transport gave it.
func (r *Reader) Next() (Frame, error) {
	r.r.n = 0
	m, err := r.dec.Decode(&r.r, nil)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF) && r.r.n == 0:
		return Frame{}, io.EOF
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Frame{}, io.ErrUnexpectedEOF
	case r.r.err != nil:
		return Frame{}, r.r.err
	default:
		return Frame{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return frameOf(m)
}

// frameOf returns the Frame a decoded message is.
func frameOf(m eventstream.Message) (Frame, error) {
	f := Frame{Type: header(m, ":message-type"), Payload: m.Payload}
	switch f.Type {
	case Event:
		f.Name = header(m, ":event-type")
	case Exception:
		f.Name = header(m, ":exception-type")
	case Error:
		f.Name, f.Payload = header(m, ":error-code"), []byte(header(m, ":error-message"))
	default:
		return Frame{}, fmt.Errorf("%w: :message-type %q", ErrMalformed, f.Type)
	}
	return f, nil
}

// PreludeLen is the length of a frame's prelude: its total length, its
// headers' length (4 bytes each, big-endian) and their CRC32.
const PreludeLen = 12

// MaxLen is the longest frame Length accepts: the protocol's largest
// payload (16 MiB) and headers (128 KiB), with the prelude and the
// message's CRC32.
const MaxLen = 16<<20 + 128<<10 + PreludeLen + 4

// Length returns the total length, in bytes, of the frame whose prelude
// is the first PreludeLen bytes of b, after checking the prelude's CRC32
// and its lengths; an error wrapping ErrMalformed when they do not hold.
// It lets a reader fed bytes as they come know when a frame is whole.
func Length(b []byte) (int, error) {
	if len(b) < PreludeLen {
		return 0, fmt.Errorf("%w: a prelude of %d bytes", ErrMalformed, len(b))
	}
	total, headers := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	switch {
	case crc32.ChecksumIEEE(b[:8]) != binary.BigEndian.Uint32(b[8:]):
		return 0, fmt.Errorf("%w: the prelude's checksum does not match", ErrMalformed)
	case total < PreludeLen+4 || total > MaxLen || headers > total-PreludeLen-4:
		return 0, fmt.Errorf("%w: a length of %d with %d bytes of headers", ErrMalformed, total, headers)
	}
	return int(total), nil
}

// Decode returns the frame b holds, b being exactly one whole frame (the
// Length its prelude gives), its Payload its own. A frame that does not
// decode gives an error wrapping ErrMalformed.
func Decode(b []byte) (Frame, error) {
	r := bytes.NewReader(b)
	m, err := decoder.Decode(r, nil)
	if err == nil && r.Len() != 0 {
		err = fmt.Errorf("%d bytes past the frame", r.Len())
	}
	if err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return frameOf(m)
}

// decoder decodes frames; it keeps no state between them.
var decoder = eventstream.NewDecoder()

// header returns a message's string header, "" when it has none.
func header(m eventstream.Message, name string) string {
	if v := m.Headers.Get(name); v != nil {
		return v.String()
	}
	return ""
}

// Encode returns the frame as one event-stream message: Event and
// Exception frames with :content-type application/json and the payload,
// Error frames with their message in :error-message and no payload.
func (f Frame) Encode() []byte {
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue(f.Type))
	switch f.Type {
	case Error:
		m.Headers.Set(":error-code", eventstream.StringValue(f.Name))
		m.Headers.Set(":error-message", eventstream.StringValue(string(f.Payload)))
	case Exception:
		m.Headers.Set(":exception-type", eventstream.StringValue(f.Name))
	default:
		m.Headers.Set(":event-type", eventstream.StringValue(f.Name))
	}
	if f.Type != Error {
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Payload = f.Payload
	}
	var b bytes.Buffer
	_ = eventstream.NewEncoder().Encode(&b, m) // a bytes.Buffer does not fail
	return b.Bytes()
}

// countingReader counts the bytes read since n was last zeroed, and keeps
// the first read error other than io.EOF.
type countingReader struct {
	r   io.Reader
	n   int
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}
