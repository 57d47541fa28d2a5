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
//   - for every window the header says is spent, when it hands out its
//     next unit: its reset divided by its size when the header gives the
//     size (x-ratelimit-limit-*, anthropic-ratelimit-*-limit), else its
//     whole reset. OpenAI's x-ratelimit-remaining-requests: 0 with
//     x-ratelimit-reset-requests (a Go duration such as "1s", "6m0s",
//     "250ms", "1m30.5s"; Azure OpenAI's bare seconds, "6"), the same for
//     -tokens (Azure's -1 for "not counted" is not spent); Anthropic's
//     anthropic-ratelimit-requests-remaining: 0 with
//     anthropic-ratelimit-requests-reset (an RFC 3339 time), the same for
//     tokens, input-tokens and output-tokens. A spent tokens window thus
//     holds calls for one token's refill: the call that then needs more
//     gets the provider's 429, whose Retry-After pauses for the rest.
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
	if err := l.active().Pause(key, now.Add(d)); err != nil {
		l.local().Pause(key, now.Add(d)) // this process at least keeps it
		l.storeFailed(err)
	}
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
// all), as Learn says. An answer without rate-limit headers costs a few
// map lookups and no allocation.
func PauseFor(now time.Time, status int, quota bool, h http.Header, retryAfter time.Duration) time.Duration {
	var d time.Duration
	if status == http.StatusTooManyRequests && !quota && retryAfter > 0 {
		d = retryAfter
	}
	for _, w := range openAIWindows {
		if spent(first(h, w[0])) {
			if r, ok := parseReset(first(h, w[1])); ok {
				d = max(d, oneUnit(r, first(h, w[2])))
			}
		}
	}
	for _, w := range anthropicWindows {
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
