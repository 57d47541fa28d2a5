package fake

import (
	"net/http"
	"testing"
	"time"
)

// TestTokenBucketAdmit: a bucket of 120 requests a minute starts full,
// refills one request every 500 ms, continuously, and never holds more
// than 120; a refused call takes nothing and waits until a whole request
// is back.
func TestTokenBucketAdmit(t *testing.T) {
	var b tokenBucket
	for i := range 120 {
		if q := b.admit(t0, 120, 0, 1); !q.admitted || q.remainingRequests() != 119-i {
			t.Fatalf("call %d of a full bucket: admitted %v, %d remaining; want admitted, %d", i, q.admitted, q.remainingRequests(), 119-i)
		}
	}
	q := b.admit(t0, 120, 0, 1)
	if q.admitted || q.over != "requests" || q.wait != 500*time.Millisecond || q.retryAfter() != 1 || !q.resetAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("the 121st call: admitted %v over %q wait %v Retry-After %d reset t0+%v; want refused by requests, 500ms, 1, t0+1m0s",
			q.admitted, q.over, q.wait, q.retryAfter(), q.resetAt.Sub(t0))
	}
	q = b.admit(t0.Add(300*time.Millisecond), 120, 0, 1) // 0.6 of a request back
	if q.admitted || q.wait != 200*time.Millisecond || q.remainingRequests() != 0 || !q.resetAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("at 300ms: admitted %v wait %v, %d remaining, reset t0+%v; want refused, 200ms, 0, t0+1m0s",
			q.admitted, q.wait, q.remainingRequests(), q.resetAt.Sub(t0))
	}
	q = b.admit(t0.Add(500*time.Millisecond), 120, 0, 1)
	if !q.admitted || q.remainingRequests() != 0 || !q.resetAt.Equal(t0.Add(60500*time.Millisecond)) {
		t.Fatalf("at 500ms: admitted %v, %d remaining, reset t0+%v; want admitted, 0, t0+1m0.5s", q.admitted, q.remainingRequests(), q.resetAt.Sub(t0))
	}
	// 10 s later: 20 requests back, as many admitted at once, not a 21st.
	for i := range 20 {
		if q := b.admit(t0.Add(10500*time.Millisecond), 120, 0, 1); !q.admitted {
			t.Fatalf("call %d 10 s later: refused, want admitted", i)
		}
	}
	if q := b.admit(t0.Add(10500*time.Millisecond), 120, 0, 1); q.admitted {
		t.Fatal("a 21st call 10 s later: admitted, want refused")
	}
	// An hour later: full, not more.
	for i := range 120 {
		if q := b.admit(t0.Add(time.Hour), 120, 0, 1); !q.admitted {
			t.Fatalf("call %d an hour later: refused, want admitted", i)
		}
	}
	if q := b.admit(t0.Add(time.Hour), 120, 0, 1); q.admitted {
		t.Fatal("a 121st call an hour later: admitted, want refused (a bucket holds a minute's worth)")
	}
}

// TestTokenBucketTokens: tokens refill the same way; a call larger than
// the limit never fits.
func TestTokenBucketTokens(t *testing.T) {
	var b tokenBucket
	if q := b.admit(t0, 0, 600, 500); !q.admitted || q.remainingTokens() != 100 || !q.resetAt.Equal(t0.Add(50*time.Second)) {
		t.Fatalf("500 of 600: admitted %v, %d left, reset t0+%v; want admitted, 100, t0+50s", q.admitted, q.remainingTokens(), q.resetAt.Sub(t0))
	}
	if q := b.admit(t0, 0, 600, 200); q.admitted || q.over != "tokens" || q.wait != 10*time.Second {
		t.Fatalf("200 more: admitted %v over %q wait %v; want refused by tokens, 10s (100 tokens' refill)", q.admitted, q.over, q.wait)
	}
	if q := b.admit(t0, 0, 600, 601); q.admitted || !q.tooLarge || q.wait != time.Minute {
		t.Fatalf("601 tokens: admitted %v tooLarge %v wait %v; want refused, too large, 1m", q.admitted, q.tooLarge, q.wait)
	}
}

// TestProviderTokenBucket: a Provider with TokenBucket answers as the
// bucket says, with OpenAI's headers and Retry-After 1 on its 429s; Reset
// fills it again.
func TestProviderTokenBucket(t *testing.T) {
	c := newClock()
	p := &Provider{RequestsPerMinute: 120, TokenBucket: true, Now: c.Now}
	got := statuses(burst(p, 130, chatPath, chatBody))
	if got[http.StatusOK] != 120 || got[http.StatusTooManyRequests] != 10 {
		t.Fatalf("130 calls at once: %v, want 120 200s and 10 429s", got)
	}
	r := serve(p, chatPath, "", chatBody)
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" ||
		r.Header.Get("x-ratelimit-remaining-requests") != "0" || r.Header.Get("x-ratelimit-limit-requests") != "120" ||
		r.Header.Get("x-ratelimit-reset-requests") != "1m0s" {
		t.Fatalf("a call over the limit: %d, Retry-After %q, headers %v; want 429, 1, 0 of 120 left, reset 1m0s", r.StatusCode, r.Header.Get("Retry-After"), r.Header)
	}
	c.set(1500 * time.Millisecond) // three requests back
	got = statuses(burst(p, 4, chatPath, chatBody))
	if got[http.StatusOK] != 3 || got[http.StatusTooManyRequests] != 1 {
		t.Fatalf("4 calls 1.5 s later: %v, want 3 200s and a 429", got)
	}
	p.Reset()
	if r := serve(p, chatPath, "", chatBody); r.StatusCode != http.StatusOK || r.Header.Get("x-ratelimit-remaining-requests") != "119" ||
		r.Header.Get("x-ratelimit-reset-requests") != "500ms" {
		t.Fatalf("after Reset: %d, %q left, reset %q; want 200, 119, 500ms", r.StatusCode, r.Header.Get("x-ratelimit-remaining-requests"), r.Header.Get("x-ratelimit-reset-requests"))
	}
}
