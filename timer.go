package sluice

import (
	"context"
	"net/http/httptrace"
	"time"
)

// A call has one timer, re-armed for each phase of each attempt: it fires
// at the end of the current attempt's phase (connect and first byte, first
// byte once the request is written, the idle gap of a body read) or at the
// call's total deadline, whichever comes first, and cancels the current
// attempt with the matching *TimeoutError. Between phases it waits for the
// total deadline alone, so that nothing outlives Timeout.Total, not even a
// body the caller holds without reading.

// startClock starts the call's timer at its total deadline, and the trace
// that tells it when each attempt's request is written.
func (c *call) startClock(parent context.Context) {
	total := c.policy.Timeout.Total
	c.totalErr = TimeoutError{Phase: PhaseTotal, Limit: total}
	c.deadline = time.Now().Add(total)
	c.due, c.at = c.deadline, c.deadline
	// One timer per call, made here: a pool of timers would cross
	// testing/synctest bubbles, which a timer must not.
	c.timer = time.AfterFunc(total, c.fire)
	c.trace.WroteRequest = c.wroteRequest
	c.ctx = httptrace.WithClientTrace(parent, &c.trace)
}

// endBy moves the call's total deadline to d, when d comes before it: a
// hedge ends with the call it races.
func (c *call) endBy(d time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !d.Before(c.deadline) {
		return
	}
	c.deadline = d
	c.setTimer(nil, 0)
}

// setTimer starts phase te of the current attempt, d from now (nil: no
// phase): the call is due to be cancelled at its end, or at the total
// deadline when that comes first. The timer is moved only when it would
// fire too late: one that fires early finds the due time not yet come and
// waits again (see fire), so a body read, which starts and ends the idle
// phase, costs no timer operation. The caller holds c.mu.
func (c *call) setTimer(te *TimeoutError, d time.Duration) {
	if c.stopped || c.expired.Load() {
		return // the call has ended, or its time is up
	}
	c.phase, c.due = te, c.deadline
	var now time.Time
	if te != nil {
		now = time.Now()
		if end := now.Add(d); end.Before(c.deadline) {
			c.due = end
		}
	}
	if !c.at.IsZero() && !c.at.After(c.due) {
		return // it fires in time, early or not
	}
	if now.IsZero() {
		now = time.Now()
	}
	c.at = c.due
	c.timer.Reset(c.due.Sub(now))
}

// fire cancels the current attempt with the phase that ran out, or with
// the total timeout. Fired before the due time (the phase it was set for
// ended, or a later arming overtook it), it sets the timer for that time.
func (c *call) fire() {
	c.mu.Lock()
	if c.stopped || c.expired.Load() {
		c.mu.Unlock()
		return
	}
	c.at = time.Time{} // not set
	if now := time.Now(); now.Before(c.due) {
		c.at = c.due
		c.timer.Reset(c.due.Sub(now))
		c.mu.Unlock()
		return
	}
	te, a := c.phase, c.cur
	if !c.due.Before(c.deadline) {
		te = &c.totalErr
		c.expired.Store(true)
	} else {
		c.setTimer(nil, 0) // the attempt is over; the deadline still holds
	}
	c.mu.Unlock()
	if a != nil {
		a.cancel(te)
		if te == &c.totalErr && a.handed.Load() {
			c.handed(a).expire(te) // nothing outlives total, not even a body nobody reads
		}
	}
}

// handed returns the body the caller holds of attempt a's answer: a's
// own, or the first attempt's, of which a's is the continuation.
func (c *call) handed(a *attempt) *body {
	if r := c.resuming(); r != nil {
		return r.body
	}
	return &a.out
}

// begin makes a the current attempt: until its request is written,
// connect and first_byte together bound it; wroteRequest then restarts
// the clock at first_byte.
func (c *call) begin(a *attempt) {
	pol := c.policy
	c.mu.Lock()
	c.cur, c.answered = a, false
	c.setTimer(&a.firstByte, pol.Timeout.Connect+pol.Timeout.FirstByte)
	c.mu.Unlock()
	if c.expired.Load() {
		a.cancel(&c.totalErr) // begun as the time ran out
	}
}

// stopClock stops the timer for good when the call ends.
func (c *call) stopClock() {
	c.mu.Lock()
	c.phase, c.cur, c.stopped = nil, nil, true
	c.timer.Stop()
	c.mu.Unlock()
}

// timedOut returns the total timeout's error once the call's time is up,
// else the caller's cancellation, else nil.
func (c *call) timedOut() error {
	if c.expired.Load() || !time.Now().Before(c.deadline) {
		return &c.totalErr
	}
	return context.Cause(c.ctx)
}

// arm (re)starts the call's timer for te, a phase of attempt a.
func (a *attempt) arm(te *TimeoutError) {
	c := a.call
	c.mu.Lock()
	if c.cur == a {
		c.setTimer(te, te.Limit)
	}
	c.mu.Unlock()
}

// disarm ends the current phase of attempt a: the timer waits for the
// total deadline alone.
func (a *attempt) disarm() {
	c := a.call
	c.mu.Lock()
	if c.cur == a {
		c.setTimer(nil, 0)
	}
	c.mu.Unlock()
}

// wroteRequest restarts the first-byte timeout when the current attempt's
// request has been written, unless its answer already began. It is an
// httptrace hook.
func (c *call) wroteRequest(httptrace.WroteRequestInfo) {
	c.mu.Lock()
	if a := c.cur; a != nil && c.phase == &a.firstByte && !c.answered {
		c.setTimer(&a.firstByte, a.firstByte.Limit)
	}
	c.mu.Unlock()
}

// answer notes that the response headers arrived: a late wroteRequest
// must not restart the first-byte timeout.
func (a *attempt) answer() {
	c := a.call
	c.mu.Lock()
	if c.cur == a {
		c.answered = true
	}
	c.mu.Unlock()
}
