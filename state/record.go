package state

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Record is one record of a Counters kind, its name looked up once: Load,
// Add and CompareAndSwap on a Record do what the Counters methods of the
// same names do on its name, without looking the name up again. A Record
// stays right for as long as it is kept, across removals and re-creations
// of its file, by this process or others. It is safe for concurrent use.
type Record struct {
	c    *Counters
	name string
	s    atomic.Pointer[slot]
}

// Record returns the record called name, which need not exist yet.
func (c *Counters) Record(name string) (*Record, error) {
	s, err := c.k.f.slot(c.k, name)
	if err != nil {
		return nil, err
	}
	r := &Record{c: c, name: name}
	r.s.Store(s)
	return r, nil
}

// Name returns the record's name.
func (r *Record) Name() string { return r.name }

// slot returns the record's slot in the table, looking the name up again
// only when the slot it had was dropped from it.
func (r *Record) slot() (*slot, error) {
	f := r.c.k.f
	if f.closed.Load() {
		return nil, ErrClosed
	}
	s := r.s.Load()
	if !s.gone.Load() {
		return s, nil
	}
	s, err := f.slot(r.c.k, r.name)
	if err != nil {
		return nil, err
	}
	r.s.Store(s)
	return s, nil
}

func (r *Record) apply(i int, create bool, op func(old int64) (int64, bool, error)) (old, now int64, err error) {
	if i < 0 || i >= NumCounters {
		return 0, 0, fmt.Errorf("state: counter %d of %q: a record has counters 0 to %d", i, r.name, NumCounters-1)
	}
	s, err := r.slot()
	if err != nil {
		return 0, 0, err
	}
	return r.c.applySlot(s, i, create, op)
}

// Load returns counter i of the record, 0 if it has no file; see
// Counters.Load.
func (r *Record) Load(i int) (int64, error) {
	v, _, err := r.apply(i, false, loadOp)
	return v, err
}

// Add adds delta to counter i of the record, creating it if needed; see
// Counters.Add.
func (r *Record) Add(i int, delta int64) (int64, error) {
	_, v, err := r.apply(i, true, addOp(delta))
	return v, err
}

// CompareAndSwap sets counter i of the record to new if it holds old; see
// Counters.CompareAndSwap.
func (r *Record) CompareAndSwap(i int, old, new int64) (bool, error) {
	if new < 0 {
		return false, ErrCountRange
	}
	swapped := false
	_, _, err := r.apply(i, true, func(cur int64) (int64, bool, error) {
		swapped = cur == old
		return new, swapped, nil
	})
	return swapped, err
}

// Counts appends the record's counters to dst, in order, and returns it:
// what Load returns for each, read in one pass (all zeros for a record
// with no file). They are not read at one instant: a counter that changes
// meanwhile may be read before or after the change.
func (r *Record) Counts(dst []int64) ([]int64, error) {
	s, err := r.slot()
	if err != nil {
		return dst, err
	}
	f := r.c.k.f
	s.touch()
	if out, ok := f.loadAllFast(s, dst); ok {
		return out, nil
	}
	for i := range NumCounters {
		v, _, err := f.applySlow(s, i, false, loadOp)
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// loadOp is the op of a Load: it shows the counter and stores nothing.
func loadOp(old int64) (int64, bool, error) { return old, false, nil }

// addOp is the op of an Add of delta.
func addOp(delta int64) func(int64) (int64, bool, error) {
	return func(old int64) (int64, bool, error) {
		n := old + delta
		if (delta > 0 && n < old) || n < 0 {
			return old, false, ErrCountRange
		}
		return n, true, nil
	}
}

// RecordCache keeps the Records of the names in use of one Counters kind,
// so that each name is looked up once: up to a bound, past which it
// forgets them all and fills again with the names in use. It is safe for
// concurrent use.
type RecordCache struct {
	c   *Counters
	max int64
	m   sync.Map // name → *Record
	n   atomic.Int64
}

// Cache returns a RecordCache of c's records that keeps up to size of them
// (at least 1).
func (c *Counters) Cache(size int) *RecordCache {
	return &RecordCache{c: c, max: int64(max(size, 1))}
}

// Record returns the Record of name: c.Record(name), looked up once while
// the cache keeps it.
func (rc *RecordCache) Record(name string) (*Record, error) {
	if r, ok := rc.m.Load(name); ok {
		return r.(*Record), nil
	}
	r, err := rc.c.Record(name)
	if err != nil {
		return nil, err
	}
	if rc.n.Add(1) > rc.max {
		rc.m.Clear()
		rc.n.Store(1)
	}
	v, _ := rc.m.LoadOrStore(name, r)
	return v.(*Record), nil
}

// Len returns how many names the cache keeps now.
func (rc *RecordCache) Len() int {
	n := 0
	rc.m.Range(func(any, any) bool { n++; return true })
	return n
}
