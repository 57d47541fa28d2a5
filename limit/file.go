package limit

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/state"
)

// fileExt is the extension of the limiter's records in a state directory.
const fileExt = ".limit"

// The counters of one record: the bucket's TAT and until when the key is
// paused, both Unix nanoseconds, and, for a pause key, the rate Learn
// learned (its limit and its period in nanoseconds; 0 and 0 for none) and
// when (Unix nanoseconds), and its Pace's fields (Steady as 0 or 1).
const (
	cTAT = iota
	cPaused
	cLimit
	cPer
	cRateAt
	cPaceInterval
	cPaceAt
	cPaceOK
	cPaceSteady
	cPaceLast
)

// fileSweepEvery is how often a File sweeps its idle records, at most.
const fileSweepEvery = 10 * time.Minute

// File is a Store kept in a state directory shared by the processes of a
// host, on state.Counters (records of kind ".limit", one per key, file
// names escaped by package state). A reservation is one CompareAndSwap
// loop on the key's TAT in the record's shared mapping: no file lock and,
// once the record exists and is mapped, no system call. Its order across
// processes is the order of the successful swaps: first come, first
// served. The clock is each process's wall clock, which the processes of
// one host share.
//
// A concurrency key is a record of its own (kind ".inflight") whose
// counters are entries, one per process with calls in flight under the
// key: see Acquire.
//
// Records idle for a minute (TAT and pause both that far in the past), and
// concurrency records with no entry, are removed by a sweep that Reserve
// and Acquire start in the background at most every ten minutes; it takes
// each record's file lock. Close waits for a sweep that is running.
type File struct {
	c         *state.Counters
	inFlight  *state.Counters         // concurrency keys: one entry per process
	recs      *state.RecordCache      // of c
	inRecs    *state.RecordCache      // of inFlight
	alive     func(holder int64) bool // if nil, processAlive; tests set it
	now       func() time.Time
	nextSweep atomic.Int64
	sweeping  atomic.Bool
	sweeps    sync.WaitGroup
}

// NewFile returns a File on the state directory f.
func NewFile(f *state.File) (*File, error) {
	if f == nil {
		return nil, errors.New("limit: NewFile needs an open state.File; open one with state.OpenFile")
	}
	c, inFlight := f.Counters(fileExt), f.Counters(inFlightExt)
	return &File{c: c, inFlight: inFlight, recs: c.Cache(maxRecords), inRecs: inFlight.Cache(maxRecords), now: time.Now}, nil
}

// Close waits for a background sweep to end. It does not close the
// state.File.
func (f *File) Close() error {
	f.sweeps.Wait()
	return nil
}

// Reserve implements Store.
func (f *File) Reserve(key string, r Rate, cost int64, notBefore time.Time, maxWait time.Duration) (time.Time, bool, error) {
	now := f.now().UnixNano()
	nb := unixNano(notBefore)
	rec, err := f.recs.Record(key)
	if err != nil {
		return time.Time{}, false, err
	}
	for {
		tat, err := rec.Load(cTAT)
		if err != nil {
			return time.Time{}, false, err
		}
		next, at, ok := Step(tat, now, nb, r, cost, maxWait)
		if !ok || next == tat {
			return time.Unix(0, at), ok, nil
		}
		swapped, err := rec.CompareAndSwap(cTAT, tat, next)
		if err != nil {
			return time.Time{}, false, err
		}
		if swapped {
			f.maybeSweep(now)
			return time.Unix(0, at), true, nil
		}
	}
}

// Cancel implements Store.
func (f *File) Cancel(key string, r Rate, at time.Time, cost int64) error {
	return f.change(key, func(tat, _ int64) int64 { return cancelled(tat, r, at.UnixNano(), cost) })
}

// Settle implements Store.
func (f *File) Settle(key string, r Rate, delta int64) error {
	return f.change(key, func(tat, now int64) int64 { return settled(tat, now, r, delta) })
}

// change swaps the key's TAT for fn's value, in a CompareAndSwap loop.
func (f *File) change(key string, fn func(tat, now int64) int64) error {
	now := f.now().UnixNano()
	rec, err := f.recs.Record(key)
	if err != nil {
		return err
	}
	for {
		tat, err := rec.Load(cTAT)
		if err != nil {
			return err
		}
		next := max(fn(tat, now), 0)
		if next == tat {
			return nil
		}
		if ok, err := rec.CompareAndSwap(cTAT, tat, next); ok || err != nil {
			return err
		}
	}
}

// Pause implements Store.
func (f *File) Pause(key string, until time.Time) error {
	u := unixNano(until)
	rec, err := f.recs.Record(key)
	if err != nil {
		return err
	}
	for {
		cur, err := rec.Load(cPaused)
		if err != nil || cur >= u {
			return err
		}
		if ok, err := rec.CompareAndSwap(cPaused, cur, u); ok || err != nil {
			return err
		}
	}
}

// Resume implements Store.
func (f *File) Resume(key string) error {
	for {
		cur, err := f.c.Load(key, cPaused)
		if err != nil || cur == 0 {
			return err
		}
		if ok, err := f.c.CompareAndSwap(key, cPaused, cur, 0); ok || err != nil {
			return err
		}
	}
}

// Learn implements Store: a CompareAndSwap loop on the TAT, scaled from
// the rate the record held to r, then the rate's two counters, each set
// with a CompareAndSwap. A Learn or a reservation that reads the rate
// between the two sees one counter of each rate, for that instant: two
// rates learned from one provider differ by as little as its headers'
// rounding does.
func (f *File) Learn(key string, r Rate, used int64) error {
	now := f.now().UnixNano()
	rec, err := f.recs.Record(key)
	if err != nil {
		return err
	}
	var limit, per int64
	for {
		tat, err1 := rec.Load(cTAT)
		l, err2 := rec.Load(cLimit)
		p, err3 := rec.Load(cPer)
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		limit, per = l, p
		next := relearned(tat, now, learnedRate(l, p), r, used)
		if next == tat {
			break
		}
		swapped, err := rec.CompareAndSwap(cTAT, tat, next)
		if err != nil {
			return err
		}
		if swapped {
			f.maybeSweep(now)
			break
		}
	}
	if limit != r.Limit {
		if _, err := rec.CompareAndSwap(cLimit, limit, r.Limit); err != nil {
			return err
		}
	}
	if per != int64(r.Per) {
		if _, err := rec.CompareAndSwap(cPer, per, int64(r.Per)); err != nil {
			return err
		}
	}
	for {
		at, err := rec.Load(cRateAt)
		if err != nil || at >= now {
			return err
		}
		if ok, err := rec.CompareAndSwap(cRateAt, at, now); ok || err != nil {
			return err
		}
	}
}

// Learned implements Store: the record's counters, read in one pass.
func (f *File) Learned(key string) (Learned, error) {
	rec, err := f.recs.Record(key)
	if err != nil {
		return Learned{}, err
	}
	var buf [state.NumCounters]int64
	c, err := rec.Counts(buf[:0])
	if err != nil {
		return Learned{}, err
	}
	return learnedOf(c[cPaused], c[cLimit], c[cPer], c[cRateAt], paceOf(c)), nil
}

// paceOf returns the Pace a record's counters hold.
func paceOf(c []int64) Pace {
	return Pace{Interval: c[cPaceInterval], At: c[cPaceAt], OK: c[cPaceOK], Steady: c[cPaceSteady] != 0, Last: c[cPaceLast]}
}

// Pace implements Store: PaceStep on the record's pace counters, under
// the record's file lock (a pace learns at the pace of its scope's
// answers, a bounded rate).
func (f *File) Pace(key string, e PaceEvent) (Pace, error) {
	now := f.now().UnixNano() / 1e6
	if _, err := f.c.Add(key, cPaceLast, 0); err != nil { // the record exists
		return Pace{}, err
	}
	var out Pace
	err := f.c.Update(key, func(c []int64) bool {
		old := paceOf(c)
		out = PaceStep(old, e, now)
		if out == old {
			return false
		}
		steady := int64(0)
		if out.Steady {
			steady = 1
		}
		c[cPaceInterval], c[cPaceAt], c[cPaceOK], c[cPaceSteady], c[cPaceLast] = out.Interval, out.At, out.OK, steady, out.Last
		return true
	})
	return out, err
}

// PausedUntil implements Store.
func (f *File) PausedUntil(key string) (time.Time, error) {
	return f.load(key, cPaused)
}

// FreeAt implements Store.
func (f *File) FreeAt(key string) (time.Time, error) {
	return f.load(key, cTAT)
}

func (f *File) load(key string, i int) (time.Time, error) {
	rec, err := f.recs.Record(key)
	if err != nil {
		return time.Time{}, err
	}
	v, err := rec.Load(i)
	if err != nil || v == 0 {
		return time.Time{}, err
	}
	return time.Unix(0, v), nil
}

// maybeSweep starts, in the background, a sweep of the idle records, if
// one is due and none is running.
func (f *File) maybeSweep(now int64) {
	if now < f.nextSweep.Load() || !f.sweeping.CompareAndSwap(false, true) {
		return
	}
	f.nextSweep.Store(now + int64(fileSweepEvery))
	f.sweeps.Go(func() {
		defer f.sweeping.Store(false)
		f.sweep(now)
	})
}

// sweep removes the records idle at now and returns how many it removed.
// It looks at each record lock-free first and asks state to remove only
// those that look idle (Remove checks again, sealed): state's
// Counters.Remove keeps the file lock of a record it is told to keep, so
// a busy record is never handed to it.
func (f *File) sweep(now int64) (int, error) {
	names, err := f.c.Names()
	if err != nil {
		return 0, err
	}
	removed, err := f.sweepInFlight()
	errs := []error{err}
	for _, name := range names {
		tat, err1 := f.c.Load(name, cTAT)
		paused, err2 := f.c.Load(name, cPaused)
		last, err3 := f.c.Load(name, cPaceLast)
		if err := errors.Join(err1, err2, err3); err != nil {
			errs = append(errs, err)
			continue
		}
		if !idle(max(tat, last*1e6), paused, now) {
			continue
		}
		ok, err := f.c.Remove(name, func(c []int64) bool { return idle(max(c[cTAT], c[cPaceLast]*1e6), c[cPaused], now) })
		if ok {
			removed++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// maxRecords bounds how many keys' records a File keeps looked up, per
// kind.
const maxRecords = 4096
