package fake

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTokenBucketBurst: a bucket of 120 requests a minute with a burst of
// 10 starts with 10, refills one every 500 ms and never holds more than
// 10; the remaining count is the burst bucket's, the reset when it is
// full again.
func TestTokenBucketBurst(t *testing.T) {
	b := tokenBucket{requestBurst: 10}
	for i := range 10 {
		if q := b.admit(t0, 120, 0, 1); !q.admitted || q.remainingRequests() != 9-i {
			t.Fatalf("call %d of a full burst: admitted %v, %d remaining; want admitted, %d", i, q.admitted, q.remainingRequests(), 9-i)
		}
	}
	q := b.admit(t0, 120, 0, 1)
	if q.admitted || q.wait != 500*time.Millisecond || q.remainingRequests() != 0 || !q.resetAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("the 11th call: admitted %v wait %v, %d remaining, reset t0+%v; want refused, 500ms, 0, t0+5s",
			q.admitted, q.wait, q.remainingRequests(), q.resetAt.Sub(t0))
	}
	// 1 s later: 2 back.
	for i := range 2 {
		if q := b.admit(t0.Add(time.Second), 120, 0, 1); !q.admitted {
			t.Fatalf("call %d 1 s later: refused, want admitted", i)
		}
	}
	if q := b.admit(t0.Add(time.Second), 120, 0, 1); q.admitted {
		t.Fatal("a third call 1 s later: admitted, want refused")
	}
	// An hour later: 10, not a minute's worth.
	for i := range 10 {
		if q := b.admit(t0.Add(time.Hour), 120, 0, 1); !q.admitted {
			t.Fatalf("call %d an hour later: refused, want admitted", i)
		}
	}
	if q := b.admit(t0.Add(time.Hour), 120, 0, 1); q.admitted {
		t.Fatal("an 11th call an hour later: admitted, want refused (the bucket holds the burst)")
	}
}

// TestTokenBucketTokensBurst: the token bucket holds TokensBurst; a call
// of more never fits.
func TestTokenBucketTokensBurst(t *testing.T) {
	b := tokenBucket{tokenBurst: 100}
	if q := b.admit(t0, 0, 6000, 60); !q.admitted || q.remainingTokens() != 40 || !q.resetAt.Equal(t0.Add(600*time.Millisecond)) {
		t.Fatalf("60 of 100: admitted %v, %d left, reset t0+%v; want admitted, 40, t0+600ms", q.admitted, q.remainingTokens(), q.resetAt.Sub(t0))
	}
	if q := b.admit(t0, 0, 6000, 60); q.admitted || q.wait != 200*time.Millisecond {
		t.Fatalf("60 more: admitted %v wait %v; want refused, 200ms (20 tokens at 100/s)", q.admitted, q.wait)
	}
	if q := b.admit(t0.Add(time.Hour), 0, 6000, 101); q.admitted || !q.tooLarge {
		t.Fatalf("101 tokens: admitted %v tooLarge %v; want refused, too large for the burst", q.admitted, q.tooLarge)
	}
}

// TestProviderBurst: over HTTP, a Provider with Burst 10 admits 10 calls
// at once of 120 a minute; its headers give the minute's limit, what is
// left of the burst and when the burst is full again; its 429s say
// Retry-After 1.
func TestProviderBurst(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	c := newClock()
	s.RequestsPerMinute, s.Burst, s.TokenBucket, s.Now = 120, 10, true, c.Now
	hc := s.Client()
	call := func() *http.Response {
		resp, err := hc.Post(s.URL+chatPath, "application/json", strings.NewReader(chatBody))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		return resp
	}
	r := call()
	if r.StatusCode != http.StatusOK || r.Header.Get("x-ratelimit-limit-requests") != "120" ||
		r.Header.Get("x-ratelimit-remaining-requests") != "9" || r.Header.Get("x-ratelimit-reset-requests") != "500ms" {
		t.Fatalf("first call: %d, headers %v; want 200, limit 120, 9 left, reset 500ms", r.StatusCode, r.Header)
	}
	ok := 1
	for range 11 {
		if r = call(); r.StatusCode == http.StatusOK {
			ok++
		}
	}
	if ok != 10 || r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" ||
		r.Header.Get("x-ratelimit-remaining-requests") != "0" || r.Header.Get("x-ratelimit-reset-requests") != "5s" {
		t.Fatalf("12 calls at once: %d admitted, the last %d with Retry-After %q, headers %v; want 10, a 429 with 1, 0 left, reset 5s",
			ok, r.StatusCode, r.Header.Get("Retry-After"), r.Header)
	}
	c.set(2 * time.Second) // four back
	ok = 0
	for range 5 {
		if call().StatusCode == http.StatusOK {
			ok++
		}
	}
	if ok != 4 || s.RateLimited() != 3 || s.Calls() != 17 {
		t.Fatalf("5 calls 2 s later: %d admitted; counts %d rate limited of %d; want 4, 3 of 17", ok, s.RateLimited(), s.Calls())
	}
}

// hasLimitHeader tells whether h has any rate-limit header of OpenAI's or
// Anthropic's.
func hasLimitHeader(h http.Header) bool {
	for k := range h {
		if k := strings.ToLower(k); strings.HasPrefix(k, "x-ratelimit-") || strings.HasPrefix(k, "anthropic-ratelimit-") {
			return true
		}
	}
	return false
}

// TestLimitHeadersNone: with LimitHeadersNone, no answer carries a
// rate-limit header, in any dialect, bucket or window; a 429 carries its
// Retry-After; what is admitted does not change.
func TestLimitHeadersNone(t *testing.T) {
	for _, bucket := range []bool{false, true} {
		for _, d := range limitDialects {
			p := &Provider{RequestsPerMinute: 2, TokenBucket: bucket, LimitHeaders: LimitHeadersNone, Now: newClock().Now}
			resps := burst(p, 3, d.path, d.body)
			for _, r := range resps {
				if hasLimitHeader(r.Header) {
					t.Errorf("%s, bucket %v: a %d with rate-limit headers %v; want none", d.name, bucket, r.StatusCode, r.Header)
				}
				if r.StatusCode == http.StatusTooManyRequests && r.Header.Get("Retry-After") == "" {
					t.Errorf("%s, bucket %v: a 429 without Retry-After", d.name, bucket)
				}
			}
			if got := statuses(resps); got[http.StatusOK] != 2 || got[http.StatusTooManyRequests] != 1 {
				t.Errorf("%s, bucket %v: 3 calls of 2 a minute: %v, want 2 200s and a 429", d.name, bucket, got)
			}
		}
	}
}

// TestLimitHeadersOverstate: with LimitHeadersOverstate, remaining says
// what is left plus half the limit, at most the limit, and reset when the
// bucket would be full if that were so; what is admitted and Retry-After
// do not change.
func TestLimitHeadersOverstate(t *testing.T) {
	c := newClock()
	p := &Provider{RequestsPerMinute: 120, TokenBucket: true, LimitHeaders: LimitHeadersOverstate, Now: c.Now}
	r := serve(p, chatPath, "", chatBody)
	if r.Header.Get("x-ratelimit-limit-requests") != "120" || r.Header.Get("x-ratelimit-remaining-requests") != "120" ||
		r.Header.Get("x-ratelimit-reset-requests") != "0s" {
		t.Fatalf("first call: headers %v; want limit 120, 120 left (119 + 60, at most 120), reset 0s", r.Header)
	}
	burst(p, 98, chatPath, chatBody)
	r = serve(p, chatPath, "", chatBody) // the 100th: 20 left
	if r.StatusCode != http.StatusOK || r.Header.Get("x-ratelimit-remaining-requests") != "80" ||
		r.Header.Get("x-ratelimit-reset-requests") != "20s" {
		t.Fatalf("the 100th call: %d, headers %v; want 200, 80 left (20 + 60), reset 20s (40 requests' refill)", r.StatusCode, r.Header)
	}
	got := statuses(burst(p, 21, chatPath, chatBody))
	r = serve(p, chatPath, "", chatBody)
	if got[http.StatusOK] != 20 || r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" ||
		r.Header.Get("x-ratelimit-remaining-requests") != "60" || r.Header.Get("x-ratelimit-reset-requests") != "30s" {
		t.Fatalf("22 more: %v, then %d Retry-After %q headers %v; want 20 admitted, then a 429 with 1, 60 left, reset 30s",
			got, r.StatusCode, r.Header.Get("Retry-After"), r.Header)
	}
	// Anthropic's headers lie the same way.
	r = serve(&Provider{RequestsPerMinute: 10, LimitHeaders: LimitHeadersOverstate, Now: c.Now}, messagesPath, "", messagesBody)
	if r.Header.Get("anthropic-ratelimit-requests-remaining") != "10" {
		t.Errorf("Anthropic, a window of 10, first call: %q left, want 10 (9 + 5, at most 10)", r.Header.Get("anthropic-ratelimit-requests-remaining"))
	}
}

// TestParseLimitHeaders: the three names, and an error for any other.
func TestParseLimitHeaders(t *testing.T) {
	for s, want := range map[string]LimitHeaders{"": LimitHeadersExact, "exact": LimitHeadersExact, "none": LimitHeadersNone, "overstate": LimitHeadersOverstate} {
		if got, err := ParseLimitHeaders(s); err != nil || got != want {
			t.Errorf("ParseLimitHeaders(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
	if _, err := ParseLimitHeaders("quantized"); err == nil {
		t.Error(`ParseLimitHeaders("quantized"): no error`)
	}
}
