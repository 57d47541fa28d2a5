package limit

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sluice-llm/sluice/state"
)

// inFlightExt is the extension of the File's concurrency records.
const inFlightExt = ".inflight"

// A File keeps a concurrency key in a record of its own, whose
// state.NumCounters counters are entries, one per process with calls in
// flight under the key. An entry holds its process's id and how many
// slots it holds:
//
//	bits 38–62  a tag of the process's start time (0: unknown)
//	bits 16–37  its pid (below 2^22, Linux's PID_MAX_LIMIT)
//	bits  0–15  its slots under the key (1 to 65,535)
//
// and is 0 when free. A process claims a free entry with CompareAndSwap
// from 0, changes its own count with CompareAndSwap, and frees the entry
// when its count goes back to 0: an entry is held only while its process
// has calls in flight under the key. Only the holder changes an entry,
// except a process that finds the holder dead, which frees it (a
// CompareAndSwap of the whole entry to 0).
const (
	countBits = 16
	pidBits   = 22
	tagBits   = 63 - countBits - pidBits
	countMask = 1<<countBits - 1
	maxCount  = countMask
)

// holder returns the process part of an entry.
func holder(entry int64) int64 { return entry &^ countMask }

// holderPID returns the pid of an entry's process.
func holderPID(entry int64) int { return int(entry >> countBits & (1<<pidBits - 1)) }

// holderTag returns the start-time tag of an entry's process.
func holderTag(entry int64) int64 { return entry >> (countBits + pidBits) }

// makeHolder returns the process part of an entry for pid and tag.
func makeHolder(pid int, tag int64) int64 {
	return tag&(1<<tagBits-1)<<(countBits+pidBits) | int64(pid)<<countBits
}

// self returns this process's entry holder, or an error when its pid does
// not fit an entry.
var self = sync.OnceValues(func() (int64, error) {
	pid := os.Getpid()
	if pid <= 0 || pid >= 1<<pidBits {
		return 0, fmt.Errorf("limit: pid %d does not fit a concurrency entry (below %d); use a Memory or Redis store", pid, 1<<pidBits)
	}
	return makeHolder(pid, startTag(pid)), nil
})

// errNotHeld is Release's error for a key this process holds no slot of.
var errNotHeld = errors.New("limit: this process holds no slot of the key to release")

// Acquire implements Store: it adds one to this process's entry of the
// key (claiming a free entry if it holds none), then sums the entries; if
// the sum is over limit, it frees the entries of processes that died and
// sums again, and if the sum is still over limit it takes its one back
// and answers not ok. Every caller counts itself before it looks, so two
// callers racing for the last slot can both back out, never both get in:
// the limit is never exceeded. A dead process's slots come back at the
// first Acquire that finds the key full. When every entry is held by a
// live process with calls in flight under the key (more than
// state.NumCounters such processes), Acquire answers not ok, as for a
// full key, until one of them has none. The lease is not needed.
func (f *File) Acquire(key string, limit int64, _ time.Duration) (uint64, bool, error) {
	me, err := self()
	if err != nil {
		return 0, false, err
	}
	rec, err := f.inRecs.Record(key)
	if err != nil {
		return 0, false, err
	}
	ok, err := f.addOwn(rec, me, 1)
	if !ok || err != nil {
		return 0, false, err
	}
	sum, err := f.sum(rec, me, false)
	if err == nil && sum > limit {
		sum, err = f.sum(rec, me, true)
	}
	if err != nil || sum > limit {
		_, err2 := f.addOwn(rec, me, -1)
		return 0, false, errors.Join(err, err2)
	}
	f.maybeSweep(f.now().UnixNano())
	return 0, true, nil
}

// Release implements Store: one less in this process's entry of the key.
func (f *File) Release(key string, _ uint64) error {
	me, err := self()
	if err != nil {
		return err
	}
	rec, err := f.inRecs.Record(key)
	if err != nil {
		return err
	}
	ok, err := f.addOwn(rec, me, -1)
	if err == nil && !ok {
		err = fmt.Errorf("release of %s: %w", key, errNotHeld)
	}
	return err
}

// InFlight implements Store: the sum of the key's entries. When it is
// not zero, the entries of processes that died are freed first, so that a
// process killed while it held slots, or while its calls waited (a
// waiting count is a key of its own: see Limiter.Wait), is not counted.
func (f *File) InFlight(key string) (int64, error) {
	me, err := self()
	if err != nil {
		return 0, err
	}
	rec, err := f.inRecs.Record(key)
	if err != nil {
		return 0, err
	}
	n, err := f.sum(rec, me, false)
	if n == 0 || err != nil {
		return n, err
	}
	return f.sum(rec, me, true)
}

// addOwn adds delta (+1 or -1) to the count of this process's entry of
// the key of rec, claiming a free entry to add to when it holds none and
// freeing its entry when the count reaches 0. It reports false when it
// changed nothing: no entry is free to claim (after freeing those of dead
// processes), or, for -1, this process holds none.
func (f *File) addOwn(rec *state.Record, me int64, delta int64) (bool, error) {
	var buf [state.NumCounters]int64
	for {
		es, err := rec.Counts(buf[:0])
		if err != nil {
			return false, err
		}
		free, reclaimed := -1, false
		for i, e := range es {
			if e == 0 {
				if free < 0 {
					free = i
				}
				continue
			}
			if holder(e) != me {
				continue
			}
			n := e&countMask + delta
			next := e + delta
			switch {
			case n == 0:
				next = 0
			case n > maxCount:
				return false, fmt.Errorf("limit: %s: this process holds %d slots, the most an entry counts", rec.Name(), maxCount)
			}
			swapped, err := rec.CompareAndSwap(i, e, next)
			if err != nil || swapped {
				return swapped, err
			}
			free = -2 // raced with this process's own change: look again
			break
		}
		switch {
		case free == -2:
			continue
		case delta < 0:
			return false, nil
		case free >= 0:
			swapped, err := rec.CompareAndSwap(free, 0, me|1)
			if err != nil || swapped {
				return swapped, err
			}
			continue
		}
		if err := f.freeDead(rec, me, &reclaimed); err != nil || !reclaimed {
			return false, err
		}
	}
}

// sum returns how many slots the entries of rec's key hold. With reclaim,
// it first frees the entries of processes that died.
func (f *File) sum(rec *state.Record, me int64, reclaim bool) (int64, error) {
	if reclaim {
		if err := f.freeDead(rec, me, nil); err != nil {
			return 0, err
		}
	}
	var buf [state.NumCounters]int64
	es, err := rec.Counts(buf[:0])
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, e := range es {
		sum += e & countMask
	}
	return sum, nil
}

// freeDead frees the entries of rec's key whose process is dead, and sets
// *freed (if not nil) when it freed one.
func (f *File) freeDead(rec *state.Record, me int64, freed *bool) error {
	alive := f.alive
	if alive == nil {
		alive = processAlive
	}
	var buf [state.NumCounters]int64
	es, err := rec.Counts(buf[:0])
	if err != nil {
		return err
	}
	for i, e := range es {
		if e == 0 || holder(e) == me || alive(holder(e)) {
			continue
		}
		swapped, err := rec.CompareAndSwap(i, e, 0)
		if err != nil {
			return err
		}
		if swapped && freed != nil {
			*freed = true
		}
	}
	return nil
}

// sweepInFlight removes the concurrency records whose entries are all
// free, and returns how many it removed.
func (f *File) sweepInFlight() (int, error) {
	return f.inFlight.RemoveRecords(func(_ string, c []int64) bool {
		for _, e := range c {
			if e != 0 {
				return false
			}
		}
		return true
	})
}
