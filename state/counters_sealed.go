package state

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"
)

// The counters read and changed whole, sealed so that no lock-free
// writer changes them meanwhile: Remove, Update and RemoveRecords.

// Remove shows drop the counters of the record called name, sealed so that
// none changes meanwhile, and removes the record if drop returns true; it
// reports whether it removed it. A record with no file is not shown. It
// takes the file lock: call it at a bounded rate.
func (c *Counters) Remove(name string, drop func(counts []int64) bool) (bool, error) {
	removed := false
	err := c.sealed(name, func(s *slot, m *mapping, counts []int64) error {
		if !drop(counts) {
			unsealCounters(m)
			m.unlock()
			return nil
		}
		// The counters stay sealed in the unlinked file: a change racing
		// the removal fails there and goes to the slow path.
		err := removeState(s.path)
		if err == nil {
			c.k.f.gens.bump(s.gi)
			removed = true
		}
		m.unlock()
		c.k.f.detach(s, true)
		return err
	})
	return removed, err
}

// Update shows fn the counters of the record called name, sealed so that
// none changes meanwhile, and when fn returns true, writes back what it
// left in them. A value out of range (below zero) writes nothing and is an
// ErrCountRange. A record with no file is not shown. Update is the
// maintenance a lock-free user does now and then (a ledger reclaiming the
// holds of holders that died): it takes the file lock, so call it at a
// bounded rate.
func (c *Counters) Update(name string, fn func(counts []int64) bool) error {
	return c.sealed(name, func(_ *slot, m *mapping, counts []int64) error {
		var err error
		if fn(counts) {
			if slices.ContainsFunc(counts, func(v int64) bool { return v < 0 }) {
				err = ErrCountRange
			} else if storeCounters(m, counts) == readFault {
				err = errors.New("state: a state file was cut short while written")
			}
		}
		unsealCounters(m) // after a store, a no-op but for a fault
		m.unlock()
		return err
	})
}

// sealed runs fn under the file lock of name's record with its counters
// sealed and shown to fn. fn must unseal them (or remove the file) and
// unlock m. A record with no file is not shown.
func (c *Counters) sealed(name string, fn func(s *slot, m *mapping, counts []int64) error) error {
	f := c.k.f
	s, err := f.slot(c.k, name)
	if err != nil {
		return err
	}
	s, err = f.lockSlot(s)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	m, _, err := f.current(s)
	if err != nil || m == nil {
		return err
	}
	if m, err = f.lockMapping(s); err != nil {
		return fmt.Errorf("state: lock state file %s: %w", s.path, err)
	}
	if st := f.prepareCounters(s, m); st == readFault {
		m.unlock()
		return fmt.Errorf("state: state file %s was cut short while read", s.path)
	}
	counts, st := sealCounters(m)
	if st != readOK {
		unsealCounters(m)
		m.unlock()
		return fmt.Errorf("state: state file %s was cut short while read", s.path)
	}
	return fn(s, m, counts)
}

// Names returns the name of every record of the kind that has a file in
// the directory, in no particular order.
func (c *Counters) Names() ([]string, error) { return c.k.Names() }

// RemoveRecords calls Remove for every record of the kind in the
// directory, and returns how many it removed. It opens, maps and locks
// each: call it at a bounded rate.
func (c *Counters) RemoveRecords(drop func(name string, counts []int64) bool) (int, error) {
	names, err := c.k.Names()
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, name := range names {
		ok, err := c.Remove(name, func(counts []int64) bool { return drop(name, counts) })
		if ok {
			removed++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// sealCounters sets the seal of every counter of m and returns their
// values. The caller holds the file lock.
func sealCounters(m *mapping) (counts []int64, st readStatus) {
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	counts = make([]int64, NumCounters)
	for j := range counts {
		w := &m.w[headerWords+j]
		for {
			x := atomic.LoadUint64(w)
			if atomic.CompareAndSwapUint64(w, x, x|sealed) {
				counts[j] = int64(x &^ sealed)
				break
			}
		}
	}
	return counts, readOK
}

// unsealCounters clears the seal of every counter of m; the caller holds
// the file lock and sealed them.
// storeCounters writes counts, unsealed, into the counters of m. The
// caller holds the file lock and the seals.
func storeCounters(m *mapping, counts []int64) (st readStatus) {
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	for j, v := range counts {
		atomic.StoreUint64(&m.w[headerWords+j], uint64(v))
	}
	return readOK
}

func unsealCounters(m *mapping) (st readStatus) {
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	for j := range NumCounters {
		w := &m.w[headerWords+j]
		atomic.StoreUint64(w, atomic.LoadUint64(w)&^sealed)
	}
	return readOK
}
