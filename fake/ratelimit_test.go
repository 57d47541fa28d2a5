package fake

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// t0 is the fake clock's start in the rate-limit tests.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// clock is a fake clock for Provider.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// set moves the clock to t0+d.
func (c *clock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t0.Add(d)
}

// serve calls p directly, without a socket, and returns its answer.
func serve(p *Provider, path, script, body string) *http.Response {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if script != "" {
		req.Header.Set(ScriptHeader, script)
	}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	return rec.Result()
}

// burst makes n calls to p at once and returns their answers.
func burst(p *Provider, n int, path, body string) []*http.Response {
	out := make([]*http.Response, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() { out[i] = serve(p, path, "", body) })
	}
	wg.Wait()
	return out
}

// statuses counts answers by status.
func statuses(resps []*http.Response) map[int]int {
	m := make(map[int]int)
	for _, r := range resps {
		m[r.StatusCode]++
	}
	return m
}

// TestWindowAdmit: the sliding window over fixed instants. A call admitted
// at t leaves at t+60s exactly; a refused call is not counted; the wait is
// until the oldest calls that make room leave.
func TestWindowAdmit(t *testing.T) {
	type step struct {
		at           time.Duration
		want         int // the call's tokens
		admitted     bool
		over         string
		wait         time.Duration
		requests     int // in the window after the call
		tokens       int
		resetAfterT0 time.Duration
	}
	tests := []struct {
		name          string
		rpm, tpm      int
		steps         []step
		tooLargeAtEnd bool
	}{
		{"requests", 3, 0, []step{
			{0, 10, true, "", 0, 1, 10, 60 * time.Second},
			{10 * time.Second, 10, true, "", 0, 2, 20, 70 * time.Second},
			{20 * time.Second, 10, true, "", 0, 3, 30, 80 * time.Second},
			{30 * time.Second, 10, false, "requests", 30 * time.Second, 3, 30, 80 * time.Second},
			{59*time.Second + 999*time.Millisecond, 10, false, "requests", time.Millisecond, 3, 30, 80 * time.Second},
			{60 * time.Second, 10, true, "", 0, 3, 30, 120 * time.Second}, // the first has left, at 60s exactly
			{61 * time.Second, 10, false, "requests", 9 * time.Second, 3, 30, 120 * time.Second},
			{140 * time.Second, 10, true, "", 0, 1, 10, 200 * time.Second}, // all gone
		}, false},
		{"tokens", 0, 100, []step{
			{0, 40, true, "", 0, 1, 40, 60 * time.Second},
			{5 * time.Second, 40, true, "", 0, 2, 80, 65 * time.Second},
			{6 * time.Second, 30, false, "tokens", 54 * time.Second, 2, 80, 65 * time.Second},  // 80+30 > 100 until the first leaves
			{7 * time.Second, 20, true, "", 0, 3, 100, 67 * time.Second},                       // 20 still fits: the refusal took nothing
			{8 * time.Second, 90, false, "tokens", 59 * time.Second, 3, 100, 67 * time.Second}, // room for 90 when all three have left (at 67s)
			{60 * time.Second, 1, true, "", 0, 3, 61, 120 * time.Second},
			{61 * time.Second, 101, false, "tokens", time.Minute, 3, 61, 120 * time.Second}, // larger than the limit: never fits
		}, true},
		{"both", 2, 50, []step{
			{0, 30, true, "", 0, 1, 30, 60 * time.Second},
			{20 * time.Second, 10, true, "", 0, 2, 40, 80 * time.Second},
			// over both: requests named, the longer wait (requests: until 60s; tokens: 45 fits when both left, at 80s)
			{30 * time.Second, 45, false, "requests", 50 * time.Second, 2, 40, 80 * time.Second},
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w window
			var last quota
			for i, s := range tt.steps {
				q := w.admit(t0.Add(s.at), tt.rpm, tt.tpm, s.want)
				if q.admitted != s.admitted || q.over != s.over || q.wait != s.wait ||
					q.requests != s.requests || q.tokens != s.tokens || !q.resetAt.Equal(t0.Add(s.resetAfterT0)) {
					t.Errorf("step %d at %v: admitted %v over %q wait %v, window %d calls %d tokens, reset t0+%v; "+
						"want %v %q %v, %d %d, t0+%v", i, s.at, q.admitted, q.over, q.wait, q.requests, q.tokens,
						q.resetAt.Sub(t0), s.admitted, s.over, s.wait, s.requests, s.tokens, s.resetAfterT0)
				}
				last = q
			}
			if last.tooLarge != tt.tooLargeAtEnd {
				t.Errorf("last call tooLarge = %v, want %v", last.tooLarge, tt.tooLargeAtEnd)
			}
		})
	}
}

// TestWindowLimitLowered: a window holding more calls than a lowered
// limit waits for as many of them to leave as it takes; when both limits
// refuse, the wait is the longer.
func TestWindowLimitLowered(t *testing.T) {
	var w window
	for _, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		w.admit(t0.Add(at), 3, 0, 10)
	}
	for _, tt := range []struct {
		rpm, tpm int
		over     string
		wait     time.Duration
	}{
		{1, 0, "requests", 50 * time.Second},  // all three must leave: the last at 80 s
		{2, 0, "requests", 40 * time.Second},  // two must leave: the second at 70 s
		{1, 25, "requests", 50 * time.Second}, // tokens alone would wait 40 s
		{4, 25, "tokens", 40 * time.Second},   // 10+10 fits once two have left
	} {
		q := w.admit(t0.Add(30*time.Second), tt.rpm, tt.tpm, 10)
		if q.admitted || q.over != tt.over || q.wait != tt.wait || q.requests != 3 {
			t.Errorf("limits %d/%d: admitted %v over %q wait %v, %d in the window; want refused for %s, %v, 3",
				tt.rpm, tt.tpm, q.admitted, q.over, q.wait, q.requests, tt.over, tt.wait)
		}
	}
}

// TestRetryAfterRoundsUp: Retry-After is the wait in whole seconds,
// rounded up, at least 1.
func TestRetryAfterRoundsUp(t *testing.T) {
	for _, tt := range []struct {
		wait time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {time.Second + 1, 2}, {59500 * time.Millisecond, 60}, {time.Minute, 60}} {
		if got := (quota{wait: tt.wait}).retryAfter(); got != tt.want {
			t.Errorf("wait %v: Retry-After %d, want %d", tt.wait, got, tt.want)
		}
	}
}

// limitDialect names a dialect's path, a body and its rate-limit headers.
type limitDialect struct {
	name, path, body                 string
	reqLimit, reqRemaining, reqReset string
	tokLimit, tokRemaining, tokReset string
	resetIn                          func(now, at time.Duration) string // the reset header's value at t0+now for a reset at t0+at
}

var limitDialects = []limitDialect{
	{"openai", chatPath, chatBody,
		"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
		"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens",
		func(now, at time.Duration) string { return (at - now).String() }},
	{"responses", respPath, `{"model":"gpt-test","input":"hi"}`,
		"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
		"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens",
		func(now, at time.Duration) string { return (at - now).String() }},
	{"anthropic", messagesPath, messagesBody,
		"anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset",
		"anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset",
		func(_, at time.Duration) string { return t0.Add(at).Format(time.RFC3339) }},
}

// TestRequestsPerMinuteBurst: with RequestsPerMinute 120, 200 calls at
// once give exactly 120 answers and 80 429s with Retry-After 60, in every
// dialect; the remaining counts the 200s carry are 119 down to 0, each
// once; the 429s say 0 remain.
func TestRequestsPerMinuteBurst(t *testing.T) {
	for _, d := range limitDialects {
		t.Run(d.name, func(t *testing.T) {
			p := &Provider{RequestsPerMinute: 120, Now: newClock().Now}
			resps := burst(p, 200, d.path, d.body)
			if got := statuses(resps); got[200] != 120 || got[429] != 80 || len(got) != 2 {
				t.Fatalf("statuses %v, want 120 × 200 and 80 × 429", got)
			}
			seen := make(map[string]int)
			for _, r := range resps {
				h := r.Header
				if h.Get(d.reqLimit) != "120" || h.Get(d.reqReset) != d.resetIn(0, time.Minute) || h.Get(d.tokLimit) != "" {
					t.Fatalf("%d: limit %q reset %q token limit %q; want 120, %q and none",
						r.StatusCode, h.Get(d.reqLimit), h.Get(d.reqReset), h.Get(d.tokLimit), d.resetIn(0, time.Minute))
				}
				if r.StatusCode == 200 {
					seen[h.Get(d.reqRemaining)]++
					continue
				}
				if h.Get("Retry-After") != "60" || h.Get(d.reqRemaining) != "0" {
					t.Fatalf("429: Retry-After %q remaining %q, want 60 and 0", h.Get("Retry-After"), h.Get(d.reqRemaining))
				}
				if kind := limitKind(t, d, r); kind != "requests" {
					t.Fatalf("429 for %q, want requests", kind)
				}
			}
			for n := range 120 {
				if seen[strconv.Itoa(n)] != 1 {
					t.Fatalf("remaining %d seen %d times among the 200s, want once: %v", n, seen[strconv.Itoa(n)], seen)
				}
			}
			if p.Calls() != 200 || p.RateLimited() != 80 || p.Played()["200"] != 120 || len(p.Played()) != 1 {
				t.Errorf("calls %d, rate limited %d, played %v; want 200, 80, 120 × 200", p.Calls(), p.RateLimited(), p.Played())
			}
		})
	}
}

// TestRequestsWindowSlides: 60 calls at 0 s and 60 at 30 s fill a limit of
// 120; at 45 s every call waits 15 s; at 60 s the first 60 have left, so
// of 100 calls 60 are answered and 40 wait 30 s; at 89.5 s one waits
// 0.5 s (Retry-After 1); at 90 s 60 more
// are answered and the next waits for those of 60 s.
func TestRequestsWindowSlides(t *testing.T) {
	clk := newClock()
	p := &Provider{RequestsPerMinute: 120, Now: clk.Now}
	type round struct {
		at                 time.Duration
		calls, ok, refused int
		retryAfter         string
		remaining          string // after the last call
	}
	for _, r := range []round{
		{0, 60, 60, 0, "", "60"},
		{30 * time.Second, 60, 60, 0, "", "0"},
		{45 * time.Second, 10, 0, 10, "15", "0"},
		{60 * time.Second, 100, 60, 40, "30", "0"},
		{89*time.Second + 500*time.Millisecond, 1, 0, 1, "1", "0"},
		{90 * time.Second, 61, 60, 1, "30", "0"}, // the oldest now came at 60 s
	} {
		clk.set(r.at)
		var last *http.Response
		got := map[int]int{}
		for range r.calls {
			last = serve(p, chatPath, "", chatBody)
			got[last.StatusCode]++
			if last.StatusCode == 429 && last.Header.Get("Retry-After") != r.retryAfter {
				t.Fatalf("at %v: Retry-After %q, want %q", r.at, last.Header.Get("Retry-After"), r.retryAfter)
			}
		}
		if got[200] != r.ok || got[429] != r.refused {
			t.Errorf("at %v: %v, want %d × 200 and %d × 429", r.at, got, r.ok, r.refused)
		}
		if rem := last.Header.Get("x-ratelimit-remaining-requests"); rem != r.remaining {
			t.Errorf("at %v: remaining %q after the last call, want %q", r.at, rem, r.remaining)
		}
	}
	if p.Calls() != 292 || p.RateLimited() != 52 || p.Played()["200"] != 240 {
		t.Errorf("calls %d, rate limited %d, played %v; want 292, 52, 240 × 200", p.Calls(), p.RateLimited(), p.Played())
	}
}

// TestRequestsSpreadEvenly: one call every 250 ms for two minutes (240 a
// minute) under a limit of 120: the first 30 s are admitted, the next 30 s
// refused with Retry-After from 30 down to 1, then each slot freed at
// t+60s is taken by the call that arrives at that instant, and the 30 s
// after it are refused again: 240 of 480 admitted.
func TestRequestsSpreadEvenly(t *testing.T) {
	clk := newClock()
	p := &Provider{RequestsPerMinute: 120, Now: clk.Now}
	admitted := make(map[bool]int) // by whether the call came in the first half of its minute
	var retry []string
	for i := range 480 {
		at := time.Duration(i) * 250 * time.Millisecond
		clk.set(at)
		r := serve(p, chatPath, "", chatBody)
		firstHalf := at%time.Minute < 30*time.Second
		if r.StatusCode == 200 {
			admitted[firstHalf]++
		} else if i < 240 {
			retry = append(retry, r.Header.Get("Retry-After"))
		}
	}
	if admitted[true] != 240 || admitted[false] != 0 || p.RateLimited() != 240 {
		t.Errorf("admitted %d in first halves, %d in second halves, %d refused; want 240, 0, 240",
			admitted[true], admitted[false], p.RateLimited())
	}
	// The first refusal, at 30 s, waits for the call of 0 s; the last of the
	// first minute, at 59.75 s, for the call of 29.75 s: 0.25 s, rounded up.
	if len(retry) != 120 || retry[0] != "30" || retry[3] != "30" || retry[4] != "29" || retry[119] != "1" {
		t.Errorf("%d refusals in the first minute, Retry-After %v", len(retry), retry)
	}
}
