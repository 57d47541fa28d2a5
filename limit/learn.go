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
// its header and the Retry-After the engine read from it (0 if none).
// What it learns is the model's (or, when SharedLimits says so, the
// provider's), for everything sharing the Store; see "Learned limits" in
// the package doc.
//
// From a requests window (OpenAI's x-ratelimit-limit-requests,
// x-ratelimit-remaining-requests and x-ratelimit-reset-requests;
// Anthropic's anthropic-ratelimit-requests-limit, -remaining and -reset)
// at least half spent, it learns the provider's bucket: its rate and how
// many requests are out of it (the window's spent ones and a tenth of it
// for calls in flight, at most all of them; all of them after a
// rate-limit 429). Calls
// then take a slot in it as in a configured limit's, so that once it is
// empty they start one by one at the provider's pace.
//
// It pauses the model until the latest of:
//
//   - now + retryAfter, for a 429 that is a rate limit (quota is false:
//     a 429 for an exhausted quota pauses nothing);
//   - for every other window the header says is spent, when it hands out
//     its next unit: its reset divided by its size when the header gives
//     the size (x-ratelimit-limit-*, anthropic-ratelimit-*-limit), else
//     its whole reset. OpenAI's x-ratelimit-remaining-tokens: 0 with
//     x-ratelimit-reset-tokens (a Go duration such as "1s", "6m0s",
//     "250ms", "1m30.5s"; Azure OpenAI's bare seconds, "6"; Azure's -1 for
//     "not counted" is not spent), the same for a requests window whose
//     bucket cannot be learned (no size, or a size of 1); Anthropic's
//     anthropic-ratelimit-tokens-remaining: 0 with
//     anthropic-ratelimit-tokens-reset (an RFC 3339 time), the same for
//     input-tokens and output-tokens. A spent tokens window thus holds
//     calls for one token's refill: the call that then needs more gets the
//     provider's 429, whose Retry-After pauses for the rest.
//
// Malformed, negative or past values are ignored; a pause further away
// than MaxPause is cut to MaxPause, and so is a learned bucket's interval
// (its next request is never further away). A Store error goes to
// OnError: Learn is told after the fact and has no caller to hand it to.
func (l *Limiter) Learn(provider, model string, status int, quota bool, h http.Header, retryAfter time.Duration) {
	now := time.Now()
	limited := status == http.StatusTooManyRequests && !quota
	size, left, reset, ok := requestsWindow(now, h)
	r, paced := Rate{}, false
	if ok {
		r, paced = windowRate(size, left, reset)
	}
	d := pauseFor(now, status, quota, h, retryAfter, paced)
	if !paced && !limited && d <= 0 {
		return // the answer of a call with room to spare: nothing to keep
	}
	key := l.plan(provider).pauseKey(provider, model)
	used := size - left
	if !paced && limited {
		// A rate-limit 429 without a window to read: the bucket learned
		// before, if any, is empty.
		if _, lr, err := l.active().Learned(key); err == nil && !lr.IsZero() {
			r, paced = lr, true
		}
	}
	if paced {
		if limited {
			used = r.Limit // the provider says its bucket is empty
		} else {
			used = min(used+headroom(size), size)
		}
		if err := l.active().Learn(key, r, used); err != nil {
			l.local().Learn(key, r, used) // this process at least keeps it
			l.storeFailed(err)
		}
	}
	if d <= 0 {
		return
	}
	l.stats.paused()
	if err := l.active().Pause(key, now.Add(d)); err != nil {
		l.local().Pause(key, now.Add(d)) // this process at least keeps it
		l.storeFailed(err)
	}
}

// headroom returns how many requests of a window of size the learned
// bucket keeps for calls in flight that the provider had not counted when
// it answered: a tenth of the window, rounded up. An answer raises the
// bucket's TAT to what the provider counted; calls that took a slot in
// the bucket and had not reached the provider yet were in the TAT, and a
// raise above them drops them from it, as do calls that started before
// the bucket was learned. The headroom keeps room for them while the
// window drains; an answer saying it is spent sets it to empty, not
// beyond, so that the pace once it is spent stays the provider's.
func headroom(size int64) int64 { return (size + 9) / 10 }

// maxLearnedPer bounds the period of a learned rate, so that its
// nanoseconds and Redis's doubles hold it exactly.
const maxLearnedPer = 7 * 24 * time.Hour

// requestsWindow reads the requests window an answer's header describes,
// OpenAI's (Azure OpenAI's) or Anthropic's: its size, the whole requests
// left in it and how long until it is full again. ok is false unless all
// three are there and sound: a size of 1 or more, 0 to size left, a reset
// after now.
func requestsWindow(now time.Time, h http.Header) (size, left int64, reset time.Duration, ok bool) {
	sizeV, leftV := first(h, openAIWindows[0][2]), first(h, openAIWindows[0][0])
	if sizeV != "" {
		reset, ok = parseReset(first(h, openAIWindows[0][1]))
	} else if sizeV, leftV = first(h, anthropicWindows[0][2]), first(h, anthropicWindows[0][0]); sizeV != "" {
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(first(h, anthropicWindows[0][1])))
		reset, ok = t.Sub(now), err == nil
	}
	if !ok || reset <= 0 {
		return 0, 0, 0, false
	}
	size, err1 := strconv.ParseInt(strings.TrimSpace(sizeV), 10, 64)
	left, err2 := strconv.ParseInt(strings.TrimSpace(leftV), 10, 64)
	if err1 != nil || err2 != nil || size < 1 || left < 0 || left > size {
		return 0, 0, 0, false
	}
	return size, left, reset, true
}

// windowRate returns the bucket a requests window of size requests, left
// of them left, full again after reset, tells: size requests refilled
// continuously, size per reset·size/(size−left−1), and ok; ok is false
// while more than half the window is left, or when no request is known
// to be out of it (size − left − 1 < 1).
//
// The provider's reset is when its bucket is full again ("the time until
// the rate limit resets to its initial state"), so size − left requests
// refill in reset. But left is a whole count of a bucket that holds
// fractions between requests (or refills a whole request at a time, the
// next one in less than an interval): between size − left − 1 and
// size − left requests refill in reset. The rate takes the lower, never
// faster than the provider, by 1/(size − left) at most: 0.8% for a window
// of 120 spent. Half spent or more, that is 2/size at most; with more
// left it could be off by far more, and the bucket has room anyway.
func windowRate(size, left int64, reset time.Duration) (Rate, bool) {
	n := size - left - 1
	if n < 1 || 2*left > size {
		return Rate{}, false
	}
	per := float64(reset) * float64(size) / float64(n)
	per = min(per, float64(MaxPause)*float64(size), float64(maxLearnedPer)) // an interval of at most MaxPause
	if per < float64(size) {
		return Rate{}, false // under a nanosecond a request: nothing to pace
	}
	return Rate{Limit: size, Per: time.Duration(per), Burst: size}, true
}

// The rate-limit headers Learn reads, in canonical form: each window's
// remaining count, its reset and its size.
var (
	openAIWindows = [...][3]string{
		{"X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests", "X-Ratelimit-Limit-Requests"},
		{"X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens", "X-Ratelimit-Limit-Tokens"},
	}
	anthropicWindows = [...][3]string{
		{"Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Requests-Limit"},
		{"Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset", "Anthropic-Ratelimit-Tokens-Limit"},
		{"Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset", "Anthropic-Ratelimit-Input-Tokens-Limit"},
		{"Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset", "Anthropic-Ratelimit-Output-Tokens-Limit"},
	}
)

// PauseFor returns how long from now an answer pauses its model (0: not at
// all), as Learn says of a provider whose buckets it does not learn: each
// spent window, the requests window too, pauses until its next unit. An
// answer without rate-limit headers costs a few map lookups and no
// allocation.
func PauseFor(now time.Time, status int, quota bool, h http.Header, retryAfter time.Duration) time.Duration {
	return pauseFor(now, status, quota, h, retryAfter, false)
}

// pauseFor is PauseFor; with paced, the requests windows pause nothing:
// their bucket is learned instead.
func pauseFor(now time.Time, status int, quota bool, h http.Header, retryAfter time.Duration, paced bool) time.Duration {
	var d time.Duration
	if status == http.StatusTooManyRequests && !quota && retryAfter > 0 {
		d = retryAfter
	}
	for i, w := range openAIWindows {
		if paced && i == 0 {
			continue
		}
		if spent(first(h, w[0])) {
			if r, ok := parseReset(first(h, w[1])); ok {
				d = max(d, oneUnit(r, first(h, w[2])))
			}
		}
	}
	for i, w := range anthropicWindows {
		if paced && i == 0 {
			continue
		}
		if spent(first(h, w[0])) {
			if t, err := time.Parse(time.RFC3339, strings.TrimSpace(first(h, w[1]))); err == nil {
				d = max(d, oneUnit(t.Sub(now), first(h, w[2])))
			}
		}
	}
	return min(max(d, 0), MaxPause)
}

// parseReset reads an x-ratelimit-reset- header: OpenAI's Go duration
// ("1s", "6m0s", "250ms"), or Azure OpenAI's bare number of seconds ("6",
// "0.5"). ok is false when it is neither.
func parseReset(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if r, err := time.ParseDuration(v); err == nil {
		return r, true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f < 1e9 {
		return time.Duration(f * float64(time.Second)), true
	}
	return 0, false
}

// oneUnit is how long a spent window takes to hand out its next unit: the
// providers' reset is when the window is whole again, and it fills
// evenly, so with its size known the next unit comes after reset / size.
// Pausing for the whole reset would stop every call for a minute each
// time a busy window reads 0, when a slot frees every reset / size. With
// the size unknown, the whole reset.
func oneUnit(reset time.Duration, size string) time.Duration {
	n, err := strconv.ParseInt(strings.TrimSpace(size), 10, 64)
	if err != nil || n <= 0 || reset <= 0 {
		return reset
	}
	return reset / time.Duration(n)
}

// first returns the first value of the canonical key k in h, "" if none.
func first(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// spent reports whether a remaining-count header says nothing is left.
func spent(v string) bool {
	if v == "" {
		return false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return err == nil && n == 0
}
