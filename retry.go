package sluice

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
)

// verdict is what one attempt's end means for the call and the breaker.
type verdict struct {
	retryable bool            // another attempt may pass
	breaker   breaker.Outcome // what the breaker is told
	class     string          // short error class for the log, "" when none
	wait      time.Duration   // the wait the body asks for (Google's RetryInfo), when hasWait
	hasWait   bool
}

// classQuota is the error class of a 429 whose body says the account's
// quota is used up.
const classQuota = "quota_exhausted"

// judgeStatus judges a response by its status and its body, read once in
// the dialect d: for a 429, whether a quota is used up; for any error, the
// wait it asks for.
func (r *Retry) judgeStatus(d dialect.Dialect, status int, h http.Header, body []byte) verdict {
	v := verdict{breaker: breaker.Success}
	if status < 400 {
		return v
	}
	v.class = "status_" + statusText(status)
	j := d.Judge(status, h, body)
	v.wait, v.hasWait = j.Wait, j.HasWait
	if status == http.StatusTooManyRequests && (containsAny(body, r.QuotaMarkers) || j.Quota) {
		v.class = classQuota
		v.breaker = breaker.Ignored
		return v
	}
	// A rate-limit 429 is not an outage: the provider asks for a pause,
	// which the Limiter keeps, and the breaker is not told.
	switch {
	case status >= 500, status == http.StatusRequestTimeout:
		v.breaker = breaker.Failure
	default:
		v.breaker = breaker.Ignored
	}
	v.retryable = slices.Contains(r.Statuses, status)
	switch shouldRetryHint(h) {
	case -1:
		v.retryable = false
	case 1:
		v.retryable = true
	}
	return v
}

func statusText(s int) string {
	var b [3]byte
	if s < 100 || s > 999 {
		return "other"
	}
	b[0], b[1], b[2] = byte('0'+s/100), byte('0'+s/10%10), byte('0'+s%10)
	return string(b[:])
}

func containsAny(body []byte, markers []string) bool {
	for _, m := range markers {
		if m != "" && bytes.Contains(body, []byte(m)) {
			return true
		}
	}
	return false
}

// judgeError judges an attempt that ended in an error before a response.
// sent reports whether the request may have left this machine.
func judgeError(err error) (v verdict, sent bool) {
	v = verdict{retryable: true, breaker: breaker.Failure, class: errorClass(err)}
	var te *TimeoutError
	var op *net.OpError
	switch {
	case errors.As(err, &te):
		return v, te.Phase != PhaseConnect
	case errors.As(err, &op) && op.Op == "dial":
		return v, false
	case errors.Is(err, context.Canceled):
		return verdict{breaker: breaker.Ignored, class: v.class}, true
	}
	return v, true
}

// backoff returns the full-jitter wait before retry n (0 for the first
// retry): uniform in [0, min(Cap, Base·2^n)).
func (r *Retry) backoff(n int) time.Duration {
	ceil := r.Base
	for i := 0; i < n && ceil < r.Cap; i++ {
		ceil *= 2
	}
	ceil = min(ceil, r.Cap)
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil)
}

// jitter returns d plus up to 10 % of it, so that callers told the same
// Retry-After do not wake together.
func jitter(d time.Duration) time.Duration {
	if d < 10 {
		return d
	}
	return d + rand.N(d/10)
}

// RetryBudget caps the retries in flight across the calls that share it,
// as Envoy's retry budget does, counting what Envoy counts: a retry may be
// decided only while the retries outstanding stay within Retry.Budget of
// the attempts in flight upstream, and never fewer than 3 are let through
// at once. A retry is outstanding from its decision (its backoff sleep
// included) until its attempt is answered (the response headers, or its
// failure), as Envoy holds its retry from shouldRetry until the next;
// an attempt is in flight from its start to its end (for an answer handed
// over, the end of its body). A successful retry's stream, a call waiting
// between attempts for a rate-limit slot or a key, and a first attempt
// count nowhere as retries. The zero value is an empty budget, ready to
// use; a RetryBudget is safe for concurrent use.
//
// A budget belongs to a provider: give every Transport (and Target) that
// calls one provider the same *RetryBudget, so that its retries are
// bounded together whatever the route or policy.
type RetryBudget struct {
	active  atomic.Int64 // attempts in flight
	retries atomic.Int64 // retries decided and not yet answered
}

// minRetries is the floor of the retry budget.
const minRetries = 3

// take reserves a retry, frac of the attempts in flight being allowed to
// be outstanding retries (negative: no cap); false when the budget is
// spent.
func (b *RetryBudget) take(frac float64) bool {
	n := b.retries.Add(1)
	if frac < 0 || n <= minRetries || float64(n) <= frac*float64(b.active.Load()) {
		return true
	}
	b.retries.Add(-1)
	return false
}

// InFlight returns the attempts in flight under the budget and the
// retries outstanding.
func (b *RetryBudget) InFlight() (attempts, retries int64) {
	return b.active.Load(), b.retries.Load()
}

// sleep waits d or until ctx ends; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// decide says whether to retry the current target, and after how long:
// resp's headers, or its body as v read it, may hold the hint.
func (c *call) decide(v verdict, resp *http.Response, err error) (time.Duration, bool) {
	p := &c.policy.Retry
	n := c.tries
	if c.switchKey && n < p.MaxAttempts && c.timedOut() == nil {
		return 0, true // another key is ready: no need to wait
	}
	if !v.retryable || n >= p.MaxAttempts || c.timedOut() != nil {
		return 0, false
	}
	var te *TimeoutError
	if errors.As(err, &te) && te.Phase == PhaseTotal {
		return 0, false
	}
	wait := p.backoff(n - 1)
	if resp != nil {
		if hint, ok := retryHint(resp.Header, v, time.Now()); ok && hint > 0 {
			if hint > p.MaxRetryAfter {
				return 0, false
			}
			wait = jitter(hint)
		}
	}
	if time.Now().Add(wait).After(c.deadline) {
		return 0, false
	}
	return wait, true
}

func isFirstByteTimeout(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te) && te.Phase == PhaseFirstByte
}

func finalOutcome(err error, resp *http.Response) Outcome {
	switch {
	case resp != nil:
		return OutcomeFail
	case errors.Is(err, context.Canceled):
		return OutcomeClientCancel
	case errors.Is(err, ErrTimeout):
		return OutcomeTimeout
	}
	return OutcomeFail
}
