package sluice

import (
	"encoding/binary"
	"math"
	"slices"
	"time"
)

// Ledger keeps what has been spent under each budget key, and what is held
// for calls in flight, atomically across everything that shares it. Amounts
// are USD.
type Ledger interface {
	// Reserve holds amount under key unless spent plus held plus amount
	// would go over limit. Holds older than ttl (their holder died) are
	// reclaimed first. It returns the hold, what remains under the limit
	// afterwards, and whether the hold was taken.
	Reserve(key string, amount, limit float64, ttl time.Duration) (h Hold, remaining float64, ok bool, err error)

	// Settle replaces a hold under key by what the call really cost. A
	// cost of 0 releases the hold. A hold already reclaimed is settled all
	// the same: the money was spent.
	Settle(key string, h Hold, cost float64) error

	// Read returns what was spent and what is held under key.
	Read(key string) (spent, held float64, err error)
}

// Hold is an amount held for a call in flight, as Reserve returned it.
type Hold struct {
	// NanoUSD is the amount held, in billionths of a dollar: sums of
	// amounts are exact, so ten holds of $0.10 make exactly $1.00.
	NanoUSD int64
	// Until is when the hold is reclaimed if it is never settled, in the
	// ledger's clock (Unix nanoseconds).
	Until int64
}

// Transformer is the atomic read-modify-write of a small record that the
// breaker stores provide (breaker.Memory, breaker.File).
type Transformer interface {
	Transform(name string, fn func(old []byte) ([]byte, error)) error
}

// NewLedger returns a Ledger that keeps one small record per key in t.
func NewLedger(t Transformer) Ledger { return &recordLedger{t: t, now: time.Now} }

type recordLedger struct {
	t   Transformer
	now func() time.Time
}

// ledgerRecord is one key's record: what was spent, and the holds grouped
// by when they are reclaimed. Holds are grouped so the record stays small
// whatever the number of calls in flight: at most maxBuckets groups, each
// reclaimed at its latest hold's time, so that a hold is never reclaimed
// early.
type ledgerRecord struct {
	spent   int64
	buckets []bucket // by until, ascending
}

type bucket struct{ until, held int64 }

// maxBuckets keeps a record within the 224 bytes a state file holds:
// 8 + 12 × 16 = 200.
const maxBuckets = 12

func nanoUSD(usd float64) int64 { return int64(math.Round(usd * 1e9)) }
func usd(n int64) float64       { return float64(n) / 1e9 }

// decodeRecord reads a record; a damaged one is started afresh.
func decodeRecord(b []byte) ledgerRecord {
	var r ledgerRecord
	if len(b) < 8 || (len(b)-8)%16 != 0 {
		return r
	}
	r.spent = int64(binary.LittleEndian.Uint64(b))
	for i := 8; i < len(b); i += 16 {
		r.buckets = append(r.buckets, bucket{
			until: int64(binary.LittleEndian.Uint64(b[i:])),
			held:  int64(binary.LittleEndian.Uint64(b[i+8:])),
		})
	}
	return r
}

func (r *ledgerRecord) encode() []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, 8+16*len(r.buckets)), uint64(r.spent))
	for _, k := range r.buckets {
		b = binary.LittleEndian.AppendUint64(b, uint64(k.until))
		b = binary.LittleEndian.AppendUint64(b, uint64(k.held))
	}
	return b
}

func (r *ledgerRecord) held() int64 {
	var h int64
	for _, k := range r.buckets {
		h += k.held
	}
	return h
}

// reclaim drops the holds whose holders died.
func (r *ledgerRecord) reclaim(now int64) {
	r.buckets = slices.DeleteFunc(r.buckets, func(k bucket) bool { return k.until <= now || k.held <= 0 })
}

// add holds amount until a time, merging groups past maxBuckets: the two
// closest in time become one, reclaimed at the later time.
func (r *ledgerRecord) add(until, amount int64) {
	i, found := slices.BinarySearchFunc(r.buckets, until, func(k bucket, t int64) int { return cmpInt(k.until, t) })
	if found {
		r.buckets[i].held += amount
		return
	}
	r.buckets = slices.Insert(r.buckets, i, bucket{until, amount})
	if len(r.buckets) > maxBuckets {
		j := 0
		for k := 1; k+1 < len(r.buckets); k++ {
			if r.buckets[k+1].until-r.buckets[k].until < r.buckets[j+1].until-r.buckets[j].until {
				j = k
			}
		}
		r.buckets[j+1].held += r.buckets[j].held
		r.buckets = slices.Delete(r.buckets, j, j+1)
	}
}

// remove takes a settled hold out of its group, or out of the later groups
// it was merged into; what is no longer there was reclaimed.
func (r *ledgerRecord) remove(h Hold) {
	left := h.NanoUSD
	for i := range r.buckets {
		if left == 0 {
			break
		}
		if r.buckets[i].until >= h.Until {
			take := min(left, r.buckets[i].held)
			r.buckets[i].held -= take
			left -= take
		}
	}
	r.buckets = slices.DeleteFunc(r.buckets, func(k bucket) bool { return k.held <= 0 })
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (l *recordLedger) Reserve(key string, amount, limit float64, ttl time.Duration) (Hold, float64, bool, error) {
	var h Hold
	var remaining int64
	var ok bool
	err := l.t.Transform(key, func(old []byte) ([]byte, error) {
		r := decodeRecord(old)
		now := l.now().UnixNano()
		r.reclaim(now)
		lim := nanoUSD(limit)
		h = Hold{NanoUSD: nanoUSD(amount), Until: now + int64(ttl)}
		used := r.spent + r.held()
		if ok = used+h.NanoUSD <= lim; ok {
			r.add(h.Until, h.NanoUSD)
			used += h.NanoUSD
		}
		remaining = lim - used
		return r.encode(), nil
	})
	return h, usd(remaining), ok, err
}

func (l *recordLedger) Settle(key string, h Hold, cost float64) error {
	return l.t.Transform(key, func(old []byte) ([]byte, error) {
		r := decodeRecord(old)
		r.remove(h)
		r.spent += nanoUSD(cost)
		r.reclaim(l.now().UnixNano())
		return r.encode(), nil
	})
}

func (l *recordLedger) Read(key string) (spent, held float64, err error) {
	err = l.t.Transform(key, func(old []byte) ([]byte, error) {
		r := decodeRecord(old)
		r.reclaim(l.now().UnixNano())
		spent, held = usd(r.spent), usd(r.held())
		return old, nil
	})
	return spent, held, err
}
