package fake

import (
	"math"
	"time"
)

// tokenBucket is the rate limits of a Provider with TokenBucket set: a
// bucket per limit, as OpenAI and Anthropic describe theirs ("your
// capacity is continuously replenished up to your maximum limit, rather
// than being reset at fixed intervals"). Each holds at most a minute's
// worth (the limit) unless its burst says less or more, starts full, and
// refills continuously at the limit per minute; a call takes one request
// and its tokens. Levels are float64: a bucket holds fractions of a unit
// between calls.
type tokenBucket struct {
	at               time.Time // when the levels were last brought up to date; zero before the first call
	requests, tokens float64   // units left in each bucket

	// requestBurst and tokenBurst, if positive, are what each bucket
	// holds when full, in place of its limit (Provider.Burst and
	// TokensBurst): a per-minute limit enforced over shorter spans.
	requestBurst, tokenBurst int
}

// capacity is what a bucket of limit units a minute holds when full: its
// burst if positive, else the limit.
func capacity(limit, burst int) float64 {
	if burst > 0 {
		return float64(burst)
	}
	return float64(limit)
}

// admit decides whether a call of want tokens fits under requestLimit
// requests and tokenLimit tokens per minute (0 for no limit) at now, and
// takes its units if so. A refused call takes nothing. The quota it
// returns reads as the window's does: requests and tokens are the units
// used (the limit minus the whole units left, so that a remaining- header
// says the whole units left, in the burst bucket when there is one), resetAt when every bucket set is full again if no call comes
// (OpenAI's "time until the rate limit resets to its initial state"; with
// both limits set, the later of the two), and wait, for a refused call,
// until each bucket that refused it holds enough.
func (b *tokenBucket) admit(now time.Time, requestLimit, tokenLimit, want int) quota {
	b.refill(now, requestLimit, tokenLimit)
	rcap, tcap := capacity(requestLimit, b.requestBurst), capacity(tokenLimit, b.tokenBurst)
	q := quota{requestLimit: requestLimit, tokenLimit: tokenLimit, want: want, now: now, bucket: true,
		requestCap: rcap, tokenCap: tcap}
	if requestLimit > 0 && b.requests < 1 {
		q.over, q.wait = "requests", refillTime(1-b.requests, requestLimit)
	}
	if tokenLimit > 0 && b.tokens < float64(want) {
		wait := limitWindow
		if float64(want) > tcap {
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
		q.resetAt = later(q.resetAt, now.Add(refillTime(rcap-b.requests, requestLimit)))
	}
	if tokenLimit > 0 {
		q.tokens = tokenLimit - int(math.Floor(b.tokens))
		q.resetAt = later(q.resetAt, now.Add(refillTime(tcap-b.tokens, tokenLimit)))
	}
	return q
}

// refill brings the levels up to now: full at the first call, then each
// gains its limit per minute since the last call, up to its capacity.
func (b *tokenBucket) refill(now time.Time, requestLimit, tokenLimit int) {
	rcap, tcap := capacity(requestLimit, b.requestBurst), capacity(tokenLimit, b.tokenBurst)
	if b.at.IsZero() {
		b.at, b.requests, b.tokens = now, rcap, tcap
		return
	}
	if d := now.Sub(b.at); d > 0 {
		per := d.Seconds() / limitWindow.Seconds()
		b.requests = min(rcap, b.requests+per*float64(requestLimit))
		b.tokens = min(tcap, b.tokens+per*float64(tokenLimit))
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
		p.bucket.requestBurst, p.bucket.tokenBurst = p.Burst, p.TokensBurst
		return p.bucket.admit(now, p.RequestsPerMinute, p.TokensPerMinute, want)
	}
	return p.window.admit(now, p.RequestsPerMinute, p.TokensPerMinute, want)
}
