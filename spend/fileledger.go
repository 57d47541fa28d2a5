package spend

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/state"
)

// The counters of one budget key in a file ledger: what is used (spent
// plus held: what a reservation is admitted against), what is spent, when
// the key's period ends, then groups of holds, each with when it is
// reclaimed (0: free), what it holds and its generation, bumped when it is
// reclaimed.
const (
	cUsed = iota
	cSpent
	cEnds
	cGroups
)

const (
	groupWords = 3
	numGroups  = (state.NumCounters - cGroups) / groupWords
)

func cUntil(g int) int { return cGroups + g*groupWords }
func cHeld(g int) int  { return cGroups + g*groupWords + 1 }
func cGen(g int) int   { return cGroups + g*groupWords + 2 }

// fileLedgerExt is the extension of a file ledger's records in a state
// directory.
const fileLedgerExt = ".ledger"

// NewFileLedger returns a Ledger, a PeriodLedger, kept in a state directory
// shared by the processes of a host, that takes no file lock to reserve or
// settle. Each budget key is a record of counters (state.Counters) changed
// by atomic operations on its shared mapping: a reservation is one
// compare-and-swap that refuses to go over the limit plus one add to a
// group of holds, a settlement three adds; amounts are whole nano-dollars,
// so concurrent holds never overshoot a cap, across processes as within
// one. The file lock is taken only to create a key's record, to reclaim the
// holds of holders that died (when a reservation would not fit otherwise)
// and to sweep, in the background at most every ten minutes, the records of
// periods that are over.
//
// Holds are grouped by when they are reclaimed, at most eight groups per
// key: a hold joins a group reclaimed no earlier than its own ttl and at
// most an eighth of it later, so the hold of a holder that died is given
// back between ttl and 9/8 of ttl after it was taken (later only when
// holds of many different ttls share a key and every group is taken: then
// a hold joins the latest group and pushes its time back, never forward).
//
// Records that NewLedger kept in the same directory (kind ".record", as
// earlier versions did) are folded into the counters, once, when the
// ledger is made.
func NewFileLedger(f *state.File) (Ledger, error) {
	c := f.Counters(fileLedgerExt)
	l := &counterLedger{c: c, recs: c.Cache(maxRecs), now: time.Now}
	if err := l.adopt(f); err != nil {
		return nil, err
	}
	return l, nil
}

type counterLedger struct {
	c         *state.Counters
	recs      *state.RecordCache
	now       func() time.Time
	nextSweep atomic.Int64 // in the ledger's clock, Unix nanoseconds
	sweeping  atomic.Bool
	sweeps    sync.WaitGroup
}

// Reserve holds amount under key; see Ledger.
func (l *counterLedger) Reserve(key string, amount, limit float64, ttl time.Duration) (Hold, float64, bool, error) {
	return l.ReserveUntil(key, amount, limit, ttl, time.Time{})
}

// ReserveUntil holds amount under key, whose period ends at ends; see
// PeriodLedger.
func (l *counterLedger) ReserveUntil(key string, amount, limit float64, ttl time.Duration, ends time.Time) (Hold, float64, bool, error) {
	now := l.now().UnixNano()
	amt, lim := nanoUSD(amount), nanoUSD(limit)
	h := Hold{NanoUSD: amt}
	rec, err := l.recs.Record(key)
	if err != nil {
		return h, 0, false, err
	}
	if !ends.IsZero() {
		h.Ends = ends.UnixNano()
		if err := l.setEnds(rec, h.Ends); err != nil {
			return h, 0, false, err
		}
	}
	used, ok, err := l.admit(rec, amt, lim, now)
	if err != nil || !ok {
		return h, usd(lim - used), false, err
	}
	g, until, gen, err := l.group(rec, now, ttl)
	if err == nil {
		_, err = rec.Add(cHeld(g), amt)
	}
	if err != nil {
		rec.Add(cUsed, -amt)
		return h, 0, false, err
	}
	h.Until, h.group, h.gen, h.rec = until, g+1, gen, rec
	l.maybeSweep(now)
	return h, usd(lim - used - amt), true, nil
}

// admit adds amt to what key uses unless that would go over lim, after
// reclaiming the holds whose time has come if it would. It returns what
// was used before.
func (l *counterLedger) admit(rec *state.Record, amt, lim, now int64) (used int64, ok bool, err error) {
	reclaimed := false
	for {
		if used, err = rec.Load(cUsed); err != nil {
			return 0, false, err
		}
		if used+amt > lim {
			if reclaimed {
				return used, false, nil
			}
			reclaimed = true
			if err := l.reclaim(rec.Name(), now); err != nil {
				return used, false, err
			}
			continue
		}
		if ok, err = rec.CompareAndSwap(cUsed, used, used+amt); ok || err != nil {
			return used, ok, err
		}
	}
}

// setEnds records when the key's period ends, once.
func (l *counterLedger) setEnds(rec *state.Record, ends int64) error {
	cur, err := rec.Load(cEnds)
	if err != nil || cur >= ends {
		return err
	}
	_, err = rec.CompareAndSwap(cEnds, cur, ends)
	return err
}

// group returns the group a hold taken at now for ttl joins, when it is
// reclaimed and its generation: a group reclaimed between now+ttl and an
// eighth of ttl later; else a free group, or one whose time passed with
// nothing left in it, set to that latest time; else the latest group,
// pushed back to now+ttl if it is earlier.
func (l *counterLedger) group(rec *state.Record, now int64, ttl time.Duration) (g int, until, gen int64, err error) {
	lo := now + int64(ttl)
	hi := lo + int64(ttl)/8
	for {
		free, latest := -1, -1
		var freeUntil, latestUntil int64
		for i := range numGroups {
			u, err := rec.Load(cUntil(i))
			if err != nil {
				return 0, 0, 0, err
			}
			switch {
			case u >= lo && u <= hi:
				gen, err := generation(rec, i, now)
				return i, u, gen, err
			case free < 0 && u <= now:
				if n, err := rec.Load(cHeld(i)); err != nil {
					return 0, 0, 0, err
				} else if u == 0 || n == 0 {
					free, freeUntil = i, u
				}
			}
			if u > latestUntil {
				latest, latestUntil = i, u
			}
		}
		i, from, to := free, freeUntil, hi
		if free < 0 {
			i, from, to = latest, latestUntil, max(latestUntil, lo)
		}
		ok, err := rec.CompareAndSwap(cUntil(i), from, to)
		if err != nil {
			return 0, 0, 0, err
		}
		if ok {
			gen, err := generation(rec, i, now)
			return i, to, gen, err
		}
	}
}

// generation returns group g's generation, first setting it to now when
// it is 0. A record the sweep removed is made anew with every generation
// at 0; a hold taken before the removal and settled late must not match a
// group of the new record, so a group's first generation comes from the
// clock, and the generations of one life of a record are not those of
// another (they would meet only if a group were reclaimed as many times
// as nanoseconds passed between the two lives).
func generation(rec *state.Record, g int, now int64) (int64, error) {
	gen, err := rec.Load(cGen(g))
	if err != nil || gen != 0 {
		return gen, err
	}
	if _, err := rec.CompareAndSwap(cGen(g), 0, max(now, 1)); err != nil {
		return 0, err
	}
	return rec.Load(cGen(g))
}

// Settle replaces a hold by what the call cost; see Ledger. A hold whose
// group was reclaimed meanwhile is already out of what is used: only its
// cost is added.
func (l *counterLedger) Settle(key string, h Hold, cost float64) error {
	c := nanoUSD(cost)
	rec := h.rec
	if rec == nil || rec.Name() != key {
		var err error
		if rec, err = l.recs.Record(key); err != nil {
			return err
		}
	}
	if h.Ends != 0 {
		if err := l.setEnds(rec, h.Ends); err != nil {
			return err
		}
	}
	back, err := l.release(rec, h)
	if err != nil {
		return err
	}
	if c > 0 {
		if _, err := rec.Add(cSpent, c); err != nil {
			return err
		}
	}
	if d := c - back; d != 0 {
		if _, err := rec.Add(cUsed, d); err != nil {
			return err
		}
	}
	return nil
}

// release takes a hold out of its group and returns what it held, or 0
// when the group was reclaimed since the hold joined it.
func (l *counterLedger) release(rec *state.Record, h Hold) (int64, error) {
	g := h.group - 1
	if g < 0 || g >= numGroups || h.NanoUSD <= 0 {
		return 0, nil
	}
	gen, err := rec.Load(cGen(g))
	if err != nil || gen != h.gen {
		return 0, err
	}
	_, err = rec.Add(cHeld(g), -h.NanoUSD)
	switch {
	case errors.Is(err, state.ErrCountRange): // reclaimed meanwhile
		return 0, nil
	case err != nil:
		return 0, err
	}
	return h.NanoUSD, nil
}

// Read returns what was spent and what is held under key; see Ledger.
// Holds whose time has come are not counted.
func (l *counterLedger) Read(key string) (spent, held float64, err error) {
	now := l.now().UnixNano()
	rec, err := l.recs.Record(key)
	if err != nil {
		return 0, 0, err
	}
	s, err := rec.Load(cSpent)
	if err != nil {
		return 0, 0, err
	}
	var h int64
	for g := range numGroups {
		u, err := rec.Load(cUntil(g))
		if err != nil {
			return 0, 0, err
		}
		if u > now {
			n, err := rec.Load(cHeld(g))
			if err != nil {
				return 0, 0, err
			}
			h += n
		}
	}
	return usd(s), usd(h), nil
}

// reclaim gives back, under the record's lock, the groups of holds whose
// time has come: their holders died without settling.
func (l *counterLedger) reclaim(key string, now int64) error {
	return l.c.Update(key, func(c []int64) bool {
		changed := false
		for g := range numGroups {
			if u := c[cUntil(g)]; u != 0 && u <= now {
				c[cUsed] = max(c[cUsed]-c[cHeld(g)], c[cSpent])
				c[cHeld(g)], c[cUntil(g)] = 0, 0
				c[cGen(g)]++
				changed = true
			}
		}
		return changed
	})
}

// maybeSweep starts, in the background, a sweep of the records no longer
// needed, if one is due and none is running.
func (l *counterLedger) maybeSweep(now int64) {
	if now < l.nextSweep.Load() || !l.sweeping.CompareAndSwap(false, true) {
		return
	}
	l.nextSweep.Store(now + int64(ledgerSweepEvery))
	l.sweeps.Go(func() {
		defer l.sweeping.Store(false)
		l.c.RemoveRecords(func(_ string, c []int64) bool { return fileRecordDone(c, now) })
	})
}

// fileRecordDone reports whether a key's counters hold nothing worth
// keeping at now: nothing held (or no hold still live, its period over),
// and nothing spent or its period over.
func fileRecordDone(c []int64, now int64) bool {
	over := c[cEnds] != 0 && now >= c[cEnds]
	if c[cUsed] != c[cSpent] && !over {
		return false
	}
	if over {
		for g := range numGroups {
			if c[cUntil(g)] > now && c[cHeld(g)] > 0 {
				return false
			}
		}
		return true
	}
	return c[cSpent] == 0
}

// adopt folds the records NewLedger kept in f into the counters, and
// removes them: each is shown to one ledger only, under its lock.
func (l *counterLedger) adopt(f *state.File) error {
	now := l.now().UnixNano()
	var errs []error
	_, err := f.RemoveRecords(func(key string, rec []byte) bool {
		r := decodeRecord(rec)
		r.reclaim(now)
		err := l.fold(key, &r, now)
		if err != nil {
			errs = append(errs, err)
		}
		return err == nil
	})
	return errors.Join(append(errs, err)...)
}

// fold adds a record of NewLedger's to key's counters: what it spent, when
// its period ends, and its live holds as one group, reclaimed with the
// latest of them.
func (l *counterLedger) fold(key string, r *ledgerRecord, now int64) error {
	rec, err := l.recs.Record(key)
	if err != nil {
		return err
	}
	if r.ends != 0 {
		if err := l.setEnds(rec, r.ends); err != nil {
			return err
		}
	}
	held, until := r.held(), int64(0)
	for _, b := range r.buckets {
		until = max(until, b.until)
	}
	if _, err := rec.Add(cSpent, r.spent); err != nil {
		return err
	}
	if _, err := rec.Add(cUsed, r.spent+held); err != nil {
		return err
	}
	if held == 0 {
		return nil
	}
	g, _, _, err := l.group(rec, now, time.Duration(until-now))
	if err == nil {
		_, err = rec.Add(cHeld(g), held)
	}
	return err
}

// maxRecs bounds the records a file ledger keeps looked up: past it, the
// table is emptied and fills again with the keys in use.
const maxRecs = 4096
