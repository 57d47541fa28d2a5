package limit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// batchHorizon is how far ahead of now a Batch call may take a slot in
// time. An Interactive call takes the first free slot however far it is,
// so that the buckets' schedules (their TATs) hold every Interactive call
// waiting, in every process and host sharing the Store; a Batch call
// waits, holding no slot, until the first free slot is this near, then
// takes it. So an Interactive call that comes while Batch calls wait
// finds at most this much of Batch calls ahead of it. It is long enough
// for a Batch call woken for a slot to take it before it passes (a slot
// that passes untaken is lost: buckets bank no idle time).
const batchHorizon = 25 * time.Millisecond

// batchRecheck bounds a Batch call's sleep before it looks at the buckets
// again: a slot given back (Cancel, Settle) can come earlier than the
// bucket said.
const batchRecheck = time.Second

// later is waitIn's answer to a call that may not take a slot as far as
// the first free one: when that slot is and which key set it.
type later struct {
	at         time.Time
	key, limit string
}

func (e *later) Error() string {
	return fmt.Sprintf("limit: the next slot of %s is at %v, beyond the horizon", e.key, e.at)
}

// waitBatch is the wait of a Batch call for its slot in time. The Batch
// calls of this process wait in a queue per key (their first bucket's, or
// the pause key's), in the order of their ranks: first come, first served.
// Only the head looks at the buckets: it takes the first free slot when it
// is at most batchHorizon away (in both: bs and the buckets of the shares
// left to Batch calls), and else sleeps until it is (at most
// batchRecheck). Once it took its slot the next call is the head. A call
// whose rank passes (it has waited PromoteAfter) leaves the queue and
// waits as an Interactive call, out of bs alone; one whose deadline
// passes is refused, as is the head when the first free slot is beyond
// its deadline.
func (l *Limiter) waitBatch(t *turn) (time.Duration, func(int64), []bucket, error) {
	qkey := t.pause
	if len(t.bs) > 0 {
		qkey = t.bs[0].key
	}
	if l.batch.empty(qkey) {
		// No Batch call of this process waits before it: its slot, if it
		// is near, at once (the fast path: no place in the queue).
		now := time.Now()
		waited, done, all, err := l.waitIn(t, t.both, minTime(t.deadline, now.Add(batchHorizon)), nil)
		if _, later := err.(*later); !later {
			return waited, done, all, err
		}
	}
	return l.queueBatch(t, qkey)
}

// queueBatch is waitBatch once the call queues: see there.
func (l *Limiter) queueBatch(t *turn, qkey string) (time.Duration, func(int64), []bucket, error) {
	bs, both, start, rank, deadline := t.bs, t.both, t.start, t.rank, t.deadline
	w := l.batch.join(qkey, rank.UnixNano())
	leave := func() {
		if w != nil {
			l.batch.leave(qkey, w)
			w = nil
		}
	}
	defer leave()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		if !now.Before(rank) { // promoted: from now on it is Interactive
			leave()
			return l.waitIn(t, bs, deadline, nil)
		}
		wake := minTime(rank, deadline)
		if w == nil || l.batch.head(qkey, w) {
			waited, done, all, err := l.waitIn(t, both, minTime(deadline, now.Add(batchHorizon)), leave)
			var lt *later
			if !errors.As(err, &lt) {
				return waited, done, all, err
			}
			wake = minTime(wake, maxTime(lt.at.Add(-batchHorizon), now.Add(time.Millisecond)), now.Add(batchRecheck))
			if !now.Before(deadline) {
				w, d, err := l.refuse(all, &Error{Key: lt.key, Limit: lt.limit, Wait: lt.at.Sub(now)}, start)
				return w, d, all, err
			}
			if w == nil { // paused after it took its slots: back in the queue
				w = l.batch.join(qkey, rank.UnixNano())
				continue
			}
		} else if !now.Before(deadline) {
			// Its time is up behind other Batch calls: refused, with the
			// wait a call in flight's end gives as a hint.
			key, name := t.pause, "pause"
			if len(bs) > 0 {
				key, name = bs[0].key, bs[0].limit
			}
			w, d, err := l.refuse(both, &Error{Key: key, Limit: name, Wait: refusedRetry}, start)
			return w, d, both, err
		}
		timer.Reset(time.Until(wake))
		select {
		case <-w.turn:
		case <-timer.C:
		case <-t.ctx.Done():
			return time.Since(start), nop, both, context.Cause(t.ctx)
		}
	}
}

func minTime(a, b time.Time, more ...time.Time) time.Time {
	if b.Before(a) {
		a = b
	}
	for _, t := range more {
		if t.Before(a) {
			a = t
		}
	}
	return a
}
