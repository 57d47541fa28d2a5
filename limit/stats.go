package limit

import (
	"slices"
	"strings"
	"sync"
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

	// FreeAt is when the bucket's next slot is free (its TAT), the zero
	// Time for a pause or a bucket never used.
	FreeAt time.Time

	// PausedUntil is until when a pause holds its calls (zero for a
	// bucket).
	PausedUntil time.Time

	// Queued is how many calls of this process wait under the key now.
	Queued int

	// InFlight is, for a concurrency key
	// ("limit:<name>:<scope>:concurrent"), how many calls hold one of its
	// slots in everything sharing the Store (0 for a bucket or a pause).
	InFlight int64
}

// keysKeptFor is how long a key no call of this process waits under stays
// in the listing Buckets returns after its last use.
const keysKeptFor = 10 * time.Minute

// stats is a Limiter's counts: per limit name, and per key for Buckets.
type stats struct {
	mu       sync.Mutex
	limits   map[string]*Stats
	keys     map[string]*keyUse
	nextTrim time.Time
}

type keyUse struct {
	queued int
	last   time.Time
}

func (s *stats) limit(name string) *Stats {
	if s.limits == nil {
		s.limits = make(map[string]*Stats)
	}
	st := s.limits[name]
	if st == nil {
		st = &Stats{}
		s.limits[name] = st
	}
	return st
}

// each calls fn once per limit name of bs and gs, and for "pause".
func each(bs []bucket, gs []gate, fn func(name string)) {
	fn("pause")
	for i, b := range bs {
		if i == 0 || bs[i-1].limit != b.limit {
			fn(b.limit)
		}
	}
	for _, g := range gs {
		if !slices.ContainsFunc(bs, func(b bucket) bool { return b.limit == g.limit }) {
			fn(g.limit)
		}
	}
}

// enter counts a call that starts waiting under bs, gs and pause at now.
func (s *stats) enter(bs []bucket, gs []gate, pause string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[string]*keyUse)
	}
	s.trim(now)
	use := func(key string) {
		u := s.keys[key]
		if u == nil {
			u = &keyUse{}
			s.keys[key] = u
		}
		u.queued++
		u.last = now
	}
	use(pause)
	for _, b := range bs {
		use(b.key)
	}
	for _, g := range gs {
		use(g.key)
	}
	each(bs, gs, func(name string) { s.limit(name).Queued++ })
}

// leave counts a call that stops waiting.
func (s *stats) leave(bs []bucket, gs []gate, pause string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[pause].queued--
	for _, b := range bs {
		s.keys[b.key].queued--
	}
	for _, g := range gs {
		s.keys[g.key].queued--
	}
	each(bs, gs, func(name string) { s.limit(name).Queued-- })
}

// hold counts a call that takes (delta 1) or gives back (-1) an in-flight
// slot of the limit name.
func (s *stats) hold(name string, delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit(name).InFlight += delta
}

// trim drops the keys unused for keysKeptFor, at most once a minute.
func (s *stats) trim(now time.Time) {
	if now.Before(s.nextTrim) {
		return
	}
	s.nextTrim = now.Add(time.Minute)
	for k, u := range s.keys {
		if u.queued == 0 && now.Sub(u.last) >= keysKeptFor {
			delete(s.keys, k)
		}
	}
}

func (s *stats) admitted(bs []bucket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	each(bs, nil, func(name string) { s.limit(name).Admitted++ })
}

// admittedGates counts a call admitted under the Concurrent limits of gs
// that have no bucket in bs (admitted counted the others).
func (s *stats) admittedGates(bs []bucket, gs []gate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range gs {
		if !slices.ContainsFunc(bs, func(b bucket) bool { return b.limit == g.limit }) {
			s.limit(g.limit).Admitted++
		}
	}
}

func (s *stats) refused(limit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit(limit).Refused++
}

func (s *stats) paused() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit("pause").Paused++
}

// Queued returns how many calls wait for a slot in this process now.
func (l *Limiter) Queued() int {
	l.stats.mu.Lock()
	defer l.stats.mu.Unlock()
	if st := l.stats.limits["pause"]; st != nil {
		return st.Queued // every call waits under its pause
	}
	return 0
}

// Stats returns this process's counts per limit name, and under "pause"
// those of every call (each waits under its model's pause) with the
// pauses learned.
func (l *Limiter) Stats() map[string]Stats {
	l.stats.mu.Lock()
	defer l.stats.mu.Unlock()
	out := make(map[string]Stats, len(l.stats.limits))
	for k, v := range l.stats.limits {
		out[k] = *v
	}
	return out
}

// Buckets lists, sorted by key, the buckets, concurrency keys and pauses
// this process used in the last ten minutes or waits under now, each with
// what the Store holds for it.
func (l *Limiter) Buckets() ([]Bucket, error) {
	l.stats.mu.Lock()
	list := make([]Bucket, 0, len(l.stats.keys))
	for k, u := range l.stats.keys {
		list = append(list, Bucket{Key: k, Queued: u.queued})
	}
	l.stats.mu.Unlock()
	slices.SortFunc(list, func(a, b Bucket) int { return strings.Compare(a.Key, b.Key) })
	st := l.store()
	for i := range list {
		var err error
		switch {
		case isPause(list[i].Key):
			list[i].PausedUntil, err = st.PausedUntil(list[i].Key)
		case strings.HasSuffix(list[i].Key, ":concurrent"):
			list[i].InFlight, err = st.InFlight(list[i].Key)
		default:
			list[i].FreeAt, err = st.FreeAt(list[i].Key)
		}
		if err != nil {
			return list, err
		}
	}
	return list, nil
}

func isPause(key string) bool { return strings.HasPrefix(key, "pause:") }
