package limit

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stats counts, in this process, the calls of one limit (or of the
// pauses, under the name "pause").
type Stats struct {
	// Queued is how many calls wait for a slot now: a slot in time, or
	// an in-flight slot of a Concurrent limit.
	Queued int

	// InFlight is how many calls of this process hold an in-flight slot
	// of the limit now (a Concurrent limit's; 0 for others).
	InFlight int

	// Admitted is how many calls were given a slot and waited for it.
	Admitted uint64

	// Refused is how many calls were refused: their slot was beyond their
	// maximum wait.
	Refused uint64

	// Paused is how many pauses were learned from answers ("pause" only).
	Paused uint64
}

// Bucket is one bucket or pause as an admin page lists it.
type Bucket struct {
	// Key is the bucket's or the pause's key.
	Key string

	// FreeAt is when the bucket's next slot is free (its TAT; for a
	// pause with a learned bucket, when that bucket next holds a
	// request), the zero Time for a pause without one or a bucket never
	// used.
	FreeAt time.Time

	// PausedUntil is until when a pause holds its calls (zero for a
	// bucket).
	PausedUntil time.Time

	// Learned is, for a pause, the provider's bucket Learn learned from
	// its answers (Limit requests refilled per Per, holding Limit); the
	// zero Rate when none is learned, and for a bucket.
	Learned Rate

	// LearnedAt is when the provider's headers last taught Learned.
	LearnedAt time.Time

	// Pace is, for a pause, the pace its 429s taught (see Pace); the zero
	// Pace when none is learned, and for a bucket.
	Pace Pace

	// Queued is how many calls of this process wait under the key now.
	Queued int

	// QueuedBatch is how many of Queued are Batch calls.
	QueuedBatch int

	// Waiting is, for a concurrency key, how many calls wait for one of
	// its slots in everything sharing the Store, per priority (nil for a
	// bucket or a pause: an Interactive call waiting for a slot in time
	// holds it in the bucket's schedule, and a Batch call holds none).
	Waiting map[Priority]int64

	// InFlight is, for a concurrency key
	// ("limit:<name>:<scope>:concurrent"), how many calls hold one of its
	// slots in everything sharing the Store (0 for a bucket or a pause).
	InFlight int64
}

// keysKeptFor is how long a key no call of this process waits under stays
// in the listing Buckets returns after its last use.
const keysKeptFor = 10 * time.Minute

// stats is a Limiter's counts: per limit name, and per key for Buckets.
// A call that is admitted at once touches only atomic counters and read
// locks: a lock is taken only to add a key or a limit name not seen
// before, and for the trim of idle keys.
type stats struct {
	limits   atomic.Pointer[map[string]*counts] // copied on write, under mu
	mu       sync.RWMutex                       // keys: read-locked to use one, locked to add or trim
	keys     map[string]*keyUse
	nextTrim atomic.Int64  // Unix nanoseconds
	prio     [2]prioCounts // Interactive, Batch
}

// prioCounts is PriorityStats, kept in atomic counters.
type prioCounts struct {
	queued            atomic.Int64
	admitted, refused atomic.Uint64
	waitedNS          atomic.Int64
}

// prioIndex is p's index in stats.prio.
func prioIndex(p Priority) int {
	if p == Batch {
		return 1
	}
	return 0
}

// counts is Stats, kept in atomic counters.
type counts struct {
	queued, inFlight          atomic.Int64
	admitted, refused, paused atomic.Uint64
}

type keyUse struct {
	queued atomic.Int64
	batch  atomic.Int64 // of queued, the Batch calls
	last   atomic.Int64 // Unix nanoseconds
}

// limit returns the counts of the limit name.
func (s *stats) limit(name string) *counts {
	if m := s.limits.Load(); m != nil {
		if c := (*m)[name]; c != nil {
			return c
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var next map[string]*counts
	if m := s.limits.Load(); m != nil {
		if c := (*m)[name]; c != nil {
			return c
		}
		next = maps.Clone(*m)
	} else {
		next = make(map[string]*counts)
	}
	c := &counts{}
	next[name] = c
	s.limits.Store(&next)
	return c
}

// each calls fn once per limit name of bs and gs, and for "pause".
func each(bs []bucket, gs []gate, fn func(name string)) {
	fn("pause")
	for i, b := range bs {
		if !b.learn && (i == 0 || bs[i-1].limit != b.limit) { // a learned bucket is the pause's
			fn(b.limit)
		}
	}
	for _, g := range gs {
		if !slices.ContainsFunc(bs, func(b bucket) bool { return b.limit == g.limit }) {
			fn(g.limit)
		}
	}
}

// enter counts a call of priority p that starts waiting under bs, gs and
// pause at now.
func (s *stats) enter(bs []bucket, gs []gate, pause string, now time.Time, p Priority) {
	at := now.UnixNano()
	if at >= s.nextTrim.Load() {
		s.trim(at)
	}
	s.prio[prioIndex(p)].queued.Add(1)
	b := p == Batch
	s.enterKey(pause, at, b)
	for _, bk := range bs {
		s.enterKey(bk.key, at, b)
	}
	for _, g := range gs {
		s.enterKey(g.key, at, b)
	}
	each(bs, gs, func(name string) { s.limit(name).queued.Add(1) })
}

// enterKey counts a call in the key's queued count and marks its use at
// at, listing the key if it is not yet.
func (s *stats) enterKey(key string, at int64, batch bool) {
	s.mu.RLock()
	ok := s.use(key, at, 1, batch)
	s.mu.RUnlock()
	if ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[string]*keyUse)
	}
	if s.keys[key] == nil {
		s.keys[key] = &keyUse{}
	}
	s.use(key, at, 1, batch)
}

// use adds delta to the key's queued count, and to its Batch count with
// batch (and, at not 0, marks its use then), with s.mu held; it reports
// false for a key not listed.
func (s *stats) use(key string, at, delta int64, batch bool) bool {
	u := s.keys[key]
	if u == nil {
		return false
	}
	u.queued.Add(delta)
	if batch {
		u.batch.Add(delta)
	}
	if at != 0 {
		u.last.Store(at)
	}
	return true
}

// leave counts a call of priority p that stops waiting.
func (s *stats) leave(bs []bucket, gs []gate, pause string, p Priority) {
	s.prio[prioIndex(p)].queued.Add(-1)
	b := p == Batch
	s.mu.RLock()
	s.use(pause, 0, -1, b)
	for _, bk := range bs {
		s.use(bk.key, 0, -1, b)
	}
	for _, g := range gs {
		s.use(g.key, 0, -1, b)
	}
	s.mu.RUnlock()
	each(bs, gs, func(name string) { s.limit(name).queued.Add(-1) })
}

// hold counts a call that takes (delta 1) or gives back (-1) an in-flight
// slot of the limit name.
func (s *stats) hold(name string, delta int64) {
	s.limit(name).inFlight.Add(delta)
}

// trim drops the keys unused for keysKeptFor, at most once a minute. A
// key a call waits under is never dropped: its count is above zero, and a
// call counts itself (read-locked) before trim (locked) can look.
func (s *stats) trim(at int64) {
	next := s.nextTrim.Load()
	if at < next || !s.nextTrim.CompareAndSwap(next, at+int64(time.Minute)) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, u := range s.keys {
		if u.queued.Load() == 0 && at-u.last.Load() >= int64(keysKeptFor) {
			delete(s.keys, k)
		}
	}
}

func (s *stats) admitted(bs []bucket) {
	each(bs, nil, func(name string) { s.limit(name).admitted.Add(1) })
}

// admittedGates counts a call admitted under the Concurrent limits of gs
// that have no bucket in bs (admitted counted the others).
func (s *stats) admittedGates(bs []bucket, gs []gate) {
	for _, g := range gs {
		if !slices.ContainsFunc(bs, func(b bucket) bool { return b.limit == g.limit }) {
			s.limit(g.limit).admitted.Add(1)
		}
	}
}

func (s *stats) refused(limit string) { s.limit(limit).refused.Add(1) }

// waited counts how a call of priority p ended its wait: admitted after
// waiting d (err nil), or refused by a limit.
func (s *stats) waited(p Priority, d time.Duration, err error) {
	c := &s.prio[prioIndex(p)]
	switch {
	case err == nil:
		c.admitted.Add(1)
		c.waitedNS.Add(int64(d))
	case errors.Is(err, ErrLimited):
		c.refused.Add(1)
	}
}

// PriorityStats counts, in this process, the calls of one priority.
type PriorityStats struct {
	// Queued is how many calls of the priority wait for a slot now.
	Queued int

	// Admitted is how many were admitted, Refused how many refused by a
	// limit.
	Admitted, Refused uint64

	// Waited is the time the admitted ones waited, summed.
	Waited time.Duration
}

// PriorityStats returns this process's counts per priority, by the
// priority each call started with (a Batch call promoted to Interactive
// is counted as Batch).
func (l *Limiter) PriorityStats() map[Priority]PriorityStats {
	out := make(map[Priority]PriorityStats, 2)
	for _, p := range []Priority{Interactive, Batch} {
		c := &l.stats.prio[prioIndex(p)]
		out[p] = PriorityStats{Queued: int(c.queued.Load()), Admitted: c.admitted.Load(), Refused: c.refused.Load(), Waited: time.Duration(c.waitedNS.Load())}
	}
	return out
}

func (s *stats) paused() { s.limit("pause").paused.Add(1) }

// Queued returns how many calls wait for a slot in this process now.
func (l *Limiter) Queued() int {
	if m := l.stats.limits.Load(); m != nil {
		if c := (*m)["pause"]; c != nil {
			return int(c.queued.Load()) // every call waits under its pause
		}
	}
	return 0
}

// Stats returns this process's counts per limit name, and under "pause"
// those of every call (each waits under its model's pause) with the
// pauses learned.
func (l *Limiter) Stats() map[string]Stats {
	m := l.stats.limits.Load()
	if m == nil {
		return map[string]Stats{}
	}
	out := make(map[string]Stats, len(*m))
	for k, c := range *m {
		out[k] = Stats{Queued: int(c.queued.Load()), InFlight: int(c.inFlight.Load()),
			Admitted: c.admitted.Load(), Refused: c.refused.Load(), Paused: c.paused.Load()}
	}
	return out
}

// Buckets lists, sorted by key, the buckets, concurrency keys and pauses
// this process used in the last ten minutes or waits under now, each with
// what the Store holds for it.
func (l *Limiter) Buckets() ([]Bucket, error) {
	l.stats.mu.RLock()
	list := make([]Bucket, 0, len(l.stats.keys))
	for k, u := range l.stats.keys {
		list = append(list, Bucket{Key: k, Queued: int(u.queued.Load()), QueuedBatch: int(u.batch.Load())})
	}
	l.stats.mu.RUnlock()
	slices.SortFunc(list, func(a, b Bucket) int { return strings.Compare(a.Key, b.Key) })
	st := l.store()
	for i := range list {
		var err error
		switch {
		case isPause(list[i].Key):
			var lr Learned
			lr, err = st.Learned(list[i].Key)
			list[i].PausedUntil, list[i].Learned, list[i].LearnedAt, list[i].Pace = lr.Until, lr.Rate, lr.RateAt, lr.Pace
			if err == nil && !list[i].Learned.IsZero() {
				var tat time.Time
				if tat, err = st.FreeAt(list[i].Key); !tat.IsZero() {
					list[i].FreeAt = tat.Add(-time.Duration(list[i].Learned.Tolerance(1)))
				}
			}
		case strings.HasSuffix(list[i].Key, ":concurrent"):
			list[i].InFlight, err = st.InFlight(list[i].Key)
			if err == nil {
				list[i].Waiting, err = waitingIn(st, list[i].Key)
			}
		default:
			list[i].FreeAt, err = st.FreeAt(list[i].Key)
		}
		if err != nil {
			return list, err
		}
	}
	return list, nil
}

// waitingIn returns how many calls wait for a slot of the concurrency
// key in st, per priority.
func waitingIn(st Store, key string) (map[Priority]int64, error) {
	wi, err1 := st.InFlight(waitingKey(key, Interactive))
	wb, err2 := st.InFlight(waitingKey(key, Batch))
	return map[Priority]int64{Interactive: wi, Batch: wb}, errors.Join(err1, err2)
}

func isPause(key string) bool { return strings.HasPrefix(key, "pause:") }
