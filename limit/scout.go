package limit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// scouts start, per pause key that this process has not learned how to
// pace yet, the calls slowly: the first goes alone (the scout), and each
// answer that teaches nothing lets two more go, each call that ends one
// more (as TCP's slow start doubles its window each round trip), until an
// answer teaches a pace (a 429, or headers describing the provider's
// bucket) or slowStartMax calls went; then the key is started, and its
// calls go as its pace and buckets let them. A scope Sluice knows nothing
// of yet is thus sent a few calls, not a herd: a provider that enforces
// its limit in short bursts would otherwise answer a herd of callers
// starting at once with a 429 for each call past its burst, before the
// first answer could teach anything.
type scouts struct {
	mu   sync.Mutex
	out  map[string]*slowStart // key → its start while it lasts
	done sync.Map              // key → struct{}: keys started in this process
	n    atomic.Int64          // keys in done, at most maxGuesses
}

// slowStart is one key's start.
type slowStart struct {
	room int           // calls that may go now without waiting
	sent int           // calls let go so far, the scout included
	wake chan struct{} // closed, and replaced, when room is given or the start ends
}

// slowStartMax is how many calls a key's slow start lets go at most, if
// none of their answers teaches a pace: a provider that limits nothing
// the calls meet is then called freely.
const slowStartMax = 64

// wait lets the call go at once when key is started (or too many keys
// were, or are starting, to keep track), or when the start has room; it is then part of the
// start, and reports so in starting: its end must be told to ended.
// Else it waits for room, at most until deadline (then it goes anyway),
// and reports that it was held; or it returns ctx's cause when ctx ends
// first.
func (s *scouts) wait(ctx context.Context, key string, deadline time.Time) (starting, held bool, err error) {
	if _, ok := s.done.Load(key); ok || s.n.Load() >= maxGuesses {
		return false, false, nil
	}
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	s.mu.Lock()
	for {
		st, ok := s.out[key]
		if !ok {
			if _, started := s.done.Load(key); started || len(s.out) >= maxGuesses {
				// Started meanwhile; or too many keys start at once to
				// keep track of (distinct models by the thousand), and
				// this one goes freely.
				s.mu.Unlock()
				return false, held, nil
			}
			if s.out == nil {
				s.out = make(map[string]*slowStart)
			}
			s.out[key] = &slowStart{sent: 1, wake: make(chan struct{})} // the scout
			s.mu.Unlock()
			return true, held, nil
		}
		if st.room > 0 {
			st.room--
			s.mu.Unlock()
			return true, held, nil
		}
		ch := st.wake
		s.mu.Unlock()
		held = true
		if t == nil {
			t = time.NewTimer(time.Until(deadline))
		}
		select {
		case <-ch:
		case <-t.C:
			return false, true, nil
		case <-ctx.Done():
			return false, true, context.Cause(ctx)
		}
		s.mu.Lock()
	}
}

// answered notes an answer for key: one that teaches its pace ends its
// start; another lets two more calls go.
func (s *scouts) answered(key string, teaches bool) {
	if _, ok := s.done.Load(key); ok {
		return
	}
	if teaches {
		s.finish(key)
		return
	}
	s.grant(key, 2)
}

// ended notes that a call of key's start ended (answered or not): one
// more may go.
func (s *scouts) ended(key string) { s.grant(key, 1) }

// grant lets n more calls of key's start go, and ends the start once
// slowStartMax went.
func (s *scouts) grant(key string, n int) {
	s.mu.Lock()
	st, ok := s.out[key]
	if !ok {
		s.mu.Unlock()
		return
	}
	if st.sent+n >= slowStartMax {
		s.mu.Unlock()
		s.finish(key)
		return
	}
	st.room += n
	st.sent += n
	close(st.wake)
	st.wake = make(chan struct{})
	s.mu.Unlock()
}

// finish ends key's start: every call held for it goes.
func (s *scouts) finish(key string) {
	if _, loaded := s.done.LoadOrStore(key, struct{}{}); !loaded {
		s.n.Add(1)
	}
	s.mu.Lock()
	if st, ok := s.out[key]; ok {
		close(st.wake)
		delete(s.out, key)
	}
	s.mu.Unlock()
}
