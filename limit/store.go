package limit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Store holds buckets (each a theoretical arrival time, TAT) and pauses,
// named by key, and changes each atomically. Memory keeps them in one
// process, File in a state directory shared by the processes of a host.
// A Store is safe for concurrent use.
type Store interface {
	// Reserve runs Step on the bucket key at the store's clock: it takes
	// a slot for cost units of r, not before notBefore and at most
	// maxWait from now, and returns when the slot starts. When ok is
	// false nothing was taken and at is when the slot would be.
	Reserve(key string, r Rate, cost int64, notBefore time.Time, maxWait time.Duration) (at time.Time, ok bool, err error)

	// Cancel gives back a reservation made at at for cost units, if it is
	// still the bucket's last (TAT == at + r.Interval(cost): the TAT goes
	// back to at; in a bucket with a Burst, also TAT == at + τ +
	// r.Interval(cost), a reservation that waited for the bucket: back to
	// at + τ, τ the tolerance of Step). Otherwise it does nothing: the
	// slot is lost, never handed out twice.
	Cancel(key string, r Rate, at time.Time, cost int64) error

	// Settle corrects the bucket by delta units of r, what a call used
	// minus what it reserved. A positive delta moves the TAT later by
	// r.Interval(delta), as if the reservation had been that much larger.
	// A negative delta moves a TAT that is in the future earlier by
	// r.Interval(-delta) rounded down, never below now: a bucket never
	// banks idle time (that would be a burst), and what a call did not
	// use goes to the next reservation.
	Settle(key string, r Rate, delta int64) error

	// Pause holds key until until, keeping the later of the pause it has
	// and until.
	Pause(key string, until time.Time) error

	// Resume ends key's pause now, whatever it held: an operator's reset.
	Resume(key string) error

	// Learn keeps what a provider's answers tell of the pause key key's
	// bucket: its rate is r (r.Limit units refilled per r.Per; the bucket
	// holds r.Limit, whatever r.Burst says), and at least used units are
	// out of it now: its TAT becomes at least now + used·r.Interval(1). A
	// TAT in the future that was held out at another rate is first scaled
	// to r (TAT − now times the ratio of the intervals), so that the
	// units it holds out stay as many.
	Learn(key string, r Rate, used int64) error

	// Learned returns what the pause key key holds: until when it holds
	// calls (as PausedUntil), the rate Learn last kept for it (with Burst
	// = Limit; the zero Rate if none) and when, and its Pace.
	Learned(key string) (Learned, error)

	// Pace runs PaceStep on the pace of the pause key key, at the store's
	// clock, and returns the pace it left.
	Pace(key string, e PaceEvent) (Pace, error)

	// PausedUntil returns until when key is paused (a time in the past,
	// or the zero Time, when it is not).
	PausedUntil(key string) (time.Time, error)

	// FreeAt returns the bucket's TAT: when its next slot is free, if it
	// is in the future (the zero Time for a bucket never used).
	FreeAt(key string) (time.Time, error)

	// Acquire takes one of the limit in-flight slots of the concurrency
	// key, if fewer than limit are taken; ok is false, and nothing is
	// taken, when they all are. A store that cannot tell when a holder
	// died gives its slot back lease after it was taken. The token is what
	// Release needs (0 from a store that needs none).
	Acquire(key string, limit int64, lease time.Duration) (token uint64, ok bool, err error)

	// Release gives back the slot of key that Acquire took with token.
	// The caller releases each slot once.
	Release(key string, token uint64) error

	// InFlight returns how many slots of the concurrency key are taken.
	InFlight(key string) (int64, error)
}

// Learned is what a pause key holds: see Store.Learned.
type Learned struct {
	// Until is until when the key holds calls: a time in the past, or the
	// zero Time, when it does not.
	Until time.Time

	// Rate is the bucket learned from the provider's headers (Burst =
	// Limit); the zero Rate when none is.
	Rate Rate

	// RateAt is when the headers last taught Rate.
	RateAt time.Time

	// Pace is the pace learned from the scope's 429s.
	Pace Pace
}

// failed reports whether err is a failure of the shared Store st, which
// OnError is told (and which rests the Store), and after which the call
// falls back on l.local().
func (l *Limiter) failed(ctx context.Context, st Store, err error) bool {
	var refusal *Error
	if err == nil || l.Store == nil || st != l.Store || ctx.Err() != nil || errors.As(err, &refusal) {
		return false
	}
	l.storeFailed(err)
	return true
}

// idleMargin is how long both a record's TAT and its pause must have been
// in the past before a sweep may remove it. A record in the past limits
// nothing (a slot is never earlier than now), so removing it changes no
// reservation; the margin leaves Cancel and Settle of calls that just
// ended their record to act on.
const idleMargin = time.Minute

// memorySweepEvery is how often a Memory sweeps its idle records, at most.
const memorySweepEvery = time.Minute

// Memory is a Store for one process. The zero value is usable. Records
// idle for idleMargin (one minute: TAT and pause both that far in the
// past) are removed by a sweep that runs at most once a minute, from
// Reserve.
type Memory struct {
	mu        sync.Mutex
	recs      map[string]*memRecord
	inFlight  map[string]int64 // slots taken per concurrency key; none at 0
	nextSweep int64
	now       func() time.Time // if nil, time.Now; tests set it
}

type memRecord struct {
	tat, paused, limit, per, rateAt int64
	pace                            Pace
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{} }

func (m *Memory) clock() int64 {
	if m.now != nil {
		return m.now().UnixNano()
	}
	return time.Now().UnixNano()
}

// rec returns key's record, made if there is none. m.mu is held.
func (m *Memory) rec(key string) *memRecord {
	if m.recs == nil {
		m.recs = make(map[string]*memRecord)
	}
	r := m.recs[key]
	if r == nil {
		r = &memRecord{}
		m.recs[key] = r
	}
	return r
}

// Reserve implements Store.
func (m *Memory) Reserve(key string, r Rate, cost int64, notBefore time.Time, maxWait time.Duration) (time.Time, bool, error) {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	rec := m.rec(key)
	tat, at, ok := Step(rec.tat, now, unixNano(notBefore), r, cost, maxWait)
	rec.tat = tat
	return time.Unix(0, at), ok, nil
}

// Cancel implements Store.
func (m *Memory) Cancel(key string, r Rate, at time.Time, cost int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.recs[key]; rec != nil {
		rec.tat = cancelled(rec.tat, r, at.UnixNano(), cost)
	}
	return nil
}

// Settle implements Store.
func (m *Memory) Settle(key string, r Rate, delta int64) error {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.rec(key)
	rec.tat = settled(rec.tat, now, r, delta)
	return nil
}

// Pause implements Store.
func (m *Memory) Pause(key string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.rec(key)
	rec.paused = max(rec.paused, unixNano(until))
	return nil
}

// Resume implements Store.
func (m *Memory) Resume(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.recs[key]; rec != nil {
		rec.paused = 0
	}
	return nil
}

// Learn implements Store.
func (m *Memory) Learn(key string, r Rate, used int64) error {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.rec(key)
	rec.tat = relearned(rec.tat, now, learnedRate(rec.limit, rec.per), r, used)
	rec.limit, rec.per, rec.rateAt = r.Limit, int64(r.Per), now
	return nil
}

// Learned implements Store.
func (m *Memory) Learned(key string) (Learned, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.recs[key]
	if rec == nil {
		return Learned{}, nil
	}
	return learnedOf(rec.paused, rec.limit, rec.per, rec.rateAt, rec.pace), nil
}

// learnedOf returns the Learned of a record's fields (times in Unix
// nanoseconds, 0 for none).
func learnedOf(paused, limit, per, rateAt int64, p Pace) Learned {
	l := Learned{Rate: learnedRate(limit, per), Pace: p}
	if paused > 0 {
		l.Until = time.Unix(0, paused)
	}
	if rateAt > 0 && !l.Rate.IsZero() {
		l.RateAt = time.Unix(0, rateAt)
	}
	return l
}

// Pace implements Store.
func (m *Memory) Pace(key string, e PaceEvent) (Pace, error) {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.rec(key)
	rec.pace = PaceStep(rec.pace, e, now/1e6)
	return rec.pace, nil
}

// PausedUntil implements Store.
func (m *Memory) PausedUntil(key string) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.recs[key]; rec != nil && rec.paused > 0 {
		return time.Unix(0, rec.paused), nil
	}
	return time.Time{}, nil
}

// FreeAt implements Store.
func (m *Memory) FreeAt(key string) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.recs[key]; rec != nil && rec.tat > 0 {
		return time.Unix(0, rec.tat), nil
	}
	return time.Time{}, nil
}

// Acquire implements Store: a count per key. The lease is not needed: a
// Memory dies with its holders.
func (m *Memory) Acquire(key string, limit int64, _ time.Duration) (uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inFlight[key] >= limit {
		return 0, false, nil
	}
	if m.inFlight == nil {
		m.inFlight = make(map[string]int64)
	}
	m.inFlight[key]++
	return 0, true, nil
}

// Release implements Store.
func (m *Memory) Release(key string, _ uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch n := m.inFlight[key]; {
	case n <= 0:
		return fmt.Errorf("limit: release of %s: no slot is taken", key)
	case n == 1:
		delete(m.inFlight, key)
	default:
		m.inFlight[key] = n - 1
	}
	return nil
}

// InFlight implements Store.
func (m *Memory) InFlight(key string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inFlight[key], nil
}

// Len returns how many records m holds.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

// sweep removes the idle records, if a sweep is due. m.mu is held.
func (m *Memory) sweep(now int64) {
	if now < m.nextSweep {
		return
	}
	m.nextSweep = now + int64(memorySweepEvery)
	for k, r := range m.recs {
		if idle(max(r.tat, r.pace.Last*1e6), r.paused, now) {
			delete(m.recs, k)
		}
	}
}

// idle reports whether a record with this TAT and pause may be removed at
// now.
func idle(tat, paused, now int64) bool {
	edge := now - int64(idleMargin)
	return tat <= edge && paused <= edge
}

// cancelled returns the TAT after cancelling a reservation at at of cost
// units: at if the reservation is the bucket's last, at + τ if it is the
// last and waited for a bucket with a Burst (Step set the TAT to
// at + τ + r.Interval(cost)), else tat.
func cancelled(tat int64, r Rate, at, cost int64) int64 {
	if r.IsZero() {
		return tat
	}
	iv := r.Interval(cost)
	if tat == addSat(at, iv) {
		return at
	}
	if tol := r.Tolerance(cost); tol > 0 && tat == addSat(addSat(at, tol), iv) {
		return addSat(at, tol)
	}
	return tat
}

// learnedRate returns the rate Learn kept as a limit and a period: a token
// bucket holding limit units, or the zero Rate if none is kept.
func learnedRate(limit, per int64) Rate {
	r := Rate{Limit: limit, Per: time.Duration(per), Burst: limit}
	if r.IsZero() {
		return Rate{}
	}
	return r
}

// relearned is LearnStep.
func relearned(tat, now int64, old, r Rate, used int64) int64 {
	return LearnStep(tat, now, old, r, used)
}

// LearnStep is Store.Learn's step, pure: it returns a bucket's TAT after
// a rate r with used units out is learned at now (Unix nanoseconds), the
// bucket having held tat at the rate old. A tat in the future held out at
// an old rate other than r is scaled to r (tat − now times the ratio of
// their intervals, in float64, truncated), then raised to
// now + r.Interval(used) if it is earlier; sums saturate at
// math.MaxInt64. The package's redislimit runs the same step in Lua.
func LearnStep(tat, now int64, old, r Rate, used int64) int64 {
	if tat > now && !old.IsZero() && !r.IsZero() && (old.Limit != r.Limit || old.Per != r.Per) {
		ratio := (float64(r.Per) / float64(r.Limit)) / (float64(old.Per) / float64(old.Limit))
		d := float64(tat-now) * ratio
		if d >= math.MaxInt64 {
			tat = math.MaxInt64
		} else {
			tat = addSat(now, int64(d))
		}
	}
	return max(tat, addSat(now, r.Units(used)))
}

// settled returns the TAT after a settlement of delta units at now; see
// Store.Settle.
func settled(tat, now int64, r Rate, delta int64) int64 {
	delta = max(delta, -math.MaxInt64)
	switch {
	case r.IsZero() || delta == 0:
		return tat
	case delta > 0:
		return addSat(tat, r.Interval(delta))
	case tat <= now:
		return tat
	}
	return max(tat-r.IntervalDown(-delta), now) // never more than was held
}

// unixNano returns t in Unix nanoseconds, 0 for the zero Time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
