package spend

import (
	"encoding/binary"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/state"
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
	// Ends is when the period the hold counts against ends, in the
	// ledger's clock (Unix nanoseconds); 0 if the ledger was not told.
	Ends int64

	group int           // a file ledger's group of holds the hold joined, plus one; 0 for other ledgers
	gen   int64         // that group's generation when it joined
	rec   *state.Record // and the key's record there, nil for other ledgers
}

// PeriodLedger is a Ledger told when the period a key counts ends, so that
// it can forget the key's record once that period is over. A Meter uses it
// when its Ledger has it; NewLedger's and NewFileLedger's ledgers do.
type PeriodLedger interface {
	Ledger
	// ReserveUntil is Reserve for a key that counts a period ending at
	// ends: once ends has passed and no hold is left under key, its record
	// is removed.
	ReserveUntil(key string, amount, limit float64, ttl time.Duration, ends time.Time) (h Hold, remaining float64, ok bool, err error)
}

// reserveIn reserves under key in l, telling it when the key's period ends
// if it can use that.
func reserveIn(l Ledger, key string, amount, limit float64, ttl time.Duration, ends time.Time) (Hold, float64, bool, error) {
	if pl, ok := l.(PeriodLedger); ok {
		return pl.ReserveUntil(key, amount, limit, ttl, ends)
	}
	return l.Reserve(key, amount, limit, ttl)
}

// Transformer is the atomic read-modify-write of a small record that the
// state stores provide (state.Memory, state.File).
type Transformer interface {
	Transform(name string, fn func(old []byte) ([]byte, error)) error
}

// RecordSweeper is a Transformer that can also remove, in one pass, the
// records their owner no longer needs (state.Memory and state.File
// have it).
type RecordSweeper interface {
	// RemoveRecords removes every record for which drop, shown its name and
	// bytes under its lock, returns true, and says how many it removed.
	RemoveRecords(drop func(name string, rec []byte) bool) (removed int, err error)
}

// NewLedger returns a Ledger, a PeriodLedger, that keeps one small record
// per key in t. A record with nothing spent and nothing held is removed,
// and so is one whose period (see PeriodLedger) is over once no hold is
// left: by the call that leaves it so, or, if t is a RecordSweeper, by a
// sweep of t that the ledger starts, in the background, at most every ten
// minutes (the first at its first reservation).
func NewLedger(t Transformer) Ledger { return &recordLedger{t: t, now: time.Now} }

// ledgerSweepEvery is how often a ledger sweeps its RecordSweeper.
const ledgerSweepEvery = 10 * time.Minute

type recordLedger struct {
	t         Transformer
	now       func() time.Time
	nextSweep atomic.Int64 // in the ledger's clock, Unix nanoseconds
	sweeping  atomic.Bool
	sweeps    sync.WaitGroup
}

// ledgerRecord is one key's record: what was spent, when its period ends
// (0 if unknown), and the holds grouped by when they are reclaimed. Holds are grouped so the record stays small
// whatever the number of calls in flight: at most maxBuckets groups, each
// reclaimed at its latest hold's time, so that a hold is never reclaimed
// early.
type ledgerRecord struct {
	spent   int64
	ends    int64
	buckets []bucket // by until, ascending
}

type bucket struct{ until, held int64 }

// maxBuckets keeps a record within the 224 bytes a state file holds:
// 16 + 12 × 16 = 208.
const maxBuckets = 12

func nanoUSD(usd float64) int64 { return int64(math.Round(usd * 1e9)) }
func usd(n int64) float64       { return float64(n) / 1e9 }

// decodeRecord reads a record; a damaged one is started afresh. A record
// is spent, then (if its period's end is known, which makes its length a
// multiple of 16) ends, then the groups of holds, 16 bytes each, every
// number little-endian.
func decodeRecord(b []byte) ledgerRecord {
	var r ledgerRecord
	if len(b) < 8 || len(b)%8 != 0 {
		return r
	}
	r.spent = int64(binary.LittleEndian.Uint64(b))
	i := 8
	if len(b)%16 == 0 {
		r.ends = int64(binary.LittleEndian.Uint64(b[8:]))
		i = 16
	}
	for ; i < len(b); i += 16 {
		r.buckets = append(r.buckets, bucket{
			until: int64(binary.LittleEndian.Uint64(b[i:])),
			held:  int64(binary.LittleEndian.Uint64(b[i+8:])),
		})
	}
	return r
}

// encode returns the record's bytes, or nil when it is not worth keeping
// at now: nothing held, and nothing spent or its period over.
func (r *ledgerRecord) encode(now int64) []byte {
	if r.done(now) {
		return nil
	}
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, 16+16*len(r.buckets)), uint64(r.spent))
	if r.ends != 0 {
		b = binary.LittleEndian.AppendUint64(b, uint64(r.ends))
	}
	for _, k := range r.buckets {
		b = binary.LittleEndian.AppendUint64(b, uint64(k.until))
		b = binary.LittleEndian.AppendUint64(b, uint64(k.held))
	}
	return b
}

// done reports whether the record holds nothing worth keeping at now: no
// hold, and nothing spent or its period over.
func (r *ledgerRecord) done(now int64) bool {
	return len(r.buckets) == 0 && (r.spent == 0 || r.ends != 0 && now >= r.ends)
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

// Reserve holds amount under key; see Ledger.
func (l *recordLedger) Reserve(key string, amount, limit float64, ttl time.Duration) (Hold, float64, bool, error) {
	return l.ReserveUntil(key, amount, limit, ttl, time.Time{})
}

// ReserveUntil holds amount under key, whose period ends at ends; see
// PeriodLedger.
func (l *recordLedger) ReserveUntil(key string, amount, limit float64, ttl time.Duration, ends time.Time) (Hold, float64, bool, error) {
	var h Hold
	var remaining int64
	var ok bool
	var end int64
	if !ends.IsZero() {
		end = ends.UnixNano()
	}
	now := l.now().UnixNano()
	err := l.t.Transform(key, func(old []byte) ([]byte, error) {
		r := decodeRecord(old)
		r.ends = max(r.ends, end)
		r.reclaim(now)
		lim := nanoUSD(limit)
		h = Hold{NanoUSD: nanoUSD(amount), Until: now + int64(ttl), Ends: r.ends}
		used := r.spent + r.held()
		if ok = used+h.NanoUSD <= lim; ok {
			r.add(h.Until, h.NanoUSD)
			used += h.NanoUSD
		}
		remaining = lim - used
		return r.encode(now), nil
	})
	l.maybeSweep(now)
	return h, usd(remaining), ok, err
}

// Settle replaces a hold by what the call cost; see Ledger.
func (l *recordLedger) Settle(key string, h Hold, cost float64) error {
	return l.t.Transform(key, func(old []byte) ([]byte, error) {
		r := decodeRecord(old)
		if r.ends == 0 {
			r.ends = h.Ends
		}
		r.remove(h)
		r.spent += nanoUSD(cost)
		now := l.now().UnixNano()
		r.reclaim(now)
		return r.encode(now), nil
	})
}

// Read returns what was spent and what is held under key; see Ledger.
func (l *recordLedger) Read(key string) (spent, held float64, err error) {
	err = l.t.Transform(key, func(old []byte) ([]byte, error) {
		r := decodeRecord(old)
		now := l.now().UnixNano()
		r.reclaim(now)
		if r.done(now) {
			spent, held = usd(r.spent), 0
			return nil, nil
		}
		spent, held = usd(r.spent), usd(r.held())
		return old, nil
	})
	return spent, held, err
}

// maybeSweep starts a sweep of the store's ended records, in the
// background, if one is due and none is running.
func (l *recordLedger) maybeSweep(now int64) {
	sw, ok := l.t.(RecordSweeper)
	if !ok || now < l.nextSweep.Load() || !l.sweeping.CompareAndSwap(false, true) {
		return
	}
	l.nextSweep.Store(now + int64(ledgerSweepEvery))
	l.sweeps.Go(func() {
		defer l.sweeping.Store(false)
		sw.RemoveRecords(func(_ string, rec []byte) bool {
			r := decodeRecord(rec)
			r.reclaim(now) // the time of the call that started the sweep
			return r.done(now)
		})
	})
}
