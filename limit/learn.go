package limit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxPause is the longest pause Learn sets: a reset or Retry-After further
// away is cut to it, so that a wrong or hostile header cannot stop a model
// for longer than an hour.
const MaxPause = time.Hour

// Learn is told each attempt's answer from provider's model: its status,
// its header and the Retry-After the engine read from it (0 if none). It
// pauses the model, for everything sharing the Store, until the latest of:
//
//   - now + retryAfter, for a 429 that is a rate limit (quota is false:
//     a 429 for an exhausted quota pauses nothing);
//   - the reset of every window the header says is spent: OpenAI's
//     x-ratelimit-remaining-requests: 0 with x-ratelimit-reset-requests (a
//     Go duration such as "1s", "6m0s", "250ms", "1m30.5s"), the same for
//     -tokens; Anthropic's anthropic-ratelimit-requests-remaining: 0 with
//     anthropic-ratelimit-requests-reset (an RFC 3339 time), the same for
//     tokens, input-tokens and output-tokens.
//
// Malformed, negative or past values are ignored; a pause further away
// than MaxPause is cut to MaxPause. A Store error goes to OnError: Learn
// is told after the fact and has no caller to hand it to.
func (l *Limiter) Learn(provider, model string, status int, quota bool, h http.Header, retryAfter time.Duration) {
	now := time.Now()
	d := PauseFor(now, status, quota, h, retryAfter)
	if d <= 0 {
		return
	}
	l.stats.paused()
	key := PauseKey(provider, model)
	if err := l.store().Pause(key, now.Add(d)); err != nil {
		l.local().Pause(key, now.Add(d)) // this process at least keeps it
		if l.OnError != nil {
			l.OnError(err)
		}
	}
}

// PauseFor returns how long from now an answer pauses its model (0: not at
// all), as Learn says.
func PauseFor(now time.Time, status int, quota bool, h http.Header, retryAfter time.Duration) time.Duration {
	var d time.Duration
	if status == http.StatusTooManyRequests && !quota && retryAfter > 0 {
		d = retryAfter
	}
	for _, w := range []string{"requests", "tokens"} {
		if spent(h.Get("X-Ratelimit-Remaining-" + w)) {
			if r, err := time.ParseDuration(strings.TrimSpace(h.Get("X-Ratelimit-Reset-" + w))); err == nil {
				d = max(d, r)
			}
		}
	}
	for _, w := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		if spent(h.Get("Anthropic-Ratelimit-" + w + "-Remaining")) {
			if t, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get("Anthropic-Ratelimit-"+w+"-Reset"))); err == nil {
				d = max(d, t.Sub(now))
			}
		}
	}
	return min(max(d, 0), MaxPause)
}

// spent reports whether a remaining-count header says nothing is left.
func spent(v string) bool {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return err == nil && n == 0
}
