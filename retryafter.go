package sluice

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryAfter returns the wait a response asks for, from retry-after-ms,
// then Retry-After (delay-seconds or an HTTP date, relative to now). ok is
// false when it asks for none or the header does not parse.
func retryAfter(h http.Header, now time.Time) (wait time.Duration, ok bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 || s > 1e9 {
			return 0, false
		}
		return time.Duration(s) * time.Second, true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f < 1e9 {
		return time.Duration(f * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// shouldRetryHint reads x-should-retry: +1 for "true", -1 for "false",
// 0 when absent or anything else.
func shouldRetryHint(h http.Header) int {
	switch strings.ToLower(strings.TrimSpace(h.Get("X-Should-Retry"))) {
	case "true":
		return 1
	case "false":
		return -1
	}
	return 0
}

// retryHint returns the wait an error answer asks for: its headers'
// (retry-after-ms, Retry-After), else what its body asks for in the
// dialect's words (Google's RetryInfo), as v, its verdict, read it.
func retryHint(h http.Header, v verdict, now time.Time) (time.Duration, bool) {
	if w, ok := retryAfter(h, now); ok {
		return w, true
	}
	return v.wait, v.hasWait
}
