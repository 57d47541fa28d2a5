package sluice

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"

	"github.com/sluice-llm/sluice/limit"
)

// inFlight returns the slots of limit name held in l's Store.
func inFlight(t *testing.T, l *limit.Limiter, key string) int64 {
	t.Helper()
	bs, err := l.Buckets()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.Key == key {
			return b.InFlight
		}
	}
	return 0
}

// A call that moves past an open breaker to a fallback gives back the
// concurrency slot it took for the refused target: with Concurrent 1,
// every one of many calls is answered by the fallback, none waits for a
// slot its own call holds, and no slot is held after them.
func TestFallbackPastOpenBreakerGivesSlotBack(t *testing.T) {
	p := fastPolicy()
	p.Breaker.Failures = 1
	p.Breaker.Cool = time.Hour
	p.MaxQueue = 200 * time.Millisecond
	r := newFallbackRig(t, "503", p)
	lim := &limit.Limiter{Limits: []limit.Limit{{Name: "conc", Scope: "all", Concurrent: 1}}}
	r.tr.Limiter = lim
	for i := range 50 {
		resp, err := r.chat(false)
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != 200 || answerModel(t, body) != "backup-model" {
			t.Fatalf("call %d: %d %s; want the fallback's 200", i+1, resp.StatusCode, body)
		}
	}
	if got := r.backup.Calls(); got != 50 {
		t.Errorf("fallback answered %d calls, want 50", got)
	}
	if n := inFlight(t, lim, "limit:conc:all:concurrent"); n != 0 {
		t.Errorf("%d slots held after every call ended, want 0", n)
	}
}

// Each way out of a call gives its slot back: a breaker refusal with no
// fallback, a Meter's refusal, a caller gone while the attempt waits for
// its answer, and a body closed before its end.
func TestEveryWayOutGivesSlotBack(t *testing.T) {
	lim := &limit.Limiter{Limits: []limit.Limit{{Name: "conc", Scope: "all", Concurrent: 1}}}
	key := "limit:conc:all:concurrent"
	held := func(t *testing.T) {
		t.Helper()
		if n := inFlight(t, lim, key); n != 0 {
			t.Fatalf("%d slots held after the call, want 0", n)
		}
	}
	t.Run("breaker refusal", func(t *testing.T) {
		p := fastPolicy()
		p.Breaker.Failures = 1
		p.Breaker.Cool = time.Hour
		r := newRig(t, "503", p)
		r.tr.Limiter = lim
		for range 5 {
			resp, err := r.chat(false)
			if err == nil {
				readAll(t, resp)
			}
		}
		held(t)
	})
	t.Run("meter refusal", func(t *testing.T) {
		r := newRig(t, "200", fastPolicy())
		r.tr.Limiter = lim
		r.tr.Meter = refusingMeter{}
		for range 3 {
			if _, err := r.chat(false); err == nil {
				t.Fatal("the meter refused, yet the call went")
			}
		}
		held(t)
	})
	t.Run("caller gone", func(t *testing.T) {
		r := newRig(t, "hang", fastPolicy())
		r.tr.Limiter = lim
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		req := r.request("/v1/chat/completions", `{"model":"m"}`).WithContext(ctx)
		if _, err := r.tr.RoundTrip(req); err == nil {
			t.Fatal("a cancelled call succeeded")
		}
		held(t)
	})
	t.Run("body closed early", func(t *testing.T) {
		r := newRig(t, "200", fastPolicy())
		r.tr.Limiter = lim
		resp, err := r.chat(true)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadFull(resp.Body, make([]byte, 4))
		resp.Body.Close()
		held(t)
	})
}

// refusingMeter refuses every call.
type refusingMeter struct{}

func (refusingMeter) Reserve(hook.Ask) (float64, func(float64), error) {
	return 0, nil, errors.New("over budget")
}

func (refusingMeter) Count(dialect.Dialect, string, bool, int) (func([]byte), func() (float64, int64)) {
	return nil, nil
}

// A breaker that opens mid-call and refuses the next attempt ends the call
// with the provider's real last failure: a stream whose first event was
// the provider's overloaded error is answered with that event, never an
// error saying the provider could not be reached.
func TestBreakerOpenMidCallGivesLastRealFailure(t *testing.T) {
	p := fastPolicy()
	p.Breaker.Failures = 2
	p.Breaker.Cool = time.Hour
	r := newRig(t, "overloaded", p)
	req := r.request("/v1/messages", `{"model":"claude","stream":true,"max_tokens":5,"messages":[]}`)
	resp, err := r.tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("err %v; want the provider's own answer", err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(body, "overloaded_error") {
		t.Fatalf("answer %d %q, want the provider's overloaded error event", resp.StatusCode, body)
	}
	if got := r.srv.Calls(); got != 2 {
		t.Errorf("%d upstream calls, want 2 (the breaker opened on the second)", got)
	}
	if resp.Header.Get("Sluice-Attempts") != "2" {
		t.Errorf("Sluice-Attempts %q, want 2", resp.Header.Get("Sluice-Attempts"))
	}
	lines := r.lines()
	if n := len(lines); n != 3 || lines[2]["outcome"] != "circuit_open" {
		t.Fatalf("lines %v, want two failed attempts and the breaker's refusal", lines)
	}
}

// A call the Limiter refuses names the breaker's real state on its line:
// open while it is open, not closed.
func TestRateLimitedLineNamesBreakerState(t *testing.T) {
	p := fastPolicy()
	p.Breaker.Failures = 1
	p.Breaker.Cool = time.Hour
	r := newRig(t, "200", p)
	r.tr.Limiter = &stubLimiter{refuse: func(int) error { return rateLimited{} }}
	permit, _ := r.tr.Breaker("openai").Allow()
	permit.Done(breaker.Failure, 0)
	if _, err := r.chat(false); err == nil {
		t.Fatal("the Limiter refused, yet the call went")
	}
	lines := r.lines()
	if len(lines) != 1 || lines[0]["outcome"] != "rate_limited" || lines[0]["breaker"] != "open" {
		t.Errorf("lines %v, want one rate_limited line saying the breaker is open", lines)
	}
}

// countingTracer counts the spans started and ended.
type countingTracer struct{ started, ended atomic.Int64 }

func (c *countingTracer) StartAttempt(ctx context.Context, _ http.Header, _ *Attempt) (context.Context, func(*Attempt)) {
	c.started.Add(1)
	return ctx, func(*Attempt) { c.ended.Add(1) }
}

// heldRig is a Transport whose every hold is counted: a Limiter with one
// concurrency slot, a Meter holding money, a retry budget and a Tracer.
type heldRig struct {
	*rig
	lim    *limit.Limiter
	meter  *holdMeter
	tracer *countingTracer
	budget *RetryBudget
	keyed  string // the Idempotency-Key callAndRead's calls carry, if any
}

func newHeldRig(t *testing.T, script string, p Policy) *heldRig {
	r := newRig(t, script, p)
	h := &heldRig{rig: r, tracer: &countingTracer{}, budget: &RetryBudget{},
		lim:   &limit.Limiter{Limits: []limit.Limit{{Name: "conc", Scope: "all", Concurrent: 1}}},
		meter: &holdMeter{}}
	r.tr.Limiter, r.tr.Meter, r.tr.Tracer, r.tr.RetryBudget = h.lim, h.meter, h.tracer, h.budget
	return h
}

// check fails the test unless everything a call took is back.
func (h *heldRig) check(t *testing.T) {
	t.Helper()
	if n := inFlight(t, h.lim, "limit:conc:all:concurrent"); n != 0 {
		t.Errorf("%d concurrency slots held, want 0", n)
	}
	if a, r := h.budget.InFlight(); a != 0 || r != 0 {
		t.Errorf("retry budget: %d attempts in flight, %d retries outstanding; want 0 and 0", a, r)
	}
	if s, e := h.tracer.started.Load(), h.tracer.ended.Load(); s != e {
		t.Errorf("%d spans started, %d ended", s, e)
	}
	if held := h.meter.held.Load(); held != 0 {
		t.Errorf("the Meter holds %d reservations after the calls, want 0", held)
	}
}

// mustPanic runs f and returns the value it panicked with.
func mustPanic(t *testing.T, f func()) (v any) {
	t.Helper()
	defer func() { v = recover() }()
	f()
	t.Fatal("no panic")
	return nil
}

// A panic in Observe, wherever it comes, gives back all that the call
// holds and goes on to the caller; the next call finds its slot free.
func TestObservePanicGivesEverythingBack(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		on           Outcome
	}{
		{"success line", "200", OutcomeOK},
		{"failed attempt line", "503,200", OutcomeRetry},
		{"last failure line", "400", OutcomeFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldRig(t, tc.script, fastPolicy())
			h.tr.Observe = func(a *Attempt) {
				if a.Outcome == tc.on {
					panic("observe")
				}
			}
			got := mustPanic(t, func() {
				resp, err := h.chat(false)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
			if got != "observe" {
				t.Fatalf("panicked with %v", got)
			}
			h.check(t)
		})
	}
	t.Run("breaker refusal line", func(t *testing.T) {
		p := fastPolicy()
		p.Breaker.Failures = 1
		p.Breaker.Cool = time.Hour
		h := newHeldRig(t, "200", p)
		permit, _ := h.tr.Breaker("openai").Allow()
		permit.Done(breaker.Failure, 0)
		h.tr.Observe = func(a *Attempt) {
			if a.Outcome == OutcomeCircuitOpen {
				panic("observe")
			}
		}
		mustPanic(t, func() { h.chat(false) })
		h.check(t)
	})
	t.Run("meter refusal line", func(t *testing.T) {
		h := newHeldRig(t, "200", fastPolicy())
		h.meter.refuse = true
		h.tr.Observe = func(a *Attempt) { panic("observe") }
		mustPanic(t, func() { h.chat(false) })
		h.check(t)
	})
}

// A panic in the Tracer, Base or a fallback's Rewrite gives back all the
// same.
func TestHookPanicGivesEverythingBack(t *testing.T) {
	t.Run("base", func(t *testing.T) {
		h := newHeldRig(t, "200", fastPolicy())
		h.tr.Base = roundTripFunc(func(*http.Request) (*http.Response, error) { panic("base") })
		mustPanic(t, func() { h.chat(false) })
		h.check(t)
	})
	t.Run("rewrite", func(t *testing.T) {
		p := fastPolicy()
		p.Retry.MaxAttempts = 1
		h := newHeldRig(t, "503", p)
		h.tr.Fallbacks = []Target{{Provider: "backup", Rewrite: func(*http.Request) { panic("rewrite") }}}
		mustPanic(t, func() { h.chat(false) })
		h.check(t)
	})
	t.Run("tracer end", func(t *testing.T) {
		h := newHeldRig(t, "503,200", fastPolicy())
		h.tr.Tracer = panickingTracer{h.tracer}
		mustPanic(t, func() { h.chat(false) })
		if a, r := h.budget.InFlight(); a != 0 || r != 0 {
			t.Errorf("retry budget: %d attempts, %d retries; want 0 and 0", a, r)
		}
		if n := inFlight(t, h.lim, "limit:conc:all:concurrent"); n != 0 {
			t.Errorf("%d slots held", n)
		}
	})
}

// panickingTracer's spans panic as they end.
type panickingTracer struct{ *countingTracer }

func (p panickingTracer) StartAttempt(ctx context.Context, h http.Header, a *Attempt) (context.Context, func(*Attempt)) {
	p.started.Add(1)
	return ctx, func(*Attempt) { p.ended.Add(1); panic("tracer") }
}

// A body the caller neither reads nor closes is ended at the call's total
// timeout: its slot, its money and its span are given back and its line
// is written (a timeout the breaker ignores), and a later Read says why.
func TestUnreadBodyEndsAtTotal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf lockedBuffer
		lim := &limit.Limiter{Limits: []limit.Limit{{Name: "conc", Scope: "all", Concurrent: 1}}}
		tracer := &countingTracer{}
		p := fastPolicy()
		p.Breaker.Failures = 1
		tr := &Transport{Policy: p, Provider: "openai", Log: NewAttemptLog(&buf), Limiter: lim, Tracer: tracer,
			Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Request: r, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(`{"choices":[]}`))}, nil
			})}
		req, _ := http.NewRequest("POST", "http://provider.test/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(p.Timeout.Total + time.Second)
		synctest.Wait()
		if n := inFlight(t, lim, "limit:conc:all:concurrent"); n != 0 {
			t.Errorf("%d slots held past total by a body nobody read, want 0", n)
		}
		if s, e := tracer.started.Load(), tracer.ended.Load(); s != 1 || e != 1 {
			t.Errorf("%d spans started, %d ended; want 1 and 1", s, e)
		}
		if !strings.Contains(buf.String(), `"outcome":"timeout"`) || !strings.Contains(buf.String(), `"error":"timeout_total"`) {
			t.Errorf("log %q, want the attempt's line ended by the total timeout", buf.String())
		}
		if rec, _ := tr.Breaker("openai").Record(); rec.Failures != 0 {
			t.Errorf("breaker counted %d failures; a body held unread is not the provider's", rec.Failures)
		}
		if _, err := resp.Body.Read(make([]byte, 8)); !errors.Is(err, ErrTimeout) {
			t.Errorf("Read after total: %v, want the total timeout", err)
		}
		resp.Body.Close()
	})
}

// holdMeter counts the reservations not yet settled; with refuse, it
// refuses every call.
type holdMeter struct {
	held   atomic.Int64
	refuse bool
}

func (m *holdMeter) Reserve(hook.Ask) (float64, func(float64), error) {
	if m.refuse {
		return 0, nil, errors.New("over budget")
	}
	m.held.Add(1)
	var once atomic.Bool
	return -1, func(float64) {
		if once.Swap(true) {
			panic("settled twice")
		}
		m.held.Add(-1)
	}, nil
}

func (m *holdMeter) Count(dialect.Dialect, string, bool, int) (func([]byte), func() (float64, int64)) {
	return nil, nil
}

// A retry is outstanding in the budget from its decision until its attempt
// is answered, as Envoy counts it: a retry whose stream is being read holds
// no token, so that long answers after a retry do not starve the retries
// of other calls.
func TestRetryTokenGivenBackWhenAnswered(t *testing.T) {
	r := newRig(t, "503,200", fastPolicy())
	b := &RetryBudget{}
	r.tr.RetryBudget = b
	resp, err := r.chat(true)
	if err != nil {
		t.Fatal(err)
	}
	if a, n := b.InFlight(); a != 1 || n != 0 {
		t.Errorf("while the retry's stream is read: %d attempts in flight, %d retries outstanding; want 1 and 0", a, n)
	}
	readAll(t, resp)
	if a, n := b.InFlight(); a != 0 || n != 0 {
		t.Errorf("after the call: %d attempts, %d retries; want 0 and 0", a, n)
	}
}
