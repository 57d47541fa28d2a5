package awsevent

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// A frame's headers: each a name (its length in one byte), a value type
// (one byte) and a value — nothing for the two booleans, 1, 2, 4 or 8
// bytes for the integers and the timestamp (milliseconds since the
// epoch), 16 for a UUID, a 2-byte length and the bytes for a byte array
// and a string.

// The value types of a header.
const (
	typeTrue = iota
	typeFalse
	typeInt8
	typeInt16
	typeInt32
	typeInt64
	typeBytes
	typeString
	typeTimestamp
	typeUUID
)

// maxValueLen is the longest byte-array or string value a header holds.
const maxValueLen = 1<<15 - 1

// headers are the headers a Frame is read from, each the text of its
// value (of a non-string value, as aws-sdk-go-v2's Value.String gives
// it); "" when the frame has none. Of a name given twice, the last value
// counts.
type headers struct {
	messageType, eventType, exceptionType, errorCode, errorMessage string
}

// errShort is the error of a header that runs past the headers' end.
var errShort = errors.New("a header past the headers' end")

// readHeaders reads the headers b holds. A name's length that ends b,
// with nothing of the name after it, ends the headers, as aws-sdk-go-v2
// reads it.
func readHeaders(b []byte) (headers, error) {
	var h headers
	for len(b) > 0 {
		n := int(b[0])
		if len(b) == 1 && n > 0 {
			break
		}
		if len(b) < 1+n+1 {
			return headers{}, errShort
		}
		name, typ := b[1:1+n], b[1+n]
		size, err := valueLen(typ, b[2+n:])
		if err != nil {
			return headers{}, err
		}
		v := b[2+n : 2+n+size]
		b = b[2+n+size:]
		switch string(name) {
		case ":message-type":
			h.messageType = text(typ, v)
		case ":event-type":
			h.eventType = text(typ, v)
		case ":exception-type":
			h.exceptionType = text(typ, v)
		case ":error-code":
			h.errorCode = text(typ, v)
		case ":error-message":
			h.errorMessage = text(typ, v)
		}
	}
	return h, nil
}

// valueLen returns the length of the value of type typ at the start of
// b, its 2-byte length included; an error when b is too short for it or
// typ is no type.
func valueLen(typ byte, b []byte) (int, error) {
	var size int
	switch typ {
	case typeTrue, typeFalse:
	case typeInt8:
		size = 1
	case typeInt16:
		size = 2
	case typeInt32:
		size = 4
	case typeInt64, typeTimestamp:
		size = 8
	case typeUUID:
		size = 16
	case typeBytes, typeString:
		if len(b) < 2 {
			return 0, errShort
		}
		size = 2 + int(binary.BigEndian.Uint16(b))
	default:
		return 0, fmt.Errorf("a header of unknown value type %d", typ)
	}
	if len(b) < size {
		return 0, errShort
	}
	return size, nil
}

// text returns the text of v, a value of type typ (valueLen bytes long).
func text(typ byte, v []byte) string {
	switch typ {
	case typeTrue, typeFalse:
		return strconv.FormatBool(typ == typeTrue)
	case typeInt8:
		return fmt.Sprintf("0x%02x", int8(v[0]))
	case typeInt16:
		return fmt.Sprintf("0x%04x", int16(binary.BigEndian.Uint16(v)))
	case typeInt32:
		return fmt.Sprintf("0x%08x", int32(binary.BigEndian.Uint32(v)))
	case typeInt64:
		return fmt.Sprintf("0x%016x", int64(binary.BigEndian.Uint64(v)))
	case typeTimestamp:
		ms := int64(binary.BigEndian.Uint64(v))
		t := time.Unix(ms/1e3, ms%1e3*int64(time.Millisecond)).UTC()
		return strconv.FormatInt(t.UnixNano()/int64(time.Millisecond), 10)
	case typeUUID:
		x := hex.EncodeToString(v)
		return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
	case typeBytes:
		return base64.StdEncoding.EncodeToString(v[2:])
	}
	return string(v[2:])
}
