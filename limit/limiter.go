package limit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/rest"
)

// Limiter admits calls under Limits, and under the pauses it learns from
// providers' answers, through Store: each call is given a slot in time in
// every bucket it falls under and waits for it, first come, first served
// among calls of one priority across everything sharing the Store
// (Interactive calls before Batch ones). The zero value admits every call.
// A Limiter is safe for concurrent use; do not change its fields once it
// is in use.
type Limiter struct {
	// Store holds the buckets and pauses. If nil, a Memory is used.
	Store Store

	// Limits are the limits calls are admitted under.
	Limits []Limit

	// SettlesUnused reports whether provider's own limiter gives back the
	// tokens a call reserved and did not use: some count max_tokens when
	// a call starts and correct to the output used, others count it and
	// keep it (a dialect says which: dialect.Traits.SettlesUnused). With
	// it true, a call's unused tokens go back to its buckets; else they
	// stay spent, as at the provider. A call that used more than its
	// estimate pays the rest either way. If nil, never.
	SettlesUnused func(provider string) bool

	// SharedLimits reports whether provider's rate limits are shared by all
	// its models (one account-wide limit), so that the pauses and buckets
	// Learn learns from its answers hold every call to it. If nil, or
	// false, they are each model's own, as the providers limit each model
	// (or each deployment, which is then the call's model) on its own. Set
	// it for a provider (an OpenAI-compatible server, say) that limits an
	// account or key as a whole.
	SharedLimits func(provider string) bool

	// OnError, if set, is told the Store's errors: a pause Learn could not
	// keep, or a Wait that fell back on this process's own memory (where
	// the limits then hold for this process alone) because the Store
	// failed. After an error the Store rests a second: the calls meanwhile
	// use this process's memory without asking it.
	OnError func(error)

	// Lease is how long a slot of a Concurrent limit is held at most by a
	// store that cannot tell when its holder died (Redis): a host that
	// crashes holding slots gives them back Lease after it took them.
	// Make it longer than the longest call (the engine bounds each by its
	// policy's total): a call that outlives it loses its slot to another.
	// If zero, 10 minutes is used.
	Lease time.Duration

	// Scout, if true, starts the calls of a scope (a pause key) that
	// this process has not learned to pace yet slowly, when no configured
	// request or token rate covers its provider: the first goes alone,
	// each answer that teaches nothing lets two more go and each call
	// that ends one more, until an answer teaches the scope's pace (a
	// 429, or headers describing the provider's bucket) or 64 calls went.
	// The calls that come meanwhile wait (at most their maximum wait),
	// instead of meeting the provider's burst limit all at once.
	Scout bool

	// PromoteAfter is how long a Batch call waits for a slot before it is
	// admitted as an Interactive one, so that a flood of Interactive calls
	// never starves it. If zero, 30s is used.
	PromoteAfter time.Duration

	once    sync.Once
	memory  *Memory
	rest    rest.Rest // the Store's, after it failed
	stats   stats
	queues  queues                           // per concurrency key, the calls waiting for an in-flight slot
	batch   queues                           // per bucket (or pause) key, the Batch calls waiting for a slot in time
	guesses guesses                          // per pause key, the learned rate last read
	scouts  scouts                           // per pause key not paced yet here, its slow start
	plans   atomic.Pointer[map[string]*plan] // copied on write, under plansMu
	plansMu sync.Mutex
}

// store returns l.Store, or the Memory that stands in for it.
func (l *Limiter) store() Store {
	if l.Store != nil {
		return l.Store
	}
	return l.local()
}

// active returns the store a call asks now: l.store(), or this process's
// own Memory while the Store rests after a failure (package rest).
func (l *Limiter) active() Store {
	if l.rest.Resting() {
		return l.local()
	}
	return l.store()
}

// storeFailed tells OnError that the Store failed with err, and rests the
// Store.
func (l *Limiter) storeFailed(err error) {
	l.rest.Fail(time.Now(), err)
	if l.OnError != nil {
		l.OnError(err)
	}
}

// local returns the process's own Memory: the store when none is given,
// and the one a call falls back on when the Store fails.
func (l *Limiter) local() Store {
	l.once.Do(func() { l.memory = NewMemory() })
	return l.memory
}

// bucket is one bucket a call falls under, with the call's cost in it.
type bucket struct {
	key      string
	limit    string
	rate     Rate
	cost     int64
	tokens   bool
	learn    bool      // the pause key's learned bucket
	reserve  float64   // the limit's Reserve
	batchKey string    // with a Reserve, the key of the share left to Batch calls
	slot     time.Time // the slot taken in it, while the call holds one
}

// Wait is called before each attempt of a call to provider's model. It
// takes a slot in every bucket the call falls under, not before the
// model's pause ends, and waits until the slot (the same instant in every
// bucket); then it returns how long it waited and done, which the caller
// calls once, when the attempt ends, with the tokens it used (0: unknown,
// the estimate stands), to settle the token buckets. A call's tokens are
// estimated as bodyBytes/4 + maxTokens.
//
// A call whose slot would be more than maxWait away is refused at once
// with an *Error (nothing is taken): its RetryAfter is when the slot would
// be, its Key the bucket or pause that refused it. When ctx ends while the
// call waits, Wait returns context.Cause(ctx) at once and cancels its
// reservations (given back where they are still their bucket's last). A
// pause set while the call waits is honoured when its wait ends: it gives
// its slots back and waits again, within maxWait of the call's start.
//
// Under a limit with Concurrent calls, once its slot in time is due, the
// call takes an in-flight slot, queueing for one while they are all taken
// (see Limiter.acquire): first come, first served in this process, within
// maxWait of its start; then it is refused with an *Error whose Wait is a
// fixed 1 s. A pause set while it queued is honoured as above. done gives
// the in-flight slots back, once however often it is called.
//
// The call's priority is its caller's (Interactive unless Batch): a
// waiting Interactive call goes before every waiting Batch call, in every
// process and host sharing the Store, and a Batch call may not take the
// share of a limit its Reserve keeps; see Priorities in the package doc.
func (l *Limiter) Wait(ctx context.Context, ask hook.Ask) (waited time.Duration, done func(usedTokens int64), err error) {
	provider, model := ask.Provider, ask.Model
	start := time.Now()
	if err := context.Cause(ctx); err != nil {
		return 0, nop, err
	}
	tokens := int64(max(ask.BodyBytes, 0))/4 + max(ask.MaxTokens, 0)
	p := l.plan(provider)
	bs, gs, err := l.buckets(p, ask.Caller.ID, provider, model, tokens)
	if err != nil {
		return 0, nop, err
	}
	prio, rank := l.rank(ask.Caller.Priority, start)
	both := bs // a Batch call's: bs and the buckets of the shares left to Batch calls
	if prio == Batch {
		both = withReserves(bs)
	}
	pause := p.pauseKey(provider, model)
	deadline := start.Add(max(ask.MaxWait, 0))
	starting, held := false, false
	if l.Scout && p.nb == 0 {
		// No configured rate holds the provider's calls: only what its
		// answers teach does, so they start slowly (see scouts). A call
		// held for room in the start waited, however it is let go then.
		if starting, held, err = l.scouts.wait(ctx, pause, deadline); err != nil {
			return time.Since(start), nop, err
		}
	}
	if starting {
		// A call of a scope's slow start: when it ends, another may go.
		defer func() {
			if err != nil {
				l.scouts.ended(pause)
				return
			}
			inner := done
			done = func(used int64) {
				l.scouts.ended(pause)
				inner(used)
			}
		}()
	}
	giveBack := l.SettlesUnused != nil && l.SettlesUnused(provider)
	l.stats.enter(bs, gs, pause, start, prio)
	defer l.stats.leave(bs, gs, pause, prio)
	st := l.active()
	tn := turn{ctx: ctx, st: st, bs: bs, both: both, pause: pause, start: start, rank: rank, deadline: deadline, giveBack: giveBack}
	all, fast, gated, err := l.admitOnce(&tn, gs) // bs, and the learned bucket of the pause key if there is one
	if err != nil {
		if !l.failed(ctx, st, err) {
			l.stats.waited(prio, time.Since(start), err)
			return time.Since(start), nop, err
		}
		st = l.local()
	}
	for {
		if fast {
			fast, waited, done = false, 0, settler(st, bs, giveBack)
		} else {
			tn.st = st
			waited, done, all, err = l.waitAt(&tn)
			if l.failed(ctx, st, err) {
				// The shared store failed: the limits hold in this process
				// alone until it answers again, rather than failing every call.
				for i := range both {
					both[i].slot = time.Time{}
				}
				st = l.local()
				tn.st = st
				waited, done, all, err = l.waitAt(&tn)
			}
		}
		if held {
			waited = max(waited, time.Since(start))
		}
		if err != nil || len(gs) == 0 {
			l.stats.waited(prio, waited, err)
			return waited, done, err
		}
		queued := false
		if !gated {
			queued, err = l.acquireAll(ctx, st, gs, deadline, rank)
		}
		gated = false
		if err != nil {
			cancelAll(st, all) // the call does not go: its slots in time are given back where they are still last
			l.stats.waited(prio, time.Since(start), err)
			return time.Since(start), nop, err
		}
		if queued && l.pausedNow(st, pause) {
			// Paused while it queued for its in-flight slots: it gives
			// every slot back and waits again.
			l.releaseAll(gs)
			cancelAll(st, all)
			continue
		}
		l.stats.admittedGates(bs, gs)
		if queued || held {
			waited = time.Since(start)
		}
		l.stats.waited(prio, waited, nil)
		return waited, l.releaser(done, gs), nil
	}
}

// turn is one call's wait for its slots in time, as the steps of Wait
// share it.
type turn struct {
	ctx      context.Context
	st       Store    // where it waits: the Store, or this process's own memory once that failed
	bs       []bucket // the buckets of its limits
	both     []bucket // a Batch call's: bs and the buckets of the shares left to Batch calls
	pause    string   // its pause key
	start    time.Time
	rank     time.Time // from when it counts as Interactive (see rank)
	deadline time.Time
	giveBack bool // its unused tokens go back to its buckets (SettlesUnused)
}

// waitAt is the wait for a slot in time on t's store: waitIn for a call
// that counts as Interactive (its rank has passed), waitBatch for a Batch
// one.
func (l *Limiter) waitAt(t *turn) (time.Duration, func(int64), []bucket, error) {
	if t.start.Before(t.rank) {
		return l.waitBatch(t)
	}
	for {
		waited, done, all, err := l.waitIn(t, t.bs, t.deadline, nil)
		var lt *later
		if !errors.As(err, &lt) {
			return waited, done, all, err
		}
		// A learned pace's slot beyond paceHorizon: looked at again when
		// it is that near, at the pace then.
		if err := sleep(t.ctx, lt.at.Add(-paceHorizon)); err != nil {
			return time.Since(t.start), nop, all, err
		}
	}
}

// paceHorizon is how far ahead a call takes a slot in time while its
// scope is paced by a pace learned from 429s: a slot further away is
// looked at again when it is that near. The pace rises with each answer,
// and slots taken far ahead at a lower pace would hold the calls to it
// for as long as the queue is long.
const paceHorizon = time.Second

// waitIn is Wait on t's store, for slots in bs (t's, or a Batch call's
// both). It returns the buckets it took slots in: bs, and the pause key's
// learned buckets when there are some. It takes
// no slot later than latest: a slot after it and not after the deadline
// is a *later error, and nothing is taken (Batch calls take no slot more
// than batchHorizon ahead; for others latest is the deadline). Once its
// slots are taken, before it waits for them, it calls reserved (if not
// nil).
func (l *Limiter) waitIn(t *turn, bs []bucket, latest time.Time, reserved func()) (time.Duration, func(int64), []bucket, error) {
	st, pause, start, deadline := t.st, t.pause, t.start, t.deadline
	for pass := 0; ; pass++ {
		now := time.Now()
		learned, err := st.Learned(pause)
		if err != nil {
			return time.Since(start), nop, bs, err
		}
		if st == l.store() {
			l.guesses.set(pause, learned)
		}
		until := learned.Until
		all := withLearned(bs, pause, learned)
		if !learned.Pace.IsZero() && latest.After(now.Add(paceHorizon)) {
			latest = now.Add(paceHorizon)
		}
		at := maxTime(now, until)
		if until.After(deadline) {
			w, d, err := l.refuse(all, &Error{Key: pause, Limit: "pause", Wait: at.Sub(now)}, start)
			return w, d, all, err
		}
		if until.After(latest) {
			return time.Since(start), nop, all, &later{at: until, key: pause, limit: "pause"}
		}
		at, err = reserveAll(st, all, at, latest)
		if err != nil {
			if e := (*Error)(nil); latest.Before(deadline) && errors.As(err, &e) {
				if slot := now.Add(e.Wait); !slot.After(deadline) {
					return time.Since(start), nop, all, &later{at: slot, key: e.Key, limit: e.Limit}
				}
			}
			w, d, err := l.refuse(all, err, start)
			return w, d, all, err
		}
		if reserved != nil {
			reserved()
		}
		if !at.After(time.Now()) {
			// Nothing to wait for: the pause read above still holds.
			l.stats.admitted(all)
			if pass == 0 {
				return 0, settler(st, bs, t.giveBack), all, nil // its slot was due when it asked: it did not wait
			}
			return time.Since(start), settler(st, bs, t.giveBack), all, nil
		}
		if err := sleep(t.ctx, at); err != nil {
			cancelAll(st, all)
			return time.Since(start), nop, all, err
		}
		until, err = st.PausedUntil(pause)
		if err != nil {
			cancelAll(st, all)
			return time.Since(start), nop, all, err
		}
		if !until.After(time.Now()) {
			l.stats.admitted(all)
			if !at.After(start) {
				return 0, settler(st, bs, t.giveBack), all, nil // its slot was free: no wait
			}
			return time.Since(start), settler(st, bs, t.giveBack), all, nil
		}
		cancelAll(st, all) // paused meanwhile: queue again
	}
}

// withLearned returns bs and, after them, the buckets learned for the
// pause key: the bucket Learn learned from the provider's headers and the
// pace learned from its 429s (PaceKey), a call's one request in each; bs
// itself when none is learned. The learned buckets refuse as the pause
// does: their limit is "pause".
func withLearned(bs []bucket, pause string, l Learned) []bucket {
	if l.Rate.IsZero() && l.Pace.IsZero() {
		return bs
	}
	all := make([]bucket, len(bs), len(bs)+2)
	copy(all, bs)
	if !l.Rate.IsZero() {
		all = append(all, bucket{key: pause, limit: "pause", rate: l.Rate, cost: 1, learn: true})
	}
	if !l.Pace.IsZero() {
		all = append(all, bucket{key: PaceKey(pause), limit: "pause", rate: l.Pace.Rate(), cost: 1, learn: true})
	}
	return all
}

// refuse counts a refusal and returns it.
func (l *Limiter) refuse(bs []bucket, err error, start time.Time) (time.Duration, func(int64), error) {
	var e *Error
	if errors.As(err, &e) {
		l.stats.refused(e.Limit)
	}
	return time.Since(start), nop, err
}

// slotTolerance is how much later than asked a bucket may hand out a slot
// and still count as giving the same instant: the time that passes between
// two reservations of one call, or the skew between this host's clock and
// the Store's (Redis's), which would otherwise move the instant on at
// every pass without end.
const slotTolerance = time.Millisecond

// reserveAll takes a slot at the same instant, not before at, in every
// bucket of bs, and returns it; a bucket whose slot is later moves the
// instant and the others are taken again. Refused, it takes nothing and
// returns an *Error. Each pass either ends or moves the instant on by
// more than slotTolerance, so the passes end at the latest when the
// instant passes the deadline, where a bucket refuses.
func reserveAll(st Store, bs []bucket, at, deadline time.Time) (time.Time, error) {
	for _, b := range bs { // look first, so that one pass mostly does
		free, err := st.FreeAt(b.key)
		if err != nil {
			return at, err
		}
		if tol := b.rate.Tolerance(b.cost); tol > 0 && !free.IsZero() {
			free = free.Add(-time.Duration(tol)) // a bucket with a Burst is free that long before its TAT
		}
		if free.After(at) && !free.After(deadline) {
			at = free
		}
	}
	for {
		next, behind, err := reserveAt(st, bs, at, deadline)
		if err != nil || !behind {
			return next, err
		}
		at = next // a bucket was behind the others: start again from its slot
	}
}

// reserveAt takes a slot at at in every bucket of bs, and returns the
// latest slot taken, at most slotTolerance after at (or after the first
// bucket's slot, when that is later: it becomes the instant). When a bucket's slot
// is later than that, it gives back what it took and returns that slot,
// behind. Refused, it takes nothing and returns an *Error.
func reserveAt(st Store, bs []bucket, at, deadline time.Time) (latest time.Time, behind bool, err error) {
	latest = at
	for i, b := range bs {
		now := time.Now()
		got, ok, err := st.Reserve(b.key, b.rate, b.cost, at, deadline.Sub(now))
		if err != nil {
			cancelAll(st, bs[:i])
			return at, false, err
		}
		if !ok {
			cancelAll(st, bs[:i])
			return at, false, &Error{Key: b.key, Limit: b.limit, Wait: got.Sub(now)}
		}
		if i == 0 && got.After(at) {
			// The first bucket is behind: no other slot is taken yet to
			// move, so its slot is the instant. (Giving it back to take it
			// again would lose it when another call reserved meanwhile.)
			at = got
		}
		if got.After(at.Add(slotTolerance)) {
			cancelAll(st, bs[:i])
			st.Cancel(b.key, b.rate, got, b.cost)
			return got, true, nil
		}
		bs[i].slot = got
		latest = maxTime(latest, got)
	}
	return latest, false, nil
}

// cancelAll gives back the slots taken in bs.
func cancelAll(st Store, bs []bucket) {
	for _, b := range bs {
		st.Cancel(b.key, b.rate, b.slot, b.cost)
	}
}

// settler returns the done of an admitted call: the token buckets pay for
// what the call used beyond its estimate, and, with giveBack, get back
// what it did not use.
func settler(st Store, bs []bucket, giveBack bool) func(int64) {
	if !slices.ContainsFunc(bs, func(b bucket) bool { return b.tokens }) {
		return nop // nothing to settle
	}
	var once atomic.Bool
	return func(used int64) {
		if !once.CompareAndSwap(false, true) || used <= 0 {
			return
		}
		for _, b := range bs {
			if b.tokens && (used > b.cost || giveBack && used < b.cost) {
				st.Settle(b.key, b.rate, used-b.cost)
			}
		}
	}
}

func nop(int64) {}

// sleep waits until at, or until ctx ends (its cause is returned).
func sleep(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
