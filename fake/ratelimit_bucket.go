package fake

import (
	"math"
	"time"
)

// tokenBucket is the rate limits of a Provider with TokenBucket set: a
// bucket per limit, as OpenAI and Anthropic describe theirs ("your
// capacity is continuously replenished up to your maximum limit, rather
// than being reset at fixed intervals"). Each holds at most a minute's
// worth (the limit), starts full, and refills continuously at the limit
// per minute; a call takes one request and its tokens. Levels are float64:
// a bucket holds fractions of a unit between calls.
type tokenBucket struct {
	at               time.Time // when the levels were last brought up to date; zero before the first call
	requests, tokens float64   // units left in each bucket
}

// admit decides whether a call of want tokens fits under requestLimit
// requests and tokenLimit tokens per minute (0 for no limit) at now, and
// takes its units if so. A refused call takes nothing. The quota it
// returns reads as the window's does: requests and tokens are the units
// used (the limit minus the whole units left, as a remaining- header
// says), resetAt when every bucket set is full again if no call comes
// (OpenAI's "time until the rate limit resets to its initial state"; with
// both limits set, the later of the two), and wait, for a refused call,
// until each bucket that refused it holds enough.
func (b *tokenBucket) admit(now time.Time, requestLimit, tokenLimit, want int) quota {
	b.refill(now, requestLimit, tokenLimit)
	q := quota{requestLimit: requestLimit, tokenLimit: tokenLimit, want: want, now: now}
	if requestLimit > 0 && b.requests < 1 {
		q.over, q.wait = "requests", refillTime(1-b.requests, requestLimit)
	}
	if tokenLimit > 0 && b.tokens < float64(want) {
		wait := limitWindow
		if want > tokenLimit {
			q.tooLarge = true
		} else {
			wait = refillTime(float64(want)-b.tokens, tokenLimit)
		}
		if q.over == "" {
			q.over = "tokens"
		}
		q.wait = max(q.wait, wait)
	}
	if q.over == "" {
		q.admitted = true
		if requestLimit > 0 {
			b.requests--
		}
		if tokenLimit > 0 {
			b.tokens -= float64(want)
		}
	}
	q.resetAt = now
	if requestLimit > 0 {
		q.requests = requestLimit - int(math.Floor(b.requests))
		q.resetAt = later(q.resetAt, now.Add(refillTime(float64(requestLimit)-b.requests, requestLimit)))
	}
	if tokenLimit > 0 {
		q.tokens = tokenLimit - int(math.Floor(b.tokens))
		q.resetAt = later(q.resetAt, now.Add(refillTime(float64(tokenLimit)-b.tokens, tokenLimit)))
	}
	return q
}

// refill brings the levels up to now: full at the first call, then each
// gains its limit per minute since the last call, up to its limit.
func (b *tokenBucket) refill(now time.Time, requestLimit, tokenLimit int) {
	if b.at.IsZero() {
		b.at, b.requests, b.tokens = now, float64(requestLimit), float64(tokenLimit)
		return
	}
	if d := now.Sub(b.at); d > 0 {
		per := d.Seconds() / limitWindow.Seconds()
		b.requests = min(float64(requestLimit), b.requests+per*float64(requestLimit))
		b.tokens = min(float64(tokenLimit), b.tokens+per*float64(tokenLimit))
		b.at = now
	}
}

// refillTime is how long a bucket of limit units a minute takes to gain
// units, rounded up to the nanosecond; 0 for none.
func refillTime(units float64, limit int) time.Duration {
	if units <= 0 || limit <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(units * float64(limitWindow) / float64(limit)))
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// admitLocked counts a call under the Provider's rate limits, in its
// token buckets or its sliding window. p.mu is held.
func (p *Provider) admitLocked(now time.Time, want int) quota {
	if p.TokenBucket {
		return p.bucket.admit(now, p.RequestsPerMinute, p.TokensPerMinute, want)
	}
	return p.window.admit(now, p.RequestsPerMinute, p.TokensPerMinute, want)
}
