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
	"errors"
	"fmt"
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
