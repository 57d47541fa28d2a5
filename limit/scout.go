package limit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// scouts hold back, per pause key that this process has never had an
// answer for, every call but the first until that first one is answered:
// a scope Sluice knows nothing of yet is sent one call, not a herd, and
// the answer (its headers, or its 429) tells how to pace the others. A
// provider that enforces its limit in short bursts would otherwise answer
// a herd of callers starting at once with a 429 for each call past its
// burst, before the first answer could teach anything.
type scouts struct {
	mu   sync.Mutex
	out  map[string]chan struct{} // key → closed when its scout is answered or ends
	done sync.Map                 // key → struct{}: keys answered in this process
	n    atomic.Int64             // keys in done, at most maxGuesses
}

// wait lets the call go at once when key was answered before in this
// process (or too many keys were to keep track), or when it is key's
// first call: it is then the scout, and first reports so. Else it waits
// for the scout's answer, at most until deadline (then it goes anyway),
// and reports that it was held; or it returns ctx's cause when ctx ends
// first.
func (s *scouts) wait(ctx context.Context, key string, deadline time.Time) (first, held bool, err error) {
	if _, ok := s.done.Load(key); ok || s.n.Load() >= maxGuesses {
		return false, false, nil
	}
	s.mu.Lock()
	ch, ok := s.out[key]
	if !ok {
		if s.out == nil {
			s.out = make(map[string]chan struct{})
		}
		s.out[key] = make(chan struct{})
		s.mu.Unlock()
		return true, false, nil
	}
	s.mu.Unlock()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
		return false, true, context.Cause(ctx)
	}
	return false, true, nil
}

// answered notes that key had an answer: its scout's waiters go.
func (s *scouts) answered(key string) {
	if _, ok := s.done.Load(key); ok {
		return
	}
	if _, loaded := s.done.LoadOrStore(key, struct{}{}); !loaded {
		s.n.Add(1)
	}
	s.mu.Lock()
	if ch, ok := s.out[key]; ok {
		close(ch)
		delete(s.out, key)
	}
	s.mu.Unlock()
}
