package awsevent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// The package reads and writes frames with the standard library; these
// tests prove it against aws-sdk-go-v2's eventstream codec, the
// reference, over the frames Bedrock sends and over any bytes.

// sdkDecode decodes b, one whole frame, with the SDK's decoder, as
// Decode did before it was written with the standard library.
func sdkDecode(b []byte) (Frame, error) {
	r := bytes.NewReader(b)
	m, err := eventstream.NewDecoder().Decode(r, nil)
	if err == nil && r.Len() != 0 {
		err = fmt.Errorf("%d bytes past the frame", r.Len())
	}
	if err != nil {
		return Frame{}, err
	}
	header := func(name string) string {
		if v := m.Headers.Get(name); v != nil {
			return v.String()
		}
		return ""
	}
	f := Frame{Type: header(":message-type"), Payload: m.Payload}
	switch f.Type {
	case Event:
		f.Name = header(":event-type")
	case Exception:
		f.Name = header(":exception-type")
	case Error:
		f.Name, f.Payload = header(":error-code"), []byte(header(":error-message"))
	default:
		return Frame{}, errors.New("no :message-type")
	}
	return f, nil
}

// sdkEncode encodes f with the SDK's encoder, as Encode did before.
func sdkEncode(f Frame) []byte {
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
	_ = eventstream.NewEncoder().Encode(&b, m)
	return b.Bytes()
}

// sdkMessage encodes m with the SDK's encoder.
func sdkMessage(t testing.TB, m eventstream.Message) []byte {
	var b bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sameAsSDK fails t unless Decode and the SDK read b alike: the same
// frame, or both an error.
func sameAsSDK(t *testing.T, b []byte) {
	t.Helper()
	got, err := Decode(b)
	want, wantErr := sdkDecode(b)
	if err != nil && !errors.Is(err, ErrMalformed) {
		t.Errorf("error %v does not wrap ErrMalformed", err)
	}
	if (err != nil) != (wantErr != nil) || err == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("Decode(%x) = %+v, %v; the SDK reads %+v, %v", b, got, err, want, wantErr)
	}
}

// odd are frames Bedrock does not send, whose headers hold every value
// type, a name twice, a name the frame does not use, or none.
func odd(t testing.TB) [][]byte {
	values := []eventstream.Value{
		eventstream.BoolValue(true), eventstream.BoolValue(false), eventstream.Int8Value(-3),
		eventstream.Int16Value(-300), eventstream.Int32Value(70000), eventstream.Int64Value(-1 << 40),
		eventstream.BytesValue("raw\x00bytes"), eventstream.StringValue("chunk"),
		eventstream.TimestampValue(time.UnixMilli(1700000000123)), eventstream.UUIDValue{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
	}
	var out [][]byte
	for _, v := range values {
		for _, typ := range []string{Event, Exception, Error} {
			var m eventstream.Message
			m.Headers = append(m.Headers,
				eventstream.Header{Name: ":message-type", Value: eventstream.StringValue(typ)},
				eventstream.Header{Name: ":event-type", Value: v}, eventstream.Header{Name: ":exception-type", Value: v},
				eventstream.Header{Name: ":error-code", Value: v}, eventstream.Header{Name: ":error-message", Value: v},
				eventstream.Header{Name: "x-other", Value: v})
			m.Payload = []byte(`{"a":1}`)
			out = append(out, sdkMessage(t, m))
		}
		var m eventstream.Message // :message-type of another type
		m.Headers = append(m.Headers, eventstream.Header{Name: ":message-type", Value: v})
		out = append(out, sdkMessage(t, m))
	}
	var twice eventstream.Message // the last of a name given twice counts
	twice.Headers = append(twice.Headers,
		eventstream.Header{Name: ":message-type", Value: eventstream.StringValue(Exception)},
		eventstream.Header{Name: ":event-type", Value: eventstream.StringValue("a")},
		eventstream.Header{Name: ":message-type", Value: eventstream.StringValue(Event)})
	out = append(out, sdkMessage(t, twice), sdkMessage(t, eventstream.Message{Payload: []byte("x")}))
	return out
}

// TestDecodeAsSDK: every frame, odd ones too, reads as the SDK reads it.
func TestDecodeAsSDK(t *testing.T) {
	for _, f := range frames {
		sameAsSDK(t, f.Encode())
		sameAsSDK(t, sdkEncode(f))
	}
	for _, b := range odd(t) {
		sameAsSDK(t, b)
	}
}

// TestEncodeAsSDK: Encode writes the bytes the SDK writes, for every kind
// of frame, an empty payload, and a header value too long for the
// protocol (nothing).
func TestEncodeAsSDK(t *testing.T) {
	long := strings.Repeat("m", maxValueLen+1)
	cases := append(frames[:len(frames):len(frames)],
		Frame{Type: Event, Name: "messageStop"},
		Frame{Type: Error, Name: "InternalFailure"},
		Frame{Type: Error, Name: "InternalFailure", Payload: []byte(long)},
		Frame{Type: Event, Name: long},
		Frame{Type: Event, Name: long[1:], Payload: []byte("{}")},
		Frame{Type: "", Name: "x"},
	)
	for _, f := range cases {
		if got, want := f.Encode(), sdkEncode(f); !bytes.Equal(got, want) {
			t.Errorf("Encode(%.40s…) = %.60x…, want %.60x… (%d, %d bytes)", fmt.Sprint(f), got, want, len(got), len(want))
		}
	}
}

// FuzzDecodeAsSDK: any bytes, cut to the length their prelude gives, read
// as the SDK reads them.
func FuzzDecodeAsSDK(f *testing.F) {
	for _, fr := range frames {
		f.Add(fr.Encode())
	}
	for _, b := range odd(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := Length(b); err == nil && n <= len(b) {
			b = b[:n]
		}
		sameAsSDK(t, b)
	})
}

// seal returns a frame of the given headers' bytes and payload, its
// lengths and checksums right, whatever the headers hold.
func seal(headers, payload []byte) []byte {
	total := PreludeLen + len(headers) + len(payload) + crcLen
	b := binary.BigEndian.AppendUint32(nil, uint32(total))
	b = binary.BigEndian.AppendUint32(b, uint32(len(headers)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	b = append(append(b, headers...), payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// FuzzHeadersAsSDK: any bytes of headers, in a frame whose checksums
// hold, read as the SDK reads them.
func FuzzHeadersAsSDK(f *testing.F) {
	for _, b := range append(odd(f), frames[0].Encode(), frames[3].Encode()) {
		n := binary.BigEndian.Uint32(b[4:])
		f.Add(b[PreludeLen:PreludeLen+n], b[PreludeLen+n:len(b)-crcLen])
	}
	f.Add([]byte{5}, []byte(nil))
	f.Add([]byte{0}, []byte("x"))
	f.Fuzz(func(t *testing.T, headers, payload []byte) {
		sameAsSDK(t, seal(headers, payload))
	})
}

// BenchmarkDecode: a ConverseStream delta frame, read by Decode and by the
// SDK's decoder.
func BenchmarkDecode(b *testing.B) {
	frame := frames[1].Encode()
	for name, decode := range map[string]func([]byte) (Frame, error){"std": Decode, "sdk": sdkDecode} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
