package sluice

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/hook"
)

// Limiter keeps the attempts of a Transport under rate limits by making
// each wait for its turn, and learns from each answer when the provider
// says to hold off. Package limit provides one, limit.Limiter; the engine
// knows it only through these two methods, in the values of package hook,
// so that neither depends on the other.
type Limiter interface {
	// Wait is called before each attempt, before the breaker is asked,
	// with the attempt's context and what it asks: its caller (priority
	// resolved), the provider and model of the current target, the size
	// of the body, the max_tokens it names (0 if none) and the longest it
	// may wait (MaxWait). It returns once the attempt may go, with how
	// long it waited and done, which the Transport calls once when the
	// attempt ends (nil: nothing to call), with the tokens the Meter read
	// from its answer (see Meter.Count), or 0 when none was read: the
	// estimate stands.
	//
	// An error refuses the attempt: a refused first attempt ends the call
	// with that error and one log line of outcome rate_limited; a refused
	// retry ends the call with the failure before it. If the error has a
	// method Class() string, that names the refusal in the line's error
	// field (else "rate_limited"); the context's own error is returned as
	// it is.
	Wait(ctx context.Context, ask hook.Ask) (waited time.Duration, done func(usedTokens int64), err error)

	// Learn is told the answer of every attempt that got one and used no
	// pool's key (see Keys.Learn): the dialect of the call (never nil),
	// which reads the rate-limit windows in its header, when the attempt
	// was sent (after its wait), its status and header, whether it is a
	// 429 for a used-up quota (not a rate limit), and the wait a 429's
	// Retry-After asks for (0 if none, or if the answer is not a 429).
	Learn(ans hook.Answer)
}

// OutcomeRateLimited is the outcome of a call the Limiter refused: it
// would have waited longer than the policy's MaxQueue for a slot.
const OutcomeRateLimited Outcome = "rate_limited"

// admit waits for the Limiter to let the next attempt go. The time waited
// goes on the attempt's log line; what Wait returns to call at its end is
// kept until then. A slot still held (an attempt that did not go) is given
// back first: a call holds at most one.
func (c *call) admit() error {
	c.limitEnd()
	waited, done, err := c.t.Limiter.Wait(c.ctx, c.ask())
	c.queued, c.limitDone = waited, done
	if err == nil {
		return nil
	}
	return c.waitRefused("limit", err)
}

// waitRefused ends a wait for a slot (the Limiter's, from "limit") or for
// a key (the Keys', from "keys") that failed with err: with the call's own
// end when its time is up or its caller left, else with err, the refusal,
// on a log line of its own (outcome rate_limited, the refusal's class).
func (c *call) waitRefused(from string, err error) error {
	if ctxErr := c.timedOut(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	class := "rate_limited"
	var cl interface{ Class() string }
	if errors.As(err, &cl) {
		class = cl.Class()
	}
	c.logUnsent(from+":"+c.provider+":"+class, c.sent+1, OutcomeRateLimited, class, c.breakerState())
	return err
}

// breakerState returns the state of the current target's breaker as its
// store holds it now, for the line of an attempt refused before the
// breaker was asked; closed when the store cannot tell.
func (c *call) breakerState() breaker.State {
	rec, err := c.brk.Record()
	if err != nil {
		return breaker.Closed
	}
	return rec.State
}

// ask is what the next attempt asks the Limiter and the Keys: its caller,
// its target, its size and how long it may wait.
func (c *call) ask() hook.Ask {
	return hook.Ask{Caller: c.caller, Provider: c.provider, Model: c.model,
		BodyBytes: len(c.body), MaxTokens: c.in.MaxTokens, MaxWait: c.queueLimit(), Total: c.policy.Timeout.Total}
}

// answer is what attempt a's answer tells the Limiter or the Keys.
func (c *call) answer(a *attempt, status int, h http.Header, v verdict, wait time.Duration) hook.Answer {
	return hook.Answer{Dialect: c.targetDialect(), Provider: c.provider, Model: c.model, Key: c.keyID, Sent: a.start,
		Status: status, Header: h, Quota: v.class == classQuota, RetryAfter: wait}
}

// queueLimit is the longest the next attempt may wait for a slot: the
// policy's MaxQueue, at most what is left of the call's time minus one
// first-byte timeout, never less than zero.
func (c *call) queueLimit() time.Duration {
	left := time.Until(c.deadline) - c.policy.Timeout.FirstByte
	if q := c.policy.MaxQueue; q > 0 && q < left {
		left = q
	}
	return max(left, 0)
}

// limitEnd tells the Limiter that the current attempt ended, once, with
// the tokens its answer used when the Meter read them.
func (c *call) limitEnd() {
	if done := c.limitDone; done != nil {
		c.limitDone = nil
		done(c.usedTokens)
	}
	c.usedTokens = 0
}

// learn tells the Limiter, or the Keys when the attempt used a pool's
// key, attempt a's answer: its status (for a stream whose first event is
// a provider error, the status that event stands for), its headers, and
// its verdict, which holds the wait an error's body asks for (Google's
// RetryInfo).
func (c *call) learn(a *attempt, status int, h http.Header, v verdict) {
	c.switchKey = false
	if c.t.Limiter == nil && c.keyID == "" {
		return
	}
	var wait time.Duration
	if status == http.StatusTooManyRequests { // only a 429's pauses
		if hint, ok := retryHint(h, v, time.Now()); ok {
			wait = hint
		}
	}
	if c.keyID != "" { // the pause is the key's, not the provider's
		c.learnKey(a, status, h, v, wait)
		return
	}
	c.t.Limiter.Learn(c.answer(a, status, h, v, wait))
}
