package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// FileSize is the size in bytes of every state file.
const FileSize = 256

// MaxRecord is the most bytes one record holds.
const MaxRecord = FileSize - 32

// A state file is fileSize bytes of native-endian 64-bit words, written and
// read only with atomic operations through a shared memory map:
//
//	word 0   magic: "SLUICEB" and the layout version
//	word 1   seq: odd while a writer is writing (a sequence lock)
//	word 2   gen: a random number drawn when the file is (re)initialised
//	word 3   len: how many payload bytes are in use
//	word 4…  payload, at most payloadMax bytes
//
// A record's bytes are kept in the payload words little-endian first, so
// that a record of n bytes takes (n+7)/8 words.
const (
	fileSize     = FileSize
	fileWords    = fileSize / 8
	wMagic       = 0
	wSeq         = 1
	wGen         = 2
	wLen         = 3
	headerWords  = 4
	payloadWords = fileWords - headerWords
	payloadMax   = MaxRecord

	fileMagic = 0x534C5549434542_01 // "SLUICEB", version 1
)

// payload is a copy of a state file's payload words.
type payload struct {
	n int // bytes in use
	w [payloadWords]uint64
}

// setBytes stores b as p's payload.
func (p *payload) setBytes(b []byte) {
	p.n = len(b)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		p.w[i/8] = le64(b[i:])
	}
	if i < len(b) {
		var w [8]byte
		copy(w[:], b[i:])
		p.w[i/8] = le64(w[:])
		i += 8
	}
	clear(p.w[i/8:])
}

// scratch holds the bytes of a payload while a Decode reads them.
var scratch = sync.Pool{New: func() any { return new([payloadMax]byte) }}

// decodeWith calls decode with p's bytes, in a buffer reused afterwards.
func decodeWith(decode func([]byte) (any, bool), p *payload) (any, bool) {
	buf := scratch.Get().(*[payloadMax]byte)
	defer scratch.Put(buf)
	for i := 0; i < p.n; i += 8 {
		putLE64(buf[i:], p.w[i/8])
	}
	return decode(buf[:p.n])
}

// holds reports whether p's payload is b.
func (p *payload) holds(b []byte) bool {
	var q payload
	q.setBytes(b)
	return q == *p
}

// bytes returns a copy of p's payload bytes, nil if there are none.
func (p *payload) bytes() []byte {
	if p.n == 0 {
		return nil
	}
	out := make([]byte, (p.n+7)/8*8)
	for i := 0; i < len(out); i += 8 {
		putLE64(out[i:], p.w[i/8])
	}
	return out[:p.n]
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func putLE64(b []byte, v uint64) { binary.LittleEndian.PutUint64(b, v) }

// maxEscaped bounds an escaped name so that name, extension and the
// directory's own limits stay within common file-name limits (255 bytes).
const maxEscaped = 200

// escapeName turns a record name into a file-name stem: ASCII lowercase
// letters, digits, '-', '_' and '.' (not first) stand for themselves; every
// other byte, uppercase letters included (so names differing only in case
// stay apart on case-insensitive file systems), becomes %XX.
func escapeName(name string) (string, error) {
	if name == "" {
		return "", errors.New("state: empty record name: give every record a name")
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if plainByte(c) && (c != '.' || i > 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	if b.Len() > maxEscaped {
		return "", fmt.Errorf("state: name %.40q… is too long for a state file (at most %d bytes once escaped): use a shorter name", name, maxEscaped)
	}
	return b.String(), nil
}

func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// unescapeName reverses escapeName; ok is false for a stem escapeName
// would not have produced.
func unescapeName(stem string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(stem) {
			return "", false
		}
		hi, ok1 := unhex(stem[i+1])
		lo, ok2 := unhex(stem[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	name := b.String()
	if again, err := escapeName(name); err != nil || again != stem {
		return "", false
	}
	return name, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
