package awsevent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"reflect"
	"testing"
	"testing/iotest"
)

var frames = []Frame{
	{Type: Event, Name: "messageStart", Payload: []byte(`{"role":"assistant"}`)},
	{Type: Event, Name: "contentBlockDelta", Payload: []byte(`{"contentBlockIndex":0,"delta":{"text":"Hi"}}`)},
	{Type: Exception, Name: "throttlingException", Payload: []byte(`{"message":"Too many requests"}`)},
	{Type: Error, Name: "InternalFailure", Payload: []byte("boom")},
}

func stream(fs ...Frame) []byte {
	var b []byte
	for _, f := range fs {
		b = append(b, f.Encode()...)
	}
	return b
}

// readAll reads frames until an error, which it returns.
func readAll(r io.Reader) ([]Frame, error) {
	fr := NewReader(r)
	var out []Frame
	for {
		f, err := fr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

// TestRoundTrip: every kind of frame reads back as it was written, the
// stream ending in io.EOF, one byte at a time too.
func TestRoundTrip(t *testing.T) {
	b := stream(frames...)
	for name, r := range map[string]io.Reader{
		"whole": bytes.NewReader(b), "bytewise": iotest.OneByteReader(bytes.NewReader(b)),
	} {
		got, err := readAll(r)
		if err != io.EOF || !reflect.DeepEqual(got, frames) {
			t.Errorf("%s: %+v, %v; want %+v and io.EOF", name, got, err, frames)
		}
	}
}

// TestCutInsideFrame: a stream that stops at any byte inside a frame ends
// in io.ErrUnexpectedEOF after the frames before it; one that stops between
// frames in io.EOF.
func TestCutInsideFrame(t *testing.T) {
	first := len(frames[0].Encode())
	b := stream(frames[:2]...)
	for n := 0; n <= len(b); n++ {
		got, err := readAll(bytes.NewReader(b[:n]))
		want, wantErr := 0, error(io.ErrUnexpectedEOF)
		switch {
		case n == 0:
			wantErr = io.EOF
		case n == first:
			want, wantErr = 1, io.EOF
		case n == len(b):
			want, wantErr = 2, io.EOF
		case n > first:
			want = 1
		}
		if len(got) != want || err != wantErr {
			t.Fatalf("cut at %d of %d: %d frames, %v; want %d and %v", n, len(b), len(got), err, want, wantErr)
		}
	}
}

// TestTransportCut: the transport's unexpected EOF at a frame boundary,
// as a chunked HTTP body cut between frames gives it, is a cut, not an
// end; another transport error comes back as it was.
func TestTransportCut(t *testing.T) {
	b := frames[0].Encode()
	got, err := readAll(io.MultiReader(bytes.NewReader(b), iotest.ErrReader(io.ErrUnexpectedEOF)))
	if len(got) != 1 || err != io.ErrUnexpectedEOF {
		t.Errorf("%d frames, %v; want 1 and io.ErrUnexpectedEOF", len(got), err)
	}
	reset := errors.New("connection reset by peer")
	if _, err := readAll(io.MultiReader(bytes.NewReader(b), iotest.ErrReader(reset))); err != reset {
		t.Errorf("%v; want the transport's error", err)
	}
}

// TestMalformed: a changed byte fails the checksum; a frame without
// :message-type is refused; both wrap ErrMalformed.
func TestMalformed(t *testing.T) {
	b := frames[1].Encode()
	b[len(b)-6] ^= 0xff
	if _, err := NewReader(bytes.NewReader(b)).Next(); !errors.Is(err, ErrMalformed) {
		t.Errorf("a changed byte: %v; want ErrMalformed", err)
	}
	b = Frame{Type: "", Name: "x"}.Encode()
	if _, err := NewReader(bytes.NewReader(b)).Next(); !errors.Is(err, ErrMalformed) {
		t.Errorf("no :message-type: %v; want ErrMalformed", err)
	}
}

// FuzzNext: any bytes give frames and then an error, never a panic, and a
// frame read is one of the three kinds.
func FuzzNext(f *testing.F) {
	f.Add(stream(frames...))
	f.Add(frames[0].Encode()[:7])
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := readAll(bytes.NewReader(b))
		if err == nil {
			t.Fatal("no error at the end")
		}
		for _, fr := range got {
			if fr.Type != Event && fr.Type != Exception && fr.Type != Error {
				t.Errorf("frame of type %q", fr.Type)
			}
		}
	})
}

// TestLengthAndDecode: Length reads a frame's length from its prelude, and
// Decode gives back the frame.
func TestLengthAndDecode(t *testing.T) {
	for _, f := range frames {
		b := f.Encode()
		n, err := Length(b[:PreludeLen])
		if err != nil || n != len(b) {
			t.Fatalf("%s: Length = %d, %v; want %d", f.Name, n, err, len(b))
		}
		got, err := Decode(b)
		if err != nil || !reflect.DeepEqual(got, f) {
			t.Errorf("Decode = %+v, %v; want %+v", got, err, f)
		}
	}
}

// TestLengthRefuses: a prelude too short, with a changed byte, or whose
// lengths cannot hold is malformed; so is a frame with bytes past its end
// or a changed byte.
func TestLengthRefuses(t *testing.T) {
	good := frames[1].Encode()
	prelude := func(total, headers uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, total)
		b = binary.BigEndian.AppendUint32(b, headers)
		return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	}
	flipped := bytes.Clone(good)
	flipped[1] ^= 1
	for name, b := range map[string][]byte{
		"short":            good[:PreludeLen-1],
		"checksum":         flipped,
		"below the least":  prelude(15, 0),
		"headers too long": prelude(40, 30),
		"too long":         prelude(MaxLen+1, 0),
	} {
		if _, err := Length(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v; want ErrMalformed", name, err)
		}
	}
	if _, err := Length(prelude(MaxLen, 0)); err != nil {
		t.Errorf("the longest frame: %v", err)
	}
	changed := bytes.Clone(good)
	changed[len(changed)-6] ^= 0xff
	for name, b := range map[string][]byte{"trailing": append(bytes.Clone(good), 0), "changed": changed} {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v; want ErrMalformed", name, err)
		}
	}
}

// FuzzDecode: any bytes give a frame or an error wrapping ErrMalformed,
// never a panic, whatever Length said.
func FuzzDecode(f *testing.F) {
	f.Add(stream(frames...))
	f.Add(frames[2].Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := Length(b); err == nil && n <= len(b) {
			b = b[:n]
		}
		fr, err := Decode(b)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("error %v does not wrap ErrMalformed", err)
		}
		if err == nil && fr.Type != Event && fr.Type != Exception && fr.Type != Error {
			t.Errorf("frame of type %q", fr.Type)
		}
	})
}
