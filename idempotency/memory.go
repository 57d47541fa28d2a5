package idempotency

import (
	"slices"
	"sync"
	"time"
)

// Memory is a Store for one process: the library's default, and tests'.
// The zero value is usable, with the default bounds. It is safe for
// concurrent use.
type Memory struct {
	// MaxAnswer is the largest answer body Keep keeps, in bytes. If zero,
	// DefaultMaxAnswer (8 MiB).
	MaxAnswer int64
	// MaxBytes bounds the kept answers together, encoded; past it Keep
	// drops those expiring first (with one ttl: the oldest) down to nine
	// tenths of it, never a mark. If zero, DefaultMaxBytes (512 MiB).
	MaxBytes int64

	mu    sync.Mutex
	ids   map[string]*memEntry
	bytes int64
}

// memEntry is one ID's mark and answer; an entry with neither is removed.
type memEntry struct {
	token   string
	markFP  [32]byte
	until   time.Time
	answer  []byte // encoded
	fp      [32]byte
	expires time.Time
}

func (e *memEntry) liveMark(now time.Time) bool { return e.token != "" && now.Before(e.until) }
func (e *memEntry) liveAnswer(now time.Time) bool {
	return e.answer != nil && now.Before(e.expires)
}

// Begin implements Store.
func (s *Memory) Begin(id string, fp [32]byte, lease time.Duration, now time.Time) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = make(map[string]*memEntry)
	}
	e := s.ids[id]
	if e == nil {
		e = &memEntry{}
		s.ids[id] = e
	}
	if e.liveAnswer(now) {
		if e.fp != fp {
			return Result{Verdict: Conflict}, nil
		}
		a := new(Answer)
		if err := a.UnmarshalBinary(e.answer); err != nil {
			return Result{}, err
		}
		return Result{Verdict: Replay, Answer: a}, nil
	}
	if e.liveMark(now) {
		if e.markFP != fp {
			return Result{Verdict: Conflict, Until: e.until}, nil
		}
		return Result{Verdict: InFlight, Until: e.until}, nil
	}
	s.dropAnswer(e)
	e.token, e.markFP, e.until = NewToken(), fp, now.Add(lease)
	return Result{Verdict: Run, Mark: Mark{ID: id, Token: e.token, Until: e.until}}, nil
}

// Keep implements Store.
func (s *Memory) Keep(m Mark, a *Answer, ttl time.Duration, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ids[m.ID]
	if e == nil || e.token != m.Token {
		return ErrMarkLost
	}
	e.token = ""
	if a.Size() > orDefault(s.MaxAnswer, DefaultMaxAnswer) {
		s.tidy(m.ID, e)
		return ErrTooLarge
	}
	k := *a
	k.Kept = now
	b, _ := k.MarshalBinary()
	s.dropAnswer(e)
	e.answer, e.fp, e.expires = b, e.markFP, now.Add(ttl)
	s.bytes += int64(len(b))
	s.evict(orDefault(s.MaxBytes, DefaultMaxBytes))
	return nil
}

// Release implements Store.
func (s *Memory) Release(m Mark) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.ids[m.ID]; e != nil && e.token == m.Token {
		e.token = ""
		s.tidy(m.ID, e)
	}
	return nil
}

// Sweep drops the answers and marks whose time has passed at now. The
// owner of a long-lived Memory calls it now and then (Keep evicts only
// past MaxBytes).
func (s *Memory) Sweep(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, e := range s.ids {
		if !e.liveAnswer(now) {
			s.dropAnswer(e)
		}
		if !e.liveMark(now) {
			e.token = ""
		}
		s.tidy(id, e)
	}
}

// Bytes returns the size of the answers kept, encoded.
func (s *Memory) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// evict drops the answers expiring first, when those kept pass max, down
// to nine tenths of max: one sort per tenth of max kept.
func (s *Memory) evict(max int64) {
	if s.bytes <= max {
		return
	}
	type kept struct {
		id string
		e  *memEntry
	}
	var all []kept
	for id, e := range s.ids {
		if e.answer != nil {
			all = append(all, kept{id, e})
		}
	}
	slices.SortFunc(all, func(a, b kept) int { return a.e.expires.Compare(b.e.expires) })
	for _, k := range all {
		if s.bytes <= max/10*9 {
			return
		}
		s.dropAnswer(k.e)
		s.tidy(k.id, k.e)
	}
}

func (s *Memory) dropAnswer(e *memEntry) {
	s.bytes -= int64(len(e.answer))
	e.answer = nil
}

// tidy removes e when it holds neither a mark nor an answer.
func (s *Memory) tidy(id string, e *memEntry) {
	if e.token == "" && e.answer == nil {
		delete(s.ids, id)
	}
}

var _ Store = (*Memory)(nil)
