package limit

import (
	"context"
	"math/rand/v2"
	"slices"
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
	key      string
	limit    string
	n        int64     // the limit's Concurrent
	reserved int64     // of n, the slots Batch calls may not take (Limit.Reserve)
	waiting  [2]string // the keys counting the calls waiting for a slot: waitingKey's, Interactive and Batch
	st       Store     // the store the slot was taken in, once it is
	token    uint64    // what st.Release needs
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
// rank is the instant from which the call counts as Interactive.
func (l *Limiter) acquireAll(ctx context.Context, st Store, gs []gate, deadline, rank time.Time) (queued bool, err error) {
	for i := range gs {
		q, err := l.acquire(ctx, st, &gs[i], deadline, rank)
		if err != nil {
			l.releaseAll(gs[:i])
			return false, err
		}
		queued = queued || q
	}
	return queued, nil
}

// acquire takes an in-flight slot of g. The calls of this process wait
// for one in a queue per key, in the order of their ranks (Interactive
// calls first come first served, then Batch ones; a Batch call that has
// waited PromoteAfter is Interactive): only the head of the queue asks
// the Store. It asks at once, again whenever a slot of the key is given
// back in this process or the head changes, and else polls (pollFirst
// doubling to pollMax, with jitter) for slots given back elsewhere. While
// it queues, the call is counted in the Store as waiting at its priority
// (see waitingKey), so that a Batch head in any process sharing the Store
// leaves a freed slot to an Interactive call waiting anywhere. When the
// deadline passes first, the call is refused with an *Error; when ctx
// ends, Wait returns its cause at once. Either way it takes nothing and
// leaves the queue.
func (l *Limiter) acquire(ctx context.Context, st Store, g *gate, deadline, rank time.Time) (queued bool, err error) {
	g.st = st
	if l.queues.empty(g.key) {
		// No call of this process waits for the key: ask the Store at
		// once, with no place in the queue to take.
		if ok, err := l.try(g, rank); ok || err != nil {
			return false, err
		}
	}
	w := l.queues.join(g.key, rank.UnixNano())
	defer l.queues.leave(g.key, w)
	if l.queues.head(g.key, w) {
		<-w.turn
		if ok, err := l.try(g, rank); ok || err != nil {
			return false, err // the fast path: no timer
		}
	}
	if err := context.Cause(ctx); err != nil {
		return true, err
	}
	wr := l.enqueue(g, rank, deadline)
	defer func() { wr.dequeue() }()
	expire := time.NewTimer(time.Until(deadline))
	defer expire.Stop()
	poll := time.NewTimer(pollFirst)
	defer poll.Stop()
	var promote <-chan time.Time
	if d := time.Until(rank); d > 0 {
		pt := time.NewTimer(d)
		defer pt.Stop()
		promote = pt.C
	}
	backoff := pollFirst
	for {
		expired := false
		select {
		case <-w.turn:
		case <-poll.C:
		case <-promote:
			promote = nil
			wr.dequeue()
			wr = l.enqueue(g, rank, deadline) // now Interactive
		case <-ctx.Done():
			return true, context.Cause(ctx)
		case <-expire.C:
			expired = true
		}
		if l.queues.head(g.key, w) {
			if ok, err := l.try(g, rank); ok || err != nil {
				return true, err
			}
			backoff = min(2*backoff, pollMax)
			poll.Reset(backoff/2 + rand.N(backoff/2+1))
		}
		if expired {
			l.stats.refused(g.limit)
			return true, &Error{Key: g.key, Limit: g.limit, Wait: refusedRetry}
		}
	}
}

// try asks g's store for a slot once; when the shared Store fails, it
// tells OnError and asks this process's own memory instead, where the
// limit then holds for this process alone. A call that is Batch at now
// (before its rank) may not take the slots the limit reserves, nor a
// slot while an Interactive call waits for one in the Store.
func (l *Limiter) try(g *gate, rank time.Time) (bool, error) {
	n := g.n
	if time.Now().Before(rank) {
		n -= g.reserved
		if n <= 0 {
			return false, nil
		}
		if w, err := g.st.InFlight(g.waiting[0]); err == nil && w > 0 {
			return false, nil
		}
	}
	token, ok, err := g.st.Acquire(g.key, n, l.lease())
	if err != nil && g.st == l.Store {
		l.storeFailed(err)
		g.st = l.local()
		token, ok, err = g.st.Acquire(g.key, n, l.lease())
	}
	if ok && err == nil {
		g.token = token
		l.stats.hold(g.limit, 1)
	}
	return ok, err
}

// waiting is a call counted in the Store as waiting for an in-flight
// slot of a key at a priority; dequeue takes it out, once.
type waiting struct {
	st    Store
	key   string
	token uint64
	held  bool
}

// enqueue counts the call of g that is Interactive from rank on as
// waiting for a slot of g's key in g's store, at its priority now, until
// its deadline (and a second) at most: a store that cannot tell when its
// holder died (Redis) drops it then. A store error is told to OnError;
// the call then waits uncounted.
func (l *Limiter) enqueue(g *gate, rank, deadline time.Time) *waiting {
	p := Interactive
	if time.Now().Before(rank) {
		p = Batch
	}
	wr := &waiting{st: g.st, key: g.waiting[prioIndex(p)]}
	token, ok, err := wr.st.Acquire(wr.key, maxWaiters, time.Until(deadline)+time.Second)
	if err != nil && l.OnError != nil {
		l.OnError(err)
	}
	wr.token, wr.held = token, ok && err == nil
	return wr
}

// dequeue takes the call out of the waiting count, once.
func (wr *waiting) dequeue() {
	if wr.held {
		wr.held = false
		wr.st.Release(wr.key, wr.token)
	}
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

// queues holds, per key, the calls of this process that wait there, in
// the order of their ranks (see Limiter.rank), equal ranks first come
// first.
type queues struct {
	mu sync.Mutex
	m  map[string][]*waiter
}

// waiter is one call in a queue. Its turn holds a token when it is the
// head of the queue and should ask the Store (again).
type waiter struct {
	turn chan struct{}
	rank int64 // Unix nanoseconds
}

// join puts a new waiter of rank into key's queue, after those of a rank
// not later; when it is the head it is given its turn at once.
func (q *queues) join(key string, rank int64) *waiter {
	w := &waiter{turn: make(chan struct{}, 1), rank: rank}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = make(map[string][]*waiter)
	}
	ws := q.m[key]
	i := len(ws)
	for i > 0 && ws[i-1].rank > rank {
		i--
	}
	q.m[key] = slices.Insert(ws, i, w)
	if i == 0 {
		give(w)
	}
	return w
}

// head reports whether w is the head of key's queue.
func (q *queues) head(key string, w *waiter) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	ws := q.m[key]
	return len(ws) > 0 && ws[0] == w
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
	i := slices.Index(ws, w)
	if i < 0 {
		return
	}
	ws = slices.Delete(ws, i, i+1)
	if len(ws) == 0 {
		delete(q.m, key)
		return
	}
	q.m[key] = ws
	if i == 0 {
		give(ws[0])
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
