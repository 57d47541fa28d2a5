package sluice

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/spend"
)

// stubLimiter records what the engine tells a Limiter; its answers are
// set per test.
type stubLimiter struct {
	mu      sync.Mutex
	waits   []stubWait
	dones   int
	used    []int64 // what each done was told
	learned []stubLearn
	kinds   []string  // the Kind of the dialect each Learn was told
	events  *[]string // shared with a stubMeter: the order of calls

	wait   time.Duration                   // what Wait reports as waited
	refuse func(n int) error               // Wait's error for the n-th wait (from 1), or nil
	block  func(ctx context.Context) error // if set, Wait blocks in it
}

type stubWait struct {
	provider, model string
	bodyBytes       int
	maxTokens       int64
	maxWait         time.Duration
	upstreamBefore  int
}

type stubLearn struct {
	status     int
	quota      bool
	retryAfter time.Duration
}

func (l *stubLimiter) Wait(ctx context.Context, ask hook.Ask) (time.Duration, func(int64), error) {
	l.mu.Lock()
	l.waits = append(l.waits, stubWait{ask.Provider, ask.Model, ask.BodyBytes, ask.MaxTokens, ask.MaxWait, 0})
	n := len(l.waits)
	if l.events != nil {
		*l.events = append(*l.events, "wait")
	}
	l.mu.Unlock()
	if l.block != nil {
		if err := l.block(ctx); err != nil {
			return 0, nil, err
		}
	}
	if l.refuse != nil {
		if err := l.refuse(n); err != nil {
			return 0, nil, err
		}
	}
	return l.wait, func(used int64) {
		l.mu.Lock()
		l.dones++
		l.used = append(l.used, used)
		l.mu.Unlock()
	}, nil
}

func (l *stubLimiter) Learn(ans hook.Answer) {
	l.mu.Lock()
	l.learned = append(l.learned, stubLearn{ans.Status, ans.Quota, ans.RetryAfter})
	l.kinds = append(l.kinds, ans.Dialect.Kind())
	l.mu.Unlock()
}

// rateLimited is a refusal as package limit makes one.
type rateLimited struct{}

func (rateLimited) Error() string             { return "rate limited" }
func (rateLimited) Class() string             { return "rate_limited" }
func (rateLimited) RetryAfter() time.Duration { return 3 * time.Second }

// A rate-limit 429 is not an outage: however many the provider sends, the
// breaker stays closed (a quota 429 neither).
func TestRateLimit429NeverOpensBreaker(t *testing.T) {
	p := fastPolicy()
	p.Breaker.Failures = 2
	p.Retry.MaxAttempts = 2
	r := newRig(t, "429", p)
	for range 4 {
		resp, err := r.chat(false)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != 429 {
			t.Fatalf("status %d, want the provider's 429", resp.StatusCode)
		}
	}
	if got := r.srv.Calls(); got != 8 {
		t.Errorf("upstream calls = %d, want 8 (4 calls × 2 attempts, none refused by a breaker)", got)
	}
	rec, err := r.tr.Breaker(r.tr.BreakerName("openai", "gpt-4o-mini")).Record()
	if err != nil || rec.State != breaker.Closed || rec.Failures != 0 {
		t.Errorf("breaker %+v (%v) after eight rate-limit 429s, want closed, no failure counted", rec, err)
	}
}

// The Limiter is asked before every attempt, retries included, with the
// current target and what the call may wait; the time waited is on the
// attempt's line, and each attempt's done is called once.
func TestLimiterWaitsBeforeEachAttempt(t *testing.T) {
	p := fastPolicy()
	p.Timeout.Total, p.Timeout.FirstByte = 10*time.Second, 2*time.Second
	r := newRig(t, "503,200", p)
	lim := &stubLimiter{wait: 15 * time.Millisecond}
	r.tr.Limiter = lim
	resp, err := r.tr.RoundTrip(r.request("/v1/chat/completions", `{"model":"gpt-4o-mini","max_tokens":7,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if len(lim.waits) != 2 || r.srv.Calls() != 2 {
		t.Fatalf("waits %d, upstream calls %d; want 2 and 2", len(lim.waits), r.srv.Calls())
	}
	w := lim.waits[0]
	if w.provider != "openai" || w.model != "gpt-4o-mini" || w.maxTokens != 7 || w.bodyBytes != 52 {
		t.Errorf("first wait %+v", w)
	}
	// What may be waited: what is left of total minus one first byte.
	if w.maxWait > 8*time.Second || w.maxWait < 7*time.Second {
		t.Errorf("maxWait %v, want just under 8s (10s total − 2s first byte)", w.maxWait)
	}
	if lim.dones != 2 {
		t.Errorf("done called %d times, want once per attempt (2)", lim.dones)
	}
	lines := r.lines()
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if l["queued_ms"] != 15.0 {
			t.Errorf("queued_ms %v, want 15: %v", l["queued_ms"], l)
		}
	}
	if len(lim.learned) != 2 || lim.learned[0].status != 503 || lim.learned[1].status != 200 {
		t.Errorf("learned %+v, want 503 then 200", lim.learned)
	}
}

// MaxQueue bounds the wait below what the total leaves.
func TestLimiterMaxQueue(t *testing.T) {
	p := fastPolicy()
	p.Timeout.Total, p.Timeout.FirstByte = 10*time.Second, 2*time.Second
	p.MaxQueue = 3 * time.Second
	r := newRig(t, "200", p)
	lim := &stubLimiter{}
	r.tr.Limiter = lim
	resp, err := r.chat(false)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if len(lim.waits) != 1 || lim.waits[0].maxWait != 3*time.Second {
		t.Fatalf("waits %+v, want one with maxWait 3s", lim.waits)
	}
	if _, ok := r.lines()[0]["queued_ms"]; ok {
		t.Error("queued_ms written for a call that did not wait")
	}
}

// A refused first attempt ends the call with the Limiter's error, before
// any money is held and without an upstream call; its line says
// rate_limited.
func TestLimiterRefusesFirstAttempt(t *testing.T) {
	r := newRig(t, "200", fastPolicy())
	var events []string
	r.tr.Limiter = &stubLimiter{events: &events, refuse: func(int) error { return rateLimited{} }}
	r.tr.Meter = &stubMeter{events: &events}
	_, err := r.chat(false)
	var rl rateLimited
	if !errors.As(err, &rl) {
		t.Fatalf("err %v, want the Limiter's", err)
	}
	if r.srv.Calls() != 0 {
		t.Errorf("upstream calls %d, want 0", r.srv.Calls())
	}
	if len(events) != 1 || events[0] != "wait" {
		t.Errorf("events %v: the Meter must not reserve for a refused call", events)
	}
	lines := r.lines()
	if len(lines) != 1 || lines[0]["outcome"] != "rate_limited" || lines[0]["error"] != "rate_limited" || lines[0]["status"] != 0.0 {
		t.Errorf("lines %v", lines)
	}
}

// Money is held after the wait, not before it.
func TestLimiterWaitsBeforeMeterReserves(t *testing.T) {
	r := newRig(t, "200", fastPolicy())
	var events []string
	r.tr.Limiter = &stubLimiter{events: &events}
	r.tr.Meter = &stubMeter{events: &events}
	resp, err := r.chat(false)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if len(events) != 2 || events[0] != "wait" || events[1] != "reserve" {
		t.Errorf("events %v, want wait then reserve", events)
	}
}

// A refused retry ends the call with the failure before it.
func TestLimiterRefusedRetryGivesLastFailure(t *testing.T) {
	r := newRig(t, "503,200", fastPolicy())
	lim := &stubLimiter{refuse: func(n int) error {
		if n > 1 {
			return rateLimited{}
		}
		return nil
	}}
	r.tr.Limiter = lim
	resp, err := r.chat(false)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != 503 || r.srv.Calls() != 1 {
		t.Errorf("status %d after %d upstream calls, want the 503 after 1", resp.StatusCode, r.srv.Calls())
	}
	if lim.dones != 1 {
		t.Errorf("done called %d times, want 1", lim.dones)
	}
}

// The Limiter is told the call's dialect with each answer, to read its
// rate-limit headers through: the Transport's, else the one its path
// speaks.
func TestLimiterToldTheDialect(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    dialect.Dialect
		path string
		want string
	}{
		{"the Transport's", dialect.Anthropic, "/v1/messages", "anthropic"},
		{"the Transport's, whatever the path", dialect.Azure, "/v1/chat/completions", "azure"},
		{"the path's", nil, "/v1beta/models/gemini-2.0-flash:generateContent", "gemini"},
		{"none: OpenAI", nil, "/v1/chat/completions", "openai"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, "503,200", fastPolicy())
			lim := &stubLimiter{}
			r.tr.Limiter, r.tr.Dialect = lim, tt.d
			resp, err := r.tr.RoundTrip(r.request(tt.path, `{"model":"m","messages":[]}`))
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if len(lim.kinds) != 2 || lim.kinds[0] != tt.want || lim.kinds[1] != tt.want {
				t.Errorf("Learn told %q, want %q twice (the 503, the 200)", lim.kinds, tt.want)
			}
		})
	}
}

// The Limiter learns what each 429 is and the wait it asks for.
func TestLimiterLearns429(t *testing.T) {
	for _, tt := range []struct {
		script string
		want   stubLearn
	}{
		{"429:retry-after=2,200", stubLearn{status: 429, retryAfter: 2 * time.Second}},
		{"429:insufficient_quota", stubLearn{status: 429, quota: true}},
	} {
		t.Run(tt.script, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := fastPolicy()
				p.Timeout.Total = 5 * time.Second
				r := newFakeRig(t, tt.script, p)
				lim := &stubLimiter{}
				r.tr.Limiter = lim
				resp, err := r.chat(false)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if len(lim.learned) == 0 || lim.learned[0] != tt.want {
					t.Errorf("learned %+v, want first %+v", lim.learned, tt.want)
				}
			})
		})
	}
}

// A caller that leaves while its call is queued gets its own error at once
// and nothing goes upstream.
func TestLimiterCancelWhileQueued(t *testing.T) {
	r := newRig(t, "200", fastPolicy())
	r.tr.Limiter = &stubLimiter{block: func(ctx context.Context) error {
		<-ctx.Done()
		return context.Cause(ctx)
	}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := r.tr.RoundTrip(r.request("/v1/chat/completions", `{"model":"m"}`).WithContext(ctx))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("returned after %v", d)
	}
	if r.srv.Calls() != 0 {
		t.Errorf("upstream calls %d", r.srv.Calls())
	}
}

// stubMeter records the order of its reservations.
type stubMeter struct{ events *[]string }

func (m *stubMeter) Reserve(hook.Ask) (float64, func(float64), error) {
	*m.events = append(*m.events, "reserve")
	return -1, nil, nil
}

func (m *stubMeter) Count(dialect.Dialect, string, bool, int) (func([]byte), func() (float64, int64)) {
	return nil, nil
}

// The tokens the Meter reads from an answer's usage are what the
// Limiter's done is told: a tokens-per-minute limit settles on them. A
// failed attempt settles nothing (0: the estimate stands).
func TestLimiterToldTokensUsed(t *testing.T) {
	for _, stream := range []bool{false, true} {
		r := newRig(t, "503,200", fastPolicy())
		lim := &stubLimiter{}
		r.tr.Limiter = lim
		r.tr.Meter = &spend.Meter{} // no budget, no price: tokens are still read
		body := `{"model":"gpt-4o-mini","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
		if stream {
			body = `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
		}
		resp, err := r.tr.RoundTrip(r.request("/v1/chat/completions", body))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		// The fake's usage: prompt tokens are the body's bytes / 4, completion
		// tokens its 5 pieces of text.
		want := int64(len(body)/4 + 5)
		if len(lim.used) != 2 || lim.used[0] != 0 || lim.used[1] != want {
			t.Errorf("stream %v: done told %v, want [0 %d]", stream, lim.used, want)
		}
	}
}

// A rate limit or a quota sent as a stream's first event, in a 200, is
// learnt as a 429: the model is paused host-wide as for a 429 answer.
func TestLimiterLearnsErrorEvent(t *testing.T) {
	for _, tt := range []struct {
		name, event string
		want        stubLearn
	}{
		{"rate_limit", `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, stubLearn{status: 429}},
		{"quota", `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, stubLearn{status: 429, quota: true}},
		{"overloaded", `{"error":{"message":"Overloaded","type":"overloaded_error"}}`, stubLearn{status: 529}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up, r, url := sseRig(t, fastPolicy(), 0, "data: "+tt.event+"\n\n")
			up.end = true
			lim := &stubLimiter{}
			r.tr.Limiter = lim
			resp, err := r.post(url)
			if err == nil {
				readAll(t, resp)
			}
			if len(lim.learned) < 2 || lim.learned[0] != (stubLearn{status: 200}) || lim.learned[1] != tt.want {
				t.Errorf("learned %+v, want the 200's headers, then %+v", lim.learned, tt.want)
			}
		})
	}
}
