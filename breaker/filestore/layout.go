package filestore

import (
	"encoding/binary"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/state"
)

// A breaker's record is recordWords 64-bit words, kept in a state file's
// record bytes little-endian (so that on the common little-endian machine
// the file holds them as they are):
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
	payloadWords = state.MaxRecord / 8

	recordWords = 8 + breaker.MaxStoredSlow
	recordLen   = recordWords * 8
	maxReason   = 16
)

// payload is a record's words, as many bytes of them in use as n says.
type payload struct {
	n int // bytes in use
	w [payloadWords]uint64
}

// knownReasons are returned without allocating when decoded.
var knownReasons = [...]string{"failures", "slow", "probe_failed", "manual"}

// encode returns r's bytes.
func encode(r breaker.Record) []byte { return encodeTo(nil, r) }

// encodeTo appends the bytes of v, a breaker.Record, to dst. It is the
// Encode of the breakers' kind.
func encodeTo(dst []byte, v any) []byte {
	var p payload
	encodeRecord(&p, v.(breaker.Record))
	for i := 0; i < p.n; i += 8 {
		dst = binary.LittleEndian.AppendUint64(dst, p.w[i/8])
	}
	return dst
}

// decode returns the record b holds, as a breaker.Record; ok is false when
// b does not hold a well-formed one. It is the Decode of the breakers'
// kind.
func decode(b []byte) (v any, ok bool) {
	r, ok := decodeBytes(b)
	return r, ok
}

// decodeBytes returns the record b holds; ok is false when b does not hold
// a well-formed one.
func decodeBytes(b []byte) (breaker.Record, bool) {
	if len(b) != recordLen {
		return breaker.Record{}, false
	}
	p := payload{n: recordLen}
	for i := range recordWords {
		p.w[i] = binary.LittleEndian.Uint64(b[i*8:])
	}
	return decodeRecord(&p)
}

// encodeRecord writes r into p. Reasons longer than 16 bytes are cut and
// Slow keeps its newest MaxStoredSlow times.
func encodeRecord(p *payload, r breaker.Record) {
	slow := r.Slow
	if len(slow) > breaker.MaxStoredSlow {
		slow = slow[len(slow)-breaker.MaxStoredSlow:]
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
	p.w[6], p.w[7] = binary.LittleEndian.Uint64(rb[:8]), binary.LittleEndian.Uint64(rb[8:])
	for i, t := range slow {
		p.w[8+i] = uint64(t)
	}
}

// decodeRecord reads a record from p; ok is false when p does not hold a
// well-formed one.
func decodeRecord(p *payload) (r breaker.Record, ok bool) {
	h := p.w[0]
	st, nslow, nreason := breaker.State(h&0xff), int(h>>8&0xff), int(h>>16&0xff)
	failures := int64(p.w[1])
	if p.n != recordLen || h>>24 != 0 || st > breaker.HalfOpen || nslow > breaker.MaxStoredSlow ||
		nreason > maxReason || failures < 0 {
		return breaker.Record{}, false
	}
	r = breaker.Record{
		State: st, Failures: int(failures), Until: int64(p.w[2]), Probe: p.w[3],
		Changed: int64(p.w[4]), Transitions: p.w[5],
	}
	if nreason > 0 {
		var rb [maxReason]byte
		binary.LittleEndian.PutUint64(rb[:8], p.w[6])
		binary.LittleEndian.PutUint64(rb[8:], p.w[7])
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
