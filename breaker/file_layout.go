package breaker

import (
	"errors"
	"fmt"
	"strings"
)

// MaxStoredSlow is the most slow-attempt times a shared store (File, and the
// Redis store) keeps for one breaker. A Slow.Count above it is treated as
// MaxStoredSlow by those stores.
const MaxStoredSlow = 16

// A state file is fileSize bytes of native-endian 64-bit words, written and
// read only with atomic operations through a shared memory map:
//
//	word 0   magic: "SLUICEB" and the layout version
//	word 1   seq: odd while a writer is writing (a sequence lock)
//	word 2   gen: a random number drawn when the file is (re)initialised
//	word 3   len: how many payload bytes are in use
//	word 4…  payload, at most payloadMax bytes
//
// A breaker's payload is recordWords words:
//
//	0        state | len(Slow)<<8 | len(Reason)<<16
//	1        Failures
//	2        Until
//	3        Probe
//	4        Changed
//	5        Transitions
//	6, 7     Reason, at most 16 bytes
//	8…23     Slow, at most MaxStoredSlow times
const (
	fileSize     = 256
	fileWords    = fileSize / 8
	wMagic       = 0
	wSeq         = 1
	wGen         = 2
	wLen         = 3
	headerWords  = 4
	payloadWords = fileWords - headerWords
	payloadMax   = payloadWords * 8

	fileMagic = 0x534C5549434542_01 // "SLUICEB", version 1

	recordWords = 8 + MaxStoredSlow
	recordLen   = recordWords * 8
	maxReason   = 16
)

// payload is a copy of a state file's payload words.
type payload struct {
	n int // bytes in use
	w [payloadWords]uint64
}

// knownReasons are returned without allocating when decoded.
var knownReasons = [...]string{"failures", "slow", "probe_failed", "manual"}

// encodeRecord writes r into p. Reasons longer than 16 bytes are cut and
// Slow keeps its newest MaxStoredSlow times.
func encodeRecord(p *payload, r Record) {
	slow := r.Slow
	if len(slow) > MaxStoredSlow {
		slow = slow[len(slow)-MaxStoredSlow:]
	}
	reason := r.Reason
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	*p = payload{n: recordLen}
	p.w[0] = uint64(r.State) | uint64(len(slow))<<8 | uint64(len(reason))<<16
	p.w[1] = uint64(int64(r.Failures))
	p.w[2] = uint64(r.Until)
	p.w[3] = r.Probe
	p.w[4] = uint64(r.Changed)
	p.w[5] = r.Transitions
	var rb [maxReason]byte
	copy(rb[:], reason)
	p.w[6], p.w[7] = le64(rb[:8]), le64(rb[8:])
	for i, t := range slow {
		p.w[8+i] = uint64(t)
	}
}

// decodeRecord reads a record from p; ok is false when p does not hold a
// well-formed one.
func decodeRecord(p *payload) (r Record, ok bool) {
	h := p.w[0]
	state, nslow, nreason := State(h&0xff), int(h>>8&0xff), int(h>>16&0xff)
	failures := int64(p.w[1])
	if p.n != recordLen || h>>24 != 0 || state > HalfOpen || nslow > MaxStoredSlow ||
		nreason > maxReason || failures < 0 {
		return Record{}, false
	}
	r = Record{
		State: state, Failures: int(failures), Until: int64(p.w[2]), Probe: p.w[3],
		Changed: int64(p.w[4]), Transitions: p.w[5],
	}
	if nreason > 0 {
		var rb [maxReason]byte
		putLE64(rb[:8], p.w[6])
		putLE64(rb[8:], p.w[7])
		r.Reason = reasonString(rb[:nreason])
	}
	if nslow > 0 {
		r.Slow = make([]int64, nslow)
		for i := range r.Slow {
			r.Slow[i] = int64(p.w[8+i])
		}
	}
	return r, true
}

func reasonString(b []byte) string {
	for _, k := range knownReasons {
		if string(b) == k {
			return k
		}
	}
	return string(b)
}

// setBytes stores b as p's payload.
func (p *payload) setBytes(b []byte) {
	*p = payload{n: len(b)}
	for i := 0; i < len(b); i += 8 {
		var w [8]byte
		copy(w[:], b[i:])
		p.w[i/8] = le64(w[:])
	}
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

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func putLE64(b []byte, v uint64) {
	_ = b[7]
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

// maxEscaped bounds an escaped name so that name, extension and the
// directory's own limits stay within common file-name limits (255 bytes).
const maxEscaped = 200

// escapeName turns a breaker name into a file-name stem: ASCII lowercase
// letters, digits, '-', '_' and '.' (not first) stand for themselves; every
// other byte, uppercase letters included (so names differing only in case
// stay apart on case-insensitive file systems), becomes %XX.
func escapeName(name string) (string, error) {
	if name == "" {
		return "", errors.New("breaker: empty breaker name: give every breaker a name")
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
		return "", fmt.Errorf("breaker: name %.40q… is too long for a state file (at most %d bytes once escaped): use a shorter name", name, maxEscaped)
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
