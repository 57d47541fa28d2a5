package state

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"
)

// NumCounters is how many counters one record of a Counters kind holds.
const NumCounters = MaxRecord / 8

// sealed marks a counter word that maintenance holds: no lock-free change
// may land on it.
const sealed = 1 << 63

// MaxCount is the largest value a counter holds.
const MaxCount = 1<<63 - 1

// ErrCountRange is the error of an Add or CompareAndSwap that would take a
// counter below zero or above MaxCount; the counter is left as it was.
var ErrCountRange = errors.New("state: counter out of range")

// Counters is a kind of record made of NumCounters counters, each a value
// from 0 to MaxCount, that every process of the host changes with atomic
// operations on the record's shared mapping: Add and CompareAndSwap take no
// file lock, make no system call and write nothing but the counter, once
// the record exists and this process has it mapped. The file lock is taken
// only to create a record, to map it again after it was removed or
// replaced, and by maintenance (Remove, RemoveRecords), which seals the
// counters while it looks at them so that no change lands unseen.
//
// It is what a spend ledger reserves money with, without a lock per call:
// the amount held is one counter, a reservation a CompareAndSwap loop that
// refuses to go over the limit, a release an Add of the negative amount:
//
//	for {
//		held, err := c.Load(key, 0)
//		if err != nil || held+amount > limit {
//			return false, err
//		}
//		if ok, err := c.CompareAndSwap(key, 0, held, held+amount); ok || err != nil {
//			return ok, err
//		}
//	}
//
// and a sweep removes, under the lock, the records of periods that are
// over. The counters of one record are each atomic, not together: a
// reader of two counters may see one change and not the other.
//
// A Counters is made by File.Counters and is safe for concurrent use.
type Counters struct {
	k *Kind
}

// Counters returns the counters kind whose files end in ext, as File.Kind
// does for other kinds. It panics if ext is not a valid extension or
// names a kind that is not a Counters kind.
func (f *File) Counters(ext string) *Counters {
	blank := make([]byte, payloadMax) // every counter at zero
	return &Counters{k: f.kind(ext, KindOptions{Blank: blank}, true)}
}

// Load returns counter i of the record called name, 0 if there is none.
func (c *Counters) Load(name string, i int) (int64, error) {
	v, _, err := c.apply(name, i, false, loadOp)
	return v, err
}

// Add adds delta to counter i of the record called name, creating the
// record (every counter at zero) if there is none, and returns the new
// value. It returns ErrCountRange, and changes nothing, if the value would
// go below zero or above MaxCount.
func (c *Counters) Add(name string, i int, delta int64) (int64, error) {
	_, v, err := c.apply(name, i, true, addOp(delta))
	return v, err
}

// CompareAndSwap sets counter i of the record called name to new if it
// holds old (a record that does not exist holds zeros, and is created), and
// reports whether it did. new must be from 0 to MaxCount.
func (c *Counters) CompareAndSwap(name string, i int, old, new int64) (bool, error) {
	if new < 0 {
		return false, ErrCountRange
	}
	swapped := false
	_, _, err := c.apply(name, i, true, func(cur int64) (int64, bool, error) {
		swapped = cur == old
		return new, swapped, nil
	})
	return swapped, err
}

// apply runs op on counter i of name's record: op returns the value to
// store and whether to store it. It returns the value op was shown and the
// one left in the counter. A record with no file is created first when
// create is set; otherwise op is shown 0.
func (c *Counters) apply(name string, i int, create bool, op func(old int64) (int64, bool, error)) (old, now int64, err error) {
	if i < 0 || i >= NumCounters {
		return 0, 0, fmt.Errorf("state: counter %d of %q: a record has counters 0 to %d", i, name, NumCounters-1)
	}
	s, err := c.k.f.slot(c.k, name)
	if err != nil {
		return 0, 0, err
	}
	return c.applySlot(s, i, create, op)
}

// applySlot is apply on the slot of the record.
func (c *Counters) applySlot(s *slot, i int, create bool, op func(old int64) (int64, bool, error)) (old, now int64, err error) {
	f := c.k.f
	s.touch()
	if old, now, done, err := f.applyFast(s, i, op); done {
		return old, now, err
	}
	return f.applySlow(s, i, create, op)
}

// applyFast runs op on the counter lock-free, through the slot's view:
// done is false when the view is stale, the record has no file or the
// counter is sealed, and the slow path must run. The slot is pinned
// meanwhile, so its page is not mapped over under the write.
func (f *File) applyFast(s *slot, i int, op func(int64) (int64, bool, error)) (old, now int64, done bool, err error) {
	s.pins.Add(1)
	defer s.pins.Add(-1)
	v := s.view.Load()
	if v == nil {
		return 0, 0, false, nil
	}
	if v.m == nil { // no file: zeros, unless something must be written
		if f.genMoved(s, v) {
			return 0, 0, false, nil
		}
		if n, write, err := op(0); err != nil || !write {
			return 0, n, true, err
		}
		return 0, 0, false, nil
	}
	return f.casView(s, v, i, op)
}

func (f *File) genMoved(s *slot, v *view) (moved bool) {
	var st readStatus
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	moved = true
	return atomic.LoadUint64(&f.gens.w[s.gi]) != v.dirGen
}

// casView runs op on a counter through view v, if v still holds: the
// generation counter has not moved, the file keeps its header, and v is
// still the slot's view. A fault (the file cut short under the mapping)
// sends the caller to the slow path.
func (f *File) casView(s *slot, v *view, i int, op func(int64) (int64, bool, error)) (old, now int64, done bool, err error) {
	var st readStatus
	defer func() {
		if st == readFault {
			done = false
		}
	}()
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	m := v.m
	if atomic.LoadUint64(&f.gens.w[s.gi]) != v.dirGen || atomic.LoadUint64(&m.w[wMagic]) != fileMagic ||
		atomic.LoadUint64(&m.w[wGen]) != v.gen || s.view.Load() != v {
		return 0, 0, false, nil
	}
	return casWord(&m.w[headerWords+i], op)
}

// loadAllFast appends every counter of the slot's record to dst
// lock-free, through the slot's view, as applyFast reads one; ok is false
// (and dst as given) when the slow path must run.
func (f *File) loadAllFast(s *slot, dst []int64) (out []int64, ok bool) {
	s.pins.Add(1)
	defer s.pins.Add(-1)
	v := s.view.Load()
	if v == nil {
		return dst, false
	}
	if v.m == nil { // no file: zeros
		if f.genMoved(s, v) {
			return dst, false
		}
		for range NumCounters {
			dst = append(dst, 0)
		}
		return dst, true
	}
	n := len(dst)
	dst = slices.Grow(dst, NumCounters)
	var st readStatus
	defer func() {
		if st == readFault {
			out, ok = dst[:n], false
		}
	}()
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	m := v.m
	if atomic.LoadUint64(&f.gens.w[s.gi]) != v.dirGen || atomic.LoadUint64(&m.w[wMagic]) != fileMagic ||
		atomic.LoadUint64(&m.w[wGen]) != v.gen || s.view.Load() != v {
		return dst, false
	}
	for i := range NumCounters {
		w := atomic.LoadUint64(&m.w[headerWords+i])
		if w&sealed != 0 {
			return dst[:n], false
		}
		dst = append(dst, int64(w))
	}
	return dst, true
}

// casWord is the compare-and-swap loop on a counter word: done is false
// if the counter is sealed.
func casWord(w *uint64, op func(int64) (int64, bool, error)) (old, now int64, done bool, err error) {
	for {
		cur := atomic.LoadUint64(w)
		if cur&sealed != 0 {
			return 0, 0, false, nil
		}
		n, write, err := op(int64(cur))
		if err != nil || !write {
			return int64(cur), int64(cur), true, err
		}
		if atomic.CompareAndSwapUint64(w, cur, uint64(n)) {
			return int64(cur), n, true, nil
		}
	}
}

// applySlow runs op under the file lock, creating and mapping the record
// first if needed, and leaves a view for the fast path. Counters a
// maintainer left sealed when it died are unsealed: under the lock, no
// maintainer is at work.
func (f *File) applySlow(s *slot, i int, create bool, op func(int64) (int64, bool, error)) (old, now int64, err error) {
	s, err = f.lockSlot(s)
	if err != nil {
		return 0, 0, err
	}
	defer s.mu.Unlock()
	m, g, err := f.current(s)
	if err != nil {
		return 0, 0, err
	}
	if m == nil {
		if !create {
			s.view.Store(&view{dirGen: g})
			n, _, err := op(0)
			return 0, n, err
		}
		if _, err := f.create(s); err != nil {
			return 0, 0, err
		}
	}
	if m, err = f.lockMapping(s); err != nil {
		return 0, 0, fmt.Errorf("state: lock state file %s: %w", s.path, err)
	}
	defer m.unlock()
	return f.applyLocked(s, m, i, op)
}

// applyLocked runs op on counter i of m, the current file of s, under its
// lock, and leaves a view of it for the fast path. The caller holds s.mu.
func (f *File) applyLocked(s *slot, m *mapping, i int, op func(int64) (int64, bool, error)) (old, now int64, err error) {
	var st readStatus
	defer func() {
		if st == readFault {
			err = fmt.Errorf("state: state file %s was cut short while read", s.path)
		}
	}()
	defer recoverFault(&st)
	if f.prepareCounters(s, m) == readFault {
		return 0, 0, fmt.Errorf("state: state file %s was cut short while read", s.path)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	g := f.gens.current(s.gi) // the file is current while the lock is held
	s.view.Store(&view{m: m, dirGen: g, seq: atomic.LoadUint64(&m.w[wSeq]), gen: atomic.LoadUint64(&m.w[wGen])})
	old, now, _, err = casWord(&m.w[headerWords+i], op) // nothing is sealed under the lock
	return old, now, err
}

// prepareCounters makes the mapped file m a sound record of counters, under
// its lock: one with a bad header is rewritten with every counter at zero
// (a warning logged), and sealed counters are unsealed.
func (f *File) prepareCounters(s *slot, m *mapping) (st readStatus) {
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if atomic.LoadUint64(&m.w[wSeq])&1 != 0 || atomic.LoadUint64(&m.w[wMagic]) != fileMagic ||
		atomic.LoadUint64(&m.w[wLen]) != payloadMax {
		f.warnDamaged(s, "not a record of counters")
		st, _ = writeWords(m.w, &s.kind.blank, atomic.LoadUint64(&m.w[wGen])|1)
		return st
	}
	for j := range NumCounters {
		w := &m.w[headerWords+j]
		if x := atomic.LoadUint64(w); x&sealed != 0 {
			atomic.StoreUint64(w, x&^sealed)
		}
	}
	return readOK
}
