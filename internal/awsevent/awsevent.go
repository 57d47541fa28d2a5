// Package awsevent reads and writes AWS event-stream frames
// (application/vnd.amazon.eventstream), the framing of Bedrock Runtime's
// streams, with the standard library alone. A frame is a prelude (its
// total length and its headers' length, 4 bytes each, big-endian, and
// their CRC32), its headers (a name, a type and a value each), its
// payload, and the CRC32 of all before it. Unlike the AWS SDKs, which
// take a stream that stops at a frame's boundary with an unexpected EOF
// for its end, it tells a stream that ended between frames (io.EOF) from
// one cut inside a frame or by the transport (io.ErrUnexpectedEOF), so
// that whoever judges a stream can tell a cut from an end.
//
// Decode reads a frame as aws-sdk-go-v2's eventstream decoder does, and
// Encode writes the bytes its encoder writes; the package's tests prove
// both against it.
package awsevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
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
	r   io.Reader
	buf []byte
}

// NewReader returns a Reader of the frames r holds.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// Next returns the next frame, its Payload its own. At the stream's end
// between two frames it returns io.EOF; a stream that ends inside a frame,
// or whose transport reports a cut, returns io.ErrUnexpectedEOF; a frame
// that does not decode an error wrapping ErrMalformed; any other read
// error as the transport gave it.
func (r *Reader) Next() (Frame, error) {
	r.buf = append(r.buf[:0], make([]byte, PreludeLen)...)
	n, err := io.ReadFull(r.r, r.buf)
	if n == 0 && err == io.EOF {
		return Frame{}, io.EOF
	}
	if err != nil {
		return Frame{}, readErr(err)
	}
	total, err := Length(r.buf)
	if err != nil {
		return Frame{}, err
	}
	r.buf = append(r.buf, make([]byte, total-PreludeLen)...)
	if _, err := io.ReadFull(r.r, r.buf[PreludeLen:]); err != nil {
		return Frame{}, readErr(err)
	}
	return Decode(r.buf)
}

// readErr is the error of a read that stopped inside a frame: a cut for
// an end of the bytes, else the transport's own.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// PreludeLen is the length of a frame's prelude: its total length, its
// headers' length (4 bytes each, big-endian) and their CRC32.
const PreludeLen = 12

// crcLen is the length of the CRC32 that ends a frame.
const crcLen = 4

// MaxLen is the longest frame Length accepts: the protocol's largest
// payload (16 MiB) and headers (128 KiB), with the prelude and the
// message's CRC32.
const MaxLen = 16<<20 + 128<<10 + PreludeLen + crcLen

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
	case total < PreludeLen+crcLen || total > MaxLen || headers > total-PreludeLen-crcLen:
		return 0, fmt.Errorf("%w: a length of %d with %d bytes of headers", ErrMalformed, total, headers)
	}
	return int(total), nil
}

// Decode returns the frame b holds, b being exactly one whole frame (the
// Length its prelude gives), its Payload its own. A frame that does not
// decode gives an error wrapping ErrMalformed.
func Decode(b []byte) (Frame, error) {
	total, err := Length(b)
	switch {
	case err != nil:
		return Frame{}, err
	case total != len(b):
		return Frame{}, fmt.Errorf("%w: a frame of %d bytes in %d", ErrMalformed, total, len(b))
	case crc32.ChecksumIEEE(b[:total-crcLen]) != binary.BigEndian.Uint32(b[total-crcLen:]):
		return Frame{}, fmt.Errorf("%w: the frame's checksum does not match", ErrMalformed)
	}
	end := PreludeLen + int(binary.BigEndian.Uint32(b[4:]))
	h, err := readHeaders(b[PreludeLen:end])
	if err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var payload []byte
	if p := b[end : total-crcLen]; len(p) > 0 {
		payload = append([]byte(nil), p...)
	}
	f := Frame{Type: h.messageType, Payload: payload}
	switch f.Type {
	case Event:
		f.Name = h.eventType
	case Exception:
		f.Name = h.exceptionType
	case Error:
		f.Name, f.Payload = h.errorCode, []byte(h.errorMessage)
	default:
		return Frame{}, fmt.Errorf("%w: :message-type %q", ErrMalformed, f.Type)
	}
	return f, nil
}

// Encode returns the frame as one event-stream message: Event and
// Exception frames with :content-type application/json and the payload,
// Error frames with their message in :error-message and no payload. A
// header value longer than the protocol's 32,767 bytes encodes to nil.
func (f Frame) Encode() []byte {
	h := []header{{":message-type", f.Type}}
	switch f.Type {
	case Error:
		h = append(h, header{":error-code", f.Name}, header{":error-message", string(f.Payload)})
	case Exception:
		h = append(h, header{":exception-type", f.Name})
	default:
		h = append(h, header{":event-type", f.Name})
	}
	var payload []byte
	if f.Type != Error {
		h = append(h, header{":content-type", "application/json"})
		payload = f.Payload
	}
	headersLen := 0
	for _, x := range h {
		if len(x.value) > maxValueLen {
			return nil
		}
		headersLen += 1 + len(x.name) + 3 + len(x.value)
	}
	total := PreludeLen + headersLen + len(payload) + crcLen
	b := make([]byte, 0, total)
	b = binary.BigEndian.AppendUint32(b, uint32(total))
	b = binary.BigEndian.AppendUint32(b, uint32(headersLen))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	for _, x := range h {
		b = append(append(b, byte(len(x.name))), x.name...)
		b = binary.BigEndian.AppendUint16(append(b, typeString), uint16(len(x.value)))
		b = append(b, x.value...)
	}
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// header is a string header, as Encode writes it.
type header struct{ name, value string }
