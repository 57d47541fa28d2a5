package sluice

import (
	"sync"
	"sync/atomic"
	"time"
)

// refusalPeriod is how often, at most, the attempt log writes a line for
// the calls one breaker or one budget refuses.
const refusalPeriod = time.Second

// maxFoldedIDs bounds the request ids one folded line lists: a key whose
// refusals in a period pass it gets a line for each maxFoldedIDs of them,
// so that no line grows without end and every id is still written.
const maxFoldedIDs = 256

// refusals folds the log lines of refused calls: per key (a breaker's or
// a budget's name), the first refusal in a quiet period is written at
// once, and later ones within refusalPeriod are counted and written as one
// line when the period is over. Time enters as the attempts' TS, so the
// logic is pure. It is safe for concurrent use.
type refusals struct {
	mu   sync.Mutex
	keys map[string]*refusalKey
	due  atomic.Int64 // when the earliest pending count is due, in Unix ns; 0 when none
}

// refusalKey is the state of one key.
type refusalKey struct {
	last    time.Time // when its last line was written
	pending int       // refusals counted since that line
	ids     []string  // their request ids, in order
	latest  Attempt   // the latest of those, written when they are flushed
}

// take returns the line for the refusals pending under k, and forgets
// them.
func (k *refusalKey) take() Attempt {
	line := k.latest
	line.Refused, line.RefusedIDs = k.pending, k.ids
	k.pending, k.ids = 0, nil
	return line
}

// admit counts a refusal under key at a.TS. It returns how many refusals
// the line for a must carry, their ids set in a.RefusedIDs, or 0 when a is
// folded into a later line.
func (r *refusals) admit(key string, a *Attempt) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = make(map[string]*refusalKey)
	}
	k := r.keys[key]
	if k == nil {
		k = &refusalKey{}
		r.keys[key] = k
	}
	k.pending++
	k.ids = append(k.ids, a.RequestID)
	if !k.last.IsZero() && a.TS.Sub(k.last) < refusalPeriod && len(k.ids) < maxFoldedIDs {
		k.latest = *a
		r.soon(k.last.Add(refusalPeriod))
		return 0
	}
	n, ids := k.pending, k.ids
	k.pending, k.ids, k.last = 0, nil, a.TS
	a.RefusedIDs = ids
	return n
}

// overdue returns, and forgets, the folded refusals whose period ended by
// now: one line per key, carrying its count.
func (r *refusals) overdue(now time.Time) []Attempt {
	if d := r.due.Load(); d == 0 || now.UnixNano() < d {
		return nil // the fast path of every line written
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Attempt
	r.due.Store(0)
	for _, k := range r.keys {
		if k.pending == 0 {
			continue
		}
		if next := k.last.Add(refusalPeriod); now.Before(next) {
			r.soon(next)
			continue
		}
		out = append(out, k.take())
		k.last = now
	}
	return out
}

// all returns, and forgets, every folded refusal, due or not.
func (r *refusals) all() []Attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Attempt
	for _, k := range r.keys {
		if k.pending > 0 {
			out = append(out, k.take())
		}
	}
	r.due.Store(0)
	return out
}

// soon notes that a pending count is due at t. The caller holds mu.
func (r *refusals) soon(t time.Time) {
	if d := r.due.Load(); d == 0 || t.UnixNano() < d {
		r.due.Store(t.UnixNano())
	}
}
