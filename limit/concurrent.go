package limit

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// defaultLease is Limiter.Lease's default.
const defaultLease = 10 * time.Minute

// refusedRetry is the Wait of the *Error of a call refused by a Concurrent
// limit: a fixed hint, since when a call in flight ends is not known.
const refusedRetry = time.Second

// The head of a key's queue polls the Store for a slot another process
// gave back: first after pollFirst, each wait twice the one before up to
// pollMax, each drawn between half and all of that (jitter, so that the
// heads of several processes do not poll in step). A slot given back in
// this process wakes the head at once.
const (
	pollFirst = 2 * time.Millisecond
	pollMax   = 50 * time.Millisecond
)

// gate is one concurrency key a call falls under.
type gate struct {
	key   string
	limit string
	n     int64  // the limit's Concurrent
	st    Store  // the store the slot was taken in, once it is
	token uint64 // what st.Release needs
}

// lease returns l.Lease or its default.
func (l *Limiter) lease() time.Duration {
	if l.Lease > 0 {
		return l.Lease
	}
	return defaultLease
}

// acquireAll takes an in-flight slot in every gate of gs, in order, from
// st (or from l.local() once st fails), and reports whether the call had
// to queue for one. Refused, or when ctx ends, it gives back what it took.
func (l *Limiter) acquireAll(ctx context.Context, st Store, gs []gate, deadline time.Time) (queued bool, err error) {
	for i := range gs {
		q, err := l.acquire(ctx, st, &gs[i], deadline)
		if err != nil {
			l.releaseAll(gs[:i])
			return false, err
		}
		queued = queued || q
	}
	return queued, nil
}

// acquire takes an in-flight slot of g. The calls of this process wait
// for one in a queue per key, in their order of arrival: only the head of
// the queue asks the Store. It asks at once, again whenever a slot of the
// key is given back in this process, and else polls (pollFirst doubling to
// pollMax, with jitter) for slots given back elsewhere. When the deadline
// passes first, the call is refused with an *Error; when ctx ends, Wait
// returns its cause at once. Either way it takes nothing and leaves the
// queue, the next call becoming its head.
func (l *Limiter) acquire(ctx context.Context, st Store, g *gate, deadline time.Time) (queued bool, err error) {
	g.st = st
	if l.queues.empty(g.key) {
		// No call of this process waits for the key: ask the Store at
		// once, with no place in the queue to take.
		if ok, err := l.try(g); ok || err != nil {
			return false, err
		}
	}
	w, head := l.queues.join(g.key)
	defer l.queues.leave(g.key, w)
	if head {
		<-w.turn
		if ok, err := l.try(g); ok || err != nil {
			return false, err // the fast path: no timer
		}
	}
	if err := context.Cause(ctx); err != nil {
		return true, err
	}
	expire := time.NewTimer(time.Until(deadline))
	defer expire.Stop()
	poll := time.NewTimer(pollFirst)
	defer poll.Stop()
	if !head {
		poll.Stop() // only the head polls
	}
	backoff := pollFirst
	for {
		expired := false
		select {
		case <-w.turn:
			head = true
		case <-poll.C:
		case <-ctx.Done():
			return true, context.Cause(ctx)
		case <-expire.C:
			expired = true
			select {
			case <-w.turn:
				head = true
			default:
			}
		}
		if head {
			if ok, err := l.try(g); ok || err != nil {
				return true, err
			}
		}
		if expired {
			l.stats.refused(g.limit)
			return true, &Error{Key: g.key, Limit: g.limit, Wait: refusedRetry}
		}
		if head {
			backoff = min(2*backoff, pollMax)
			poll.Reset(backoff/2 + rand.N(backoff/2+1))
		}
	}
}

// try asks g's store for a slot once; when the shared Store fails, it
// tells OnError and asks this process's own memory instead, where the
// limit then holds for this process alone.
func (l *Limiter) try(g *gate) (bool, error) {
	token, ok, err := g.st.Acquire(g.key, g.n, l.lease())
	if err != nil && g.st == l.Store {
		l.storeFailed(err)
		g.st = l.local()
		token, ok, err = g.st.Acquire(g.key, g.n, l.lease())
	}
	if ok && err == nil {
		g.token = token
		l.stats.hold(g.limit, 1)
	}
	return ok, err
}

// pausedNow reports whether the pause key holds calls now in st. A pause
// the Store cannot read is taken as none: the call's slots are taken.
func (l *Limiter) pausedNow(st Store, pause string) bool {
	until, err := st.PausedUntil(pause)
	return err == nil && until.After(time.Now())
}

// releaseAll gives back the slots of gs and wakes the head of each key's
// queue in this process.
func (l *Limiter) releaseAll(gs []gate) {
	for _, g := range gs {
		if err := g.st.Release(g.key, g.token); err != nil {
			l.storeFailed(err)
		}
		l.stats.hold(g.limit, -1)
		l.queues.wake(g.key)
	}
}

// releaser returns the done of a call holding the slots of gs: it calls
// settle and gives the slots back, once.
func (l *Limiter) releaser(settle func(int64), gs []gate) func(int64) {
	var once atomic.Bool
	return func(used int64) {
		if !once.CompareAndSwap(false, true) {
			return
		}
		settle(used)
		l.releaseAll(gs)
	}
}

// queues holds, per concurrency key, the calls of this process that wait
// for an in-flight slot, first come first.
type queues struct {
	mu sync.Mutex
	m  map[string][]*waiter
}

// waiter is one call in a queue. Its turn holds a token when it is the
// head of the queue and should ask the Store (again).
type waiter struct{ turn chan struct{} }

// join puts a new waiter at the end of key's queue and reports whether it
// is the head; the head's turn is given at once.
func (q *queues) join(key string) (w *waiter, head bool) {
	w = &waiter{turn: make(chan struct{}, 1)}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = make(map[string][]*waiter)
	}
	q.m[key] = append(q.m[key], w)
	if len(q.m[key]) == 1 {
		w.turn <- struct{}{}
		return w, true
	}
	return w, false
}

// empty reports whether no call waits in key's queue.
func (q *queues) empty(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.m[key]) == 0
}

// leave takes w out of key's queue; the waiter after it, if it becomes
// the head, is given its turn.
func (q *queues) leave(key string, w *waiter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ws := q.m[key]
	for i, x := range ws {
		if x != w {
			continue
		}
		ws = append(ws[:i], ws[i+1:]...)
		if len(ws) == 0 {
			delete(q.m, key)
			return
		}
		q.m[key] = ws
		if i == 0 {
			give(ws[0])
		}
		return
	}
}

// wake gives the head of key's queue its turn: a slot was given back.
func (q *queues) wake(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ws := q.m[key]; len(ws) > 0 {
		give(ws[0])
	}
}

// give gives w its turn, unless it has one waiting.
func give(w *waiter) {
	select {
	case w.turn <- struct{}{}:
	default:
	}
}
