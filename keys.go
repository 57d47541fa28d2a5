package sluice

import (
	"context"
	"net/http"
	"time"

	"github.com/sluice-llm/sluice/hook"
)

// Keys spreads the attempts to a provider over a pool of its credentials,
// keeping track of which are paused by a rate limit or out of quota. The
// gateway provides one for the providers that list api_keys_env; the
// engine knows it only through these two methods.
type Keys interface {
	// Take is called before each attempt, after the Limiter's wait and
	// before the breaker is asked, with the attempt's context and what it
	// asks (as the Limiter is): its caller, the current target's provider
	// and model, and the longest it may wait (MaxWait). It returns
	// the key the attempt uses: id, a short hash written in the attempt
	// log's key field (never the key itself), and set, which puts the key
	// on the attempt's request header. A provider without a pool returns
	// "", nil, nil: the request goes as it is. While every key is paused,
	// Take waits, at most MaxWait. An error refuses the attempt, as a
	// Limiter's does: a refused first attempt ends the call with that
	// error and one log line of outcome rate_limited; a refused retry ends
	// the call with the failure before it.
	Take(ctx context.Context, ask hook.Ask) (id string, set func(http.Header), err error)

	// Learn is told the answer of every attempt made with a key of a
	// provider's pool (ans.Key, the id Take returned): as Limiter.Learn is
	// told, which is then not told, since the limits the answer tells of
	// are the key's, not the provider's. It reports
	// whether another key of the pool is ready now: a 429 (rate limit or
	// quota) is then retried at once on it, without the backoff or the
	// Retry-After wait, and without a token of the retry budget (the
	// breaker ignores both kinds of 429 anyway).
	Learn(ans hook.Answer) (another bool)
}

// takeKey asks the Keys for the next attempt's key. The refusal of a
// first attempt is logged like a Limiter's.
func (c *call) takeKey() error {
	c.keyID, c.keySet = "", nil
	id, set, err := c.t.Keys.Take(c.ctx, c.ask())
	if err == nil {
		c.keyID, c.keySet = id, set
		return nil
	}
	return c.waitRefused("keys", err)
}

// learnKey tells the Keys the answer of an attempt made with a pool's key,
// and notes whether a 429 may move on to another key at once.
func (c *call) learnKey(a *attempt, status int, h http.Header, v verdict, wait time.Duration) {
	another := c.t.Keys.Learn(c.answer(a, status, h, v, wait))
	c.switchKey = another && status == http.StatusTooManyRequests
}
