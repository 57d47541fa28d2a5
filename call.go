package sluice

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/internal/credential"
	"github.com/sluice-llm/sluice/internal/request"
)

// call is one RoundTrip in progress.
type call struct {
	t      *Transport
	policy *Policy

	// The caller's request, as the call sends it.
	req     *http.Request                 // the caller's request, never changed
	in      Body                          // its body, and what the Transport reads from it
	id      string                        // the request id
	ids     [1]string                     // the request id, as header values
	header  http.Header                   // req's header, with the request id
	getBody func() (io.ReadCloser, error) // rewind, for every attempt's request

	d dialect.Dialect // the API the call speaks

	// Translation (translate.go), for a target of another dialect.
	// nil until a target speaks another dialect than d.
	xs *xlState

	// The current target.
	signer   dialect.Signer // signs each attempt's request; nil when none
	target   int            // 0: the primary; i: Fallbacks[i-1]
	tries    int            // attempts on the current target
	sent     int            // upstream attempts made, across targets
	treq     *http.Request
	body     []byte
	model    string
	provider string
	brk      *breaker.Breaker

	// The retry loop.
	idempotent bool
	lastTarget int32          // the target of the last failure (beside idempotent: the call stays in its size class)
	budget     *RetryBudget   // the current target's provider's
	token      *RetryBudget   // where the call holds a retry until it is answered; nil if none
	last       *http.Response // the last failed response, body buffered
	lastErr    error          // else the last attempt's error
	first      attempt        // the first attempt, in the call's allocation
	stamped    [6]string      // the values of the headers stamp sets

	// Rate limits (limiter.go).
	queued     time.Duration          // how long the next attempt waited for its slot
	limitDone  func(usedTokens int64) // the Limiter's, for the current attempt
	caller     Caller                 // who calls, its priority resolved (priority.go)
	usedTokens int64                  // what the current attempt's answer used, as the Meter read it

	// The pool of keys (keys.go).
	keyID     string            // the current attempt's key, "" when none
	keySet    func(http.Header) // puts it on the request
	switchKey bool              // the last 429 may go at once to another key
	idem      idemOutcome       // what became of its answer under an Idempotency-Key, for the next line (answers.go)

	// The Idempotency-Key's mark, while the call may keep its answer
	// (answers.go); nil when none. secrets are the credentials the
	// request carried, never kept in an answer.
	mark    *idempotency.Mark
	secrets credential.Secrets

	// Money.
	settleFn  func(costUSD float64) // the Meter's, for what the call holds
	cost      float64               // USD spent by the attempts so far
	remaining float64               // USD left under the tightest budget; -1 when none

	// Time (timer.go).
	ctx      context.Context // the caller's, with the trace
	trace    httptrace.ClientTrace
	deadline time.Time // when the total timeout ends the call
	totalErr TimeoutError
	timer    *time.Timer
	expired  atomic.Bool // the total timeout fired
	ended    atomic.Bool // end ran (beside expired and mu: no padding)

	mu       sync.Mutex    // guards what follows, the meaning of the timer
	phase    *TimeoutError // the current attempt's phase; nil between phases
	due      time.Time     // when the current phase, or the call, is due to end
	at       time.Time     // when the timer is set to fire; zero when not set
	cur      *attempt      // the attempt it bounds
	answered bool          // cur's response headers arrived
	stopped  bool          // the call ended
}

func (t *Transport) newCall(req *http.Request, b Body) *call {
	c := &call{t: t, policy: &t.policy, req: req, in: b, remaining: -1}
	c.d = t.Dialect
	if c.d == nil {
		c.d = dialect.ForPath(req.URL.Path)
	}
	pr := c.d.Request(req.URL.Path, nil) // what the path says
	if pr.Model != "" {
		c.in.Model = pr.Model // the path's model is the one served
	}
	c.caller = resolve(b.Caller, c.policy)
	c.header = req.Header
	c.id = requestID(req.Header)
	if c.id == "" {
		c.id = NewRequestID()
	}
	if get(req.Header, "X-Request-Id") != c.id || get(req.Header, "X-Client-Request-Id") != c.id {
		// A copy of the map only, sized once: the values are the caller's,
		// which nothing downstream changes.
		c.header = make(http.Header, len(req.Header)+2)
		for k, v := range req.Header {
			c.header[k] = v
		}
		c.ids[0] = c.id
		c.header["X-Request-Id"] = c.ids[:]
		c.header["X-Client-Request-Id"] = c.ids[:]
	}
	if b.Bytes != nil {
		c.getBody = c.rewind
	}
	c.aim(0)
	c.idempotent = isIdempotent(req) || get(req.Header, "Idempotency-Key") != ""
	if !c.idempotent {
		if t.RetrySafe != nil {
			c.idempotent = t.RetrySafe(req)
		} else {
			c.idempotent = pr.ModelCall
		}
	}
	c.startClock(req.Context())
	return c
}

// rewind returns the body of the current target's request anew.
func (c *call) rewind() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(c.body)), nil
}

func isIdempotent(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// end releases what the call holds, once.
func (c *call) end() {
	if c.ended.Swap(true) {
		return
	}
	c.stopClock()
	if x := c.xs; x != nil {
		if x.rs != nil && x.rs.cancel != nil {
			x.rs.cancel(nil) // the context of the call's attempts, made for the resumes
		}
		if x.lose != nil {
			x.lose(nil) // and for the hedge
		}
	}
	c.limitEnd()
	c.dropToken()
	c.forget()
	if settle := c.settleFn; settle != nil {
		c.settleFn = nil
		settle(c.cost)
	}
}

// abandon gives back what the call holds when Send leaves by a panic (in
// Observe, a Tracer, Base or a Target's Rewrite): the current attempt's
// breaker permit (as an outcome to ignore), its context, its place in the
// retry budget and its span, then the call's rate-limit slot, its money
// and its timer. The panic then goes on to the caller: hiding it would
// hide the bug, and what the call took is back either way.
func (c *call) abandon() {
	c.mu.Lock()
	a := c.cur
	c.mu.Unlock()
	if a != nil {
		a.release(breaker.Ignored, 0)
		a.endSpan()
	}
	c.end()
}

// record logs a finished attempt, and ends its span, even when a hook
// panics.
func (c *call) record(a *attempt) {
	defer a.endSpan()
	r := &a.rec
	r.Idempotency, c.idem = idemOutcomes[c.idem], idemNone
	if x := c.xs; x != nil {
		c.hedgeLine(x, r)
	}
	c.t.Log.Write(r)
	if c.t.Observe != nil {
		c.t.Observe(r)
	}
}

// aim points the call at target i: 0 for the primary, i for
// Fallbacks[i-1].
func (c *call) aim(i int) {
	t := c.t
	c.target, c.tries = i, 0
	c.model = c.in.Model
	c.body = c.in.Bytes
	c.provider = t.Provider
	if c.provider == "" {
		c.provider = c.req.URL.Host
	}
	c.treq = c.req
	c.signer = t.Signer
	if c.xs != nil {
		c.xs.xl, c.xs.skip = nil, nil
	}
	budget := t.budget
	if i > 0 {
		tg := t.Fallbacks[i-1]
		if tg.RetryBudget != nil {
			budget = tg.RetryBudget
		}
		r := *c.req
		r.Header = c.header.Clone()
		u := *c.req.URL
		r.URL = &u
		if tg.Provider != "" {
			c.provider = tg.Provider
		}
		translated := tg.Dialect != nil && tg.Dialect != c.d
		if translated {
			if c.xs == nil {
				c.xs = &xlState{}
			}
			if err := c.translateFor(&tg, &r); err != nil {
				c.xs.skip = err
				if tg.Model != "" {
					c.model = tg.Model
				}
			}
		}
		if tg.Rewrite != nil {
			tg.Rewrite(&r)
		}
		c.treq = &r
		if tg.Signer != nil {
			c.signer = tg.Signer
		}
		if tg.Model != "" && !translated {
			// The model goes where the dialect names it: the path (the
			// body then goes as it came) or the body.
			if p, b, ok := c.d.Retarget(r.URL.Path, c.in.Bytes, tg.Model); ok {
				if p != r.URL.Path {
					u := *r.URL
					u.Path, u.RawPath = p, ""
					r.URL = &u
				}
				c.body, c.model = b, tg.Model
			}
		}
	}
	c.fit(i) // what its model can take (modellimits.go)
	c.brk = t.Breaker(t.BreakerName(c.provider, c.model))
	c.dropToken()
	c.budget = budget
}

// dropToken gives back the retry the call holds, if any: its attempt was
// answered, or it will not be made.
func (c *call) dropToken() {
	if b := c.token; b != nil {
		c.token = nil
		b.retries.Add(-1)
	}
}

// hasNext reports whether a fallback follows the current target: none
// after the primary called after all, every fallback skipped (anyway).
func (c *call) hasNext() bool {
	return c.target < len(c.t.Fallbacks) && (c.xs == nil || !c.xs.anyway)
}

// shouldFallBack says whether a failure the current target will not get
// past may pass on the next: a retryable failure whose attempts ran out, or
// a caller error that another model may not share. Never an auth, quota
// or content-policy error, never once the call's time is up.
func (c *call) shouldFallBack(v verdict, errBody []byte, err error) bool {
	if c.timedOut() != nil || errors.Is(err, context.Canceled) {
		return false
	}
	if v.retryable {
		return true
	}
	return errBody != nil && containsAny(errBody, c.policy.Retry.FallbackMarkers)
}

// give ends the call with the last failed response, or else the last
// error.
func (c *call) give() (*http.Response, error) {
	c.end()
	if c.last != nil {
		if c.xs != nil && int(c.lastTarget) != c.target {
			// The call ended on a target skipped or refused after the one
			// that failed last: the answer says who gave it.
			c.aim(int(c.lastTarget))
		}
		c.stamp(c.last)
		return c.last, nil
	}
	if errors.Is(c.lastErr, context.Canceled) || errors.Is(c.lastErr, breaker.ErrOpen) {
		return nil, c.lastErr
	}
	return nil, &ExhaustedError{Attempts: c.sent, Last: c.lastErr}
}

// refused logs a refusal by the current target's breaker and moves the
// call on to the next target when there is one and time is left; false
// when the call must end, err its error if no attempt failed before.
func (c *call) refused(line int, err error) bool {
	c.limitEnd() // the slot was taken for an attempt that did not go
	c.logRefusal(line, err)
	if c.hasNext() && c.timedOut() == nil {
		c.aim(c.target + 1)
		return true
	}
	if c.last == nil && c.lastErr == nil {
		if c.anyway() { // the primary, skipped by its declared limits, called after all
			return true
		}
		c.lastErr = err
	}
	return false
}

// keep makes a failed attempt's response or error the call's last,
// closing the body of the one before.
func (c *call) keep(resp *http.Response, err error) {
	if c.last != nil {
		c.last.Body.Close()
	}
	c.last, c.lastErr = resp, err
	c.lastTarget = int32(c.target)
}

// step is what follows a failed attempt.
type step int

const (
	stepStop     step = iota // end the call with its last failure
	stepRetry                // try the same target again after a wait
	stepFallBack             // move on to the next target at once
)

// next decides what follows the failed attempt a, judged v, and logs its
// line: a retry needs attempts, time and a token of the retry budget; a
// failure the target will not get past may fall back to the next target.
func (c *call) next(a *attempt, v verdict) (step, time.Duration) {
	s, wait := c.plan(a, v, c.last, c.lastErr)
	a.rec.Outcome = finalOutcome(c.lastErr, c.last)
	if s == stepRetry {
		a.rec.RetryInMS = ms(wait)
	}
	if s != stepStop {
		a.rec.Outcome = OutcomeRetry
	}
	c.record(a)
	return s, wait
}

// plan says what may follow the failed attempt a, judged v, which ended
// in resp or err, and takes the retry budget's token a retry needs.
func (c *call) plan(a *attempt, v verdict, resp *http.Response, err error) (step, time.Duration) {
	wait, retry := c.decide(v, resp, err)
	move := false
	switch {
	case retry && c.hasNext() && isFirstByteTimeout(err):
		retry, move = false, true // a silent target rarely answers the second time
	case !retry && c.hasNext():
		move = c.shouldFallBack(v, a.errBody, err)
	}
	if retry && !c.switchKey { // the budget decides before the line says retry; a move to another key needs none
		if c.budget.take(c.policy.Retry.Budget) {
			c.token = c.budget
		} else {
			retry = false
			a.rec.RetryBudgetExhausted = true
		}
	}
	switch {
	case move:
		return stepFallBack, 0
	case retry:
		return stepRetry, wait
	}
	return stepStop, 0
}

// backOff waits d before a retry; false when the caller cancelled or the
// call's time ran out first, which is then its error if no response failed
// before.
func (c *call) backOff(d time.Duration) bool {
	if sleep(c.ctx, d) && c.timedOut() == nil {
		return true
	}
	if c.last == nil {
		c.lastErr = c.timedOut()
	}
	return false
}

// stamp sets the response headers that describe the call: its id
// (Sluice-Request-Id; the provider's own X-Request-Id is left as it came,
// for the SDKs that show it), the upstream attempts made, and who
// answered; and, unless KeepShouldRetry, x-should-retry: false, on success
// and failure alike, since the call's retries are done: a success is not
// retried anyway, and a failure must not be retried again by a client that
// would multiply the attempts.
func (c *call) stamp(resp *http.Response) {
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	// The values live in the call, which the response's body holds anyway.
	c.stamped = [...]string{c.id, strconv.Itoa(c.sent), c.provider, c.model, "", "false"}
	vals := c.stamped[:]
	resp.Header["Sluice-Request-Id"] = vals[0:1:1]
	resp.Header["Sluice-Attempts"] = vals[1:2:2]
	resp.Header["Sluice-Provider"] = vals[2:3:3]
	if !c.t.KeepShouldRetry {
		resp.Header["X-Should-Retry"] = vals[5:6:6]
	}
	if c.model != "" && request.CheckModel(c.model) == nil { // never a client's raw, invalid name
		resp.Header["Sluice-Model"] = vals[3:4:4]
	}
	if x := c.xl(); x != nil {
		resp.Header["Sluice-Translated"] = []string{x.label}
	}
	if c.remaining >= 0 {
		vals[4] = strconv.FormatFloat(c.remaining, 'f', 6, 64)
		resp.Header["Sluice-Budget-Remaining"] = vals[4:5:5]
	}
}
