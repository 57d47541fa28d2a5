package sluice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/internal/leaktest"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
	"github.com/sluice-llm/sluice/state"
)

// tardy is an OpenAI-speaking provider whose nth call waits delay(n)
// before it answers (or until the caller leaves); slowOnce, if set,
// instead says which request ids are slow the first time they are sent
// (a second send, a hedge, is fast).
type tardy struct {
	delay     func(n int) time.Duration
	status    func(n int) int // the nth call's status; nil: 200
	slowOnce  func(id string) time.Duration
	mu        sync.Mutex
	seen      map[string]bool
	calls     atomic.Int64
	cancelled atomic.Int64 // calls whose caller left before the answer
	srv       *httptest.Server
}

func newTardy(t *testing.T, delay func(n int) time.Duration) *tardy {
	p := &tardy{delay: delay}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(p.calls.Add(1))
		io.Copy(io.Discard, r.Body)
		d := time.Duration(0)
		if p.delay != nil {
			d = p.delay(n)
		}
		if p.slowOnce != nil {
			id := r.Header.Get("X-Request-Id")
			p.mu.Lock()
			if p.seen == nil {
				p.seen = map[string]bool{}
			}
			if !p.seen[id] {
				d = p.slowOnce(id)
			}
			p.seen[id] = true
			p.mu.Unlock()
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			p.cancelled.Add(1)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if p.status != nil && p.status(n) != 200 {
			w.WriteHeader(p.status(n))
			io.WriteString(w, `{"error":{"message":"bad request","type":"invalid_request_error","param":null,"code":null}}`)
			return
		}
		fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"answer %d"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, n, n)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// hedgeRig is a Transport with a hedging policy in front of a tardy
// primary, and a fallback on a second tardy provider when backup is set.
type hedgeRig struct {
	*rig
	primary, backup *tardy
}

func newHedgeRig(t *testing.T, h Hedge, primary, backup *tardy) *hedgeRig {
	p := fastPolicy()
	p.Hedge = h
	p.Timeout.FirstByte, p.Timeout.Total = 5*time.Second, 10*time.Second
	logs := &lockedBuffer{}
	tr := &Transport{Policy: p, Provider: "primary", Log: NewAttemptLog(logs)}
	if backup != nil {
		u, _ := url.Parse(backup.srv.URL)
		tr.Fallbacks = []Target{{Provider: "backup", Rewrite: func(r *http.Request) { r.URL.Host, r.Host = u.Host, u.Host }}}
	}
	return &hedgeRig{rig: &rig{t: t, tr: tr, logs: logs}, primary: primary, backup: backup}
}

// call makes one call and reads its answer; it returns the answer and
// how long the call took.
func (r *hedgeRig) call(t *testing.T) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, r.primary.srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	resp, err := r.tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b), time.Since(start)
}

func fixed(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }

// firstSlow is a provider whose first call takes slow, the rest fast.
func firstSlow(slow, fast time.Duration) func(int) time.Duration {
	return func(n int) time.Duration {
		if n == 1 {
			return slow
		}
		return fast
	}
}

// waitFor waits until ok holds, at most 5 s.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
	}
}

func TestHedgeAnswersFirst(t *testing.T) {
	leaktest.Check(t)
	for _, fallback := range []bool{false, true} {
		primary := newTardy(t, firstSlow(4*time.Second, 0))
		var backup *tardy
		if fallback {
			backup = newTardy(t, fixed(0))
		}
		r := newHedgeRig(t, Hedge{After: HedgeAfter{Wait: 100 * time.Millisecond}, MaxShare: 1}, primary, backup)
		got, took := r.call(t)
		if took > 2*time.Second {
			t.Fatalf("fallback %v: the hedged call took %v; the slow first attempt was not raced", fallback, took)
		}
		hedgedTo := primary
		if fallback {
			hedgedTo = backup
		}
		if !strings.Contains(got, `answer`) || (hedgedTo == primary && !strings.Contains(got, "answer 2")) {
			t.Errorf("fallback %v: answer %s, want the hedge's", fallback, got)
		}
		waitFor(t, "the loser's cancellation", func() bool { return primary.cancelled.Load() == 1 })
		waitFor(t, "two lines", func() bool { return len(r.lines()) == 2 })
		lines := r.lines()
		slices.SortFunc(lines, func(a, b map[string]any) int { return strings.Compare(fmt.Sprint(a["hedge"]), fmt.Sprint(b["hedge"])) })
		if lines[0]["outcome"] != string(OutcomeHedgeLost) || lines[1]["outcome"] != "ok" || lines[1]["hedge"] != "sent" {
			t.Errorf("fallback %v: lines %v, want the first hedge_lost and the hedge's ok", fallback, lines)
		}
		if lines[0]["request_id"] != lines[1]["request_id"] {
			t.Errorf("the hedge has another request id: %v", lines)
		}
	}
}

func TestHedgeNotNeeded(t *testing.T) {
	primary := newTardy(t, fixed(0))
	r := newHedgeRig(t, Hedge{After: HedgeAfter{Wait: 500 * time.Millisecond}, MaxShare: 1}, primary, nil)
	for range 5 {
		r.call(t)
	}
	if n := primary.calls.Load(); n != 5 {
		t.Errorf("%d upstream calls for 5 quick calls, want 5", n)
	}
}

// A hedge never goes to a target whose breaker is not closed, nor while
// the Limiter has no slot at once: the slow first attempt answers, and
// its line says the hedge was refused.
func TestHedgeRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(r *hedgeRig)
	}{
		{"breaker open", func(r *hedgeRig) {
			for range 1000 {
				p, _ := r.tr.Breaker("backup").Allow()
				p.Done(breaker.Failure, 0)
			}
		}},
		{"no slot", func(r *hedgeRig) {
			r.tr.Limiter = &limit.Limiter{Limits: []limit.Limit{{Name: "conc", Scope: "all", Concurrent: 1}}}
		}},
		{"over max_share", func(r *hedgeRig) { r.tr.Policy.Hedge.MaxShare = 0.01 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := newTardy(t, fixed(400*time.Millisecond))
			backup := newTardy(t, fixed(0))
			r := newHedgeRig(t, Hedge{After: HedgeAfter{Wait: 50 * time.Millisecond}, MaxShare: 1}, primary, backup)
			tc.setup(r)
			got, took := r.call(t)
			if took > 2*time.Second {
				t.Errorf("the call took %v: its hedge waited for what it may not have at once", took)
			}
			if !strings.Contains(got, "answer 1") || backup.calls.Load() != 0 {
				t.Fatalf("answer %s, %d calls to the fallback; want the first's, none", got, backup.calls.Load())
			}
			if lines := r.lines(); len(lines) != 1 || lines[0]["hedge"] != "refused" || lines[0]["outcome"] != "ok" {
				t.Errorf("lines %v, want one ok line saying the hedge was refused", lines)
			}
		})
	}
}

// When every call is slow, the hedges stay under max_share of the calls.
func TestHedgeMaxShare(t *testing.T) {
	primary := newTardy(t, fixed(300*time.Millisecond))
	r := newHedgeRig(t, Hedge{After: HedgeAfter{Wait: 50 * time.Millisecond}, MaxShare: 0.1}, primary, nil)
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() { r.call(t) })
	}
	wg.Wait()
	hedges := primary.calls.Load() - 60
	if hedges < 1 || hedges > 6 {
		t.Errorf("%d hedges for 60 slow calls under max_share 10%%, want 1 to 6", hedges)
	}
}

// With After a quantile, nothing is hedged until 20 answers are known;
// then a call slower than that quantile of them is.
func TestHedgeQuantileLearned(t *testing.T) {
	var slow atomic.Bool
	primary := newTardy(t, func(n int) time.Duration {
		if slow.Load() && n%2 == 1 {
			return 3 * time.Second
		}
		return time.Duration(n%5) * 10 * time.Millisecond // 0 to 40ms
	})
	r := newHedgeRig(t, Hedge{After: HedgeAfter{Quantile: 0.9}, MaxShare: 1}, primary, nil)
	for range 20 {
		r.call(t)
	}
	if n := primary.calls.Load(); n != 20 {
		t.Fatalf("%d upstream calls for the first 20, want 20: nothing hedged before the quantile is known", n)
	}
	slow.Store(true)
	_, took := r.call(t)
	if took > time.Second {
		t.Errorf("a slow call took %v: it was not hedged at the learned p90 (about 40ms)", took)
	}
	if n := primary.calls.Load(); n != 22 {
		t.Errorf("%d upstream calls, want 22", n)
	}
}

// Every way out of a hedged call gives back what both calls took.
func TestEveryWayOutOfAHedge(t *testing.T) {
	for _, tc := range []struct {
		name string
		// delay of the primary's calls; the hedge is the second
		delay func(int) time.Duration
		// out makes the call and leaves it
		out func(t *testing.T, h *heldRig, url string)
	}{
		{"hedge wins", firstSlow(4*time.Second, 0), callAndRead},
		{"first wins", firstSlow(150*time.Millisecond, 4*time.Second), callAndRead},
		{"caller leaves", fixed(4 * time.Second), func(t *testing.T, h *heldRig, url string) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"model":"m"}`))
			req.Header.Set("Idempotency-Key", h.keyed)
			if _, err := h.tr.RoundTrip(req); err == nil {
				t.Error("a call whose caller left succeeded")
			}
		}},
		{"total runs out", fixed(4 * time.Second), func(t *testing.T, h *heldRig, url string) {
			h.tr.Policy.Timeout.Total = 300 * time.Millisecond
			callAndRead(t, h, url)
		}},
		{"first fails, then the hedge answers", func(n int) time.Duration {
			return map[int]time.Duration{1: 150 * time.Millisecond, 2: 300 * time.Millisecond}[n]
		}, func(t *testing.T, h *heldRig, url string) {
			h.tr.Policy.Retry.MaxAttempts = 1
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"m"}`))
			req.Header.Set("Idempotency-Key", h.keyed)
			resp, err := h.tr.RoundTrip(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%v, %v: want the hedge's answer after the first call failed", resp, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}},
		{"the Meter panics on the hedge", fixed(4 * time.Second), func(t *testing.T, h *heldRig, url string) {
			h.tr.Meter = &panicOnSecond{holdMeter: h.meter}
			if got := mustPanic(t, func() { callAndRead(t, h, url) }); got != "meter" {
				t.Errorf("panicked with %v, want the Meter's panic", got)
			}
		}},
		{"observe panics on the loser", firstSlow(4*time.Second, 0), func(t *testing.T, h *heldRig, url string) {
			var seen atomic.Bool
			h.tr.Observe = func(a *Attempt) {
				if a.Outcome == OutcomeHedgeLost && !seen.Swap(true) {
					panic("observe")
				}
			}
			callAndRead(t, h, url)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaktest.Check(t)
			primary := newTardy(t, tc.delay)
			if strings.HasPrefix(tc.name, "first fails") {
				primary.status = func(n int) int {
					if n == 1 {
						return 400
					}
					return 200
				}
			}
			r := newHedgeRig(t, Hedge{After: HedgeAfter{Wait: 50 * time.Millisecond}, MaxShare: 1}, primary, nil)
			h := &heldRig{rig: r.rig, tracer: &countingTracer{}, budget: &RetryBudget{}, meter: &holdMeter{},
				lim: &limit.Limiter{Limits: []limit.Limit{{Name: "conc", Scope: "all", Concurrent: 2}}}}
			r.tr.Limiter, r.tr.Meter, r.tr.Tracer, r.tr.RetryBudget = h.lim, h.meter, h.tracer, h.budget
			answers := &countedAnswers{}
			r.tr.Answers, h.keyed = answers, "way-out" // the call's mark is given back too
			func() {
				defer func() { recover() }() // a panic in the loser's Observe is on its goroutine, recovered there
				tc.out(t, h, primary.srv.URL+"/v1/chat/completions")
			}()
			waitFor(t, "every call to end", func() bool {
				a, rt := h.budget.InFlight()
				return a == 0 && rt == 0 && h.meter.held.Load() == 0 && inFlight(t, h.lim, "limit:conc:all:concurrent") == 0 &&
					h.tracer.started.Load() == h.tracer.ended.Load() && answers.marks.Load() == answers.settled.Load()
			})
			if answers.marks.Load() != 1 {
				t.Errorf("%d marks taken, want the call's one", answers.marks.Load())
			}
			unsent := strings.Contains(tc.name, "panics on the hedge") // the hedge never goes
			if n := primary.calls.Load(); unsent && n != 1 {
				t.Errorf("%d upstream calls, want 1: the first, cancelled, and no hedge", n)
			} else if n := primary.calls.Load(); !unsent && n != 2 {
				t.Errorf("%d upstream calls, want 2: the first and its hedge", n)
			}
		})
	}
}

// countedAnswers is an answer store in memory that counts the marks it
// gave and those kept or given back.
type countedAnswers struct {
	idempotency.Memory
	marks, settled atomic.Int64
}

func (s *countedAnswers) Begin(id string, fp [32]byte, lease time.Duration, now time.Time) (idempotency.Result, error) {
	r, err := s.Memory.Begin(id, fp, lease, now)
	if err == nil && r.Verdict == idempotency.Run {
		s.marks.Add(1)
	}
	return r, err
}

func (s *countedAnswers) Keep(m idempotency.Mark, a *idempotency.Answer, ttl time.Duration, now time.Time) error {
	s.settled.Add(1)
	return s.Memory.Keep(m, a, ttl, now)
}

func (s *countedAnswers) Release(m idempotency.Mark) error {
	s.settled.Add(1)
	return s.Memory.Release(m)
}

func callAndRead(t *testing.T, h *heldRig, url string) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"m"}`))
	if h.keyed != "" {
		req.Header.Set("Idempotency-Key", h.keyed)
	}
	resp, err := h.tr.RoundTrip(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// Against a provider whose time to first byte is heavy-tailed (about
// 94 % of requests at 20ms, 6 % at 1.5s, the second send of one at
// 20ms), hedging at 100ms cuts the p99 of the calls to less than half,
// with the hedges under max_share.
func TestHedgeCutsTheTail(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 400 calls")
	}
	slow := func(id string) time.Duration {
		if id[len(id)-1] == '3' { // the ids are random hex: about one in sixteen
			return 1500 * time.Millisecond
		}
		return 20 * time.Millisecond
	}
	p99 := func(h Hedge) (time.Duration, int64) {
		primary := newTardy(t, nil)
		primary.slowOnce = slow
		r := newHedgeRig(t, h, primary, nil)
		var mu sync.Mutex
		var took []time.Duration
		var wg sync.WaitGroup
		work := make(chan int)
		for range 20 {
			wg.Go(func() {
				for range work {
					_, d := r.call(t)
					mu.Lock()
					took = append(took, d)
					mu.Unlock()
				}
			})
		}
		for i := range 200 {
			work <- i
		}
		close(work)
		wg.Wait()
		slices.Sort(took)
		return took[len(took)*99/100], primary.calls.Load() - 200
	}
	without, _ := p99(Hedge{})
	with, hedges := p99(Hedge{After: HedgeAfter{Wait: 100 * time.Millisecond}, MaxShare: 0.2})
	t.Logf("p99 without hedging %v, with %v (%d hedges for 200 calls)", without, with, hedges)
	if with > without/2 {
		t.Errorf("p99 with hedging %v, without %v: want at most half", with, without)
	}
	if hedges > 40 {
		t.Errorf("%d hedges for 200 calls, over max_share 20%%", hedges)
	}
}

// The spend cap stays exact with hedges in flight: every hedge is
// reserved for before it goes, a hedge the budget cannot cover is not
// sent, and what the ledger spent is what the lines cost, nothing held.
func TestHedgedSpendCapExact(t *testing.T) {
	primary := newTardy(t, nil)
	primary.slowOnce = func(string) time.Duration { return 400 * time.Millisecond }
	r := newHedgeRig(t, Hedge{After: HedgeAfter{Wait: 50 * time.Millisecond}, MaxShare: 1}, primary, nil)
	l := spend.NewLedger(state.NewMemory())
	r.tr.Meter = &spend.Meter{Budgets: []spend.Budget{{Name: "daily", LimitUSD: 1.00}}, Ledger: l, Prices: tenCents}
	var answered, refused atomic.Int64
	for range 4 { // waves of 10 calls, each hedged while the budget lasts
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, primary.srv.URL+"/v1/chat/completions", strings.NewReader(spendBody(2)))
				resp, err := r.tr.RoundTrip(req)
				switch {
				case err == nil:
					readAll(t, resp)
					answered.Add(1)
				case errors.Is(err, spend.ErrExhausted):
					refused.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	waitFor(t, "every hedge's loser to end", func() bool {
		_, held, _ := l.Read(dailyKey())
		return held == 0
	})
	spent, held, err := l.Read(dailyKey())
	if err != nil || spent > 1.00+1e-9 || held != 0 {
		t.Fatalf("ledger spent %v held %v (%v); want at most $1.00 and nothing held", spent, held, err)
	}
	var logged float64
	hedges := 0
	for _, line := range r.lines() {
		c, _ := line["cost_usd"].(float64)
		logged += c
		if line["hedge"] == "sent" {
			hedges++
		}
	}
	if math.Abs(logged-spent) > 1e-9 {
		t.Errorf("the lines cost $%v, the ledger spent $%v", logged, spent)
	}
	if hedges == 0 || answered.Load() == 0 || refused.Load() == 0 {
		t.Errorf("%d hedges, %d calls answered, %d refused: the test did not reach the cap with hedges in flight", hedges, answered.Load(), refused.Load())
	}
	t.Logf("%d answered, %d refused, %d hedges, $%.2f spent", answered.Load(), refused.Load(), hedges, spent)
}

// When the provider turns slow for every call, hedging at a quantile
// first hedges the slow calls (under max_share), then stops as the
// quantile follows the new times to first byte.
func TestHedgeRateFallsAsTheQuantileFollows(t *testing.T) {
	var slow atomic.Bool
	primary := newTardy(t, func(int) time.Duration {
		if slow.Load() {
			return 80 * time.Millisecond
		}
		return 5 * time.Millisecond
	})
	r := newHedgeRig(t, Hedge{After: HedgeAfter{Quantile: 0.9}, MaxShare: 0.5}, primary, nil)
	batch := func(n int) int64 {
		before := primary.calls.Load()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { r.call(t) })
			time.Sleep(2 * time.Millisecond)
		}
		wg.Wait()
		return primary.calls.Load() - before - int64(n)
	}
	for range 4 {
		batch(10) // 40 fast answers learnt
	}
	slow.Store(true)
	first := batch(20)
	for range 4 {
		batch(20)
	}
	last := batch(20)
	t.Logf("hedges: %d of the first 20 slow calls, %d of 20 after 100 more", first, last)
	if first < 5 || last > first/2 {
		t.Errorf("hedges: %d of the first 20 slow calls, %d of 20 after 100 more; want many, then few", first, last)
	}
}

// panicOnSecond is a holdMeter whose second reservation panics.
type panicOnSecond struct {
	*holdMeter
	n atomic.Int64
}

func (m *panicOnSecond) Reserve(ask hook.Ask) (float64, func(float64), error) {
	if m.n.Add(1) == 2 {
		panic("meter")
	}
	return m.holdMeter.Reserve(ask)
}

// A call with an Idempotency-Key is hedged too, and the answer kept is
// the one the caller got: the hedge's when it answers first, the first
// attempt's when that does; a duplicate is replayed it byte for byte
// without a call. When neither answers, nothing is kept and the key is
// free at once for the caller's retry.
func TestHedgeKeyedCall(t *testing.T) {
	leaktest.Check(t)
	keyed := func(r *hedgeRig, key string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, r.primary.srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Idempotency-Key", key)
		resp, err := r.tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for _, c := range []struct {
		name  string
		delay func(int) time.Duration
		want  string
	}{
		{"the hedge answers first", firstSlow(4*time.Second, 0), "answer 2"},
		{"the first answers first", func(n int) time.Duration {
			return map[int]time.Duration{1: 300 * time.Millisecond, 2: 4 * time.Second}[n]
		}, "answer 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			primary := newTardy(t, c.delay)
			r := newHedgeRig(t, Hedge{After: HedgeAfter{Wait: 100 * time.Millisecond}, MaxShare: 1}, primary, nil)
			r.tr.Answers = &idempotency.Memory{}
			_, got := keyed(r, "job-1")
			if !strings.Contains(got, `"content":"`+c.want+`"`) {
				t.Fatalf("answered %s, want %s", got, c.want)
			}
			waitFor(t, "both calls' lines", func() bool { return len(r.lines()) == 2 })
			again, replayed := keyed(r, "job-1")
			if replayed != got || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("the duplicate got %q (%v), want %q replayed", replayed, again.Header, got)
			}
			if n := primary.calls.Load(); n != 2 {
				t.Errorf("%d upstream calls, want the first and its hedge", n)
			}
			kept := 0
			for _, l := range r.lines() {
				if l["idempotency"] == IdempotencyKept {
					kept++
					if l["outcome"] != "ok" {
						t.Errorf("the line of the answer kept: %v", l)
					}
				}
			}
			if kept != 1 {
				t.Errorf("%d lines say kept, want the winner's: %v", kept, r.lines())
			}
		})
	}
	t.Run("neither answers", func(t *testing.T) {
		primary := newTardy(t, firstSlow(400*time.Millisecond, 0))
		var failing atomic.Bool
		failing.Store(true)
		primary.status = func(int) int {
			if failing.Load() {
				return 400
			}
			return 200
		}
		r := newHedgeRig(t, Hedge{After: HedgeAfter{Wait: 100 * time.Millisecond}, MaxShare: 1}, primary, nil)
		r.tr.Answers = &idempotency.Memory{}
		resp, _ := keyed(r, "job-2")
		if resp.StatusCode != 400 {
			t.Fatalf("status %d, want the 400", resp.StatusCode)
		}
		failing.Store(false)
		resp, got := keyed(r, "job-2")
		if resp.StatusCode != 200 || resp.Header.Get("Idempotent-Replayed") != "" || primary.calls.Load() < 3 {
			t.Errorf("the retry got %d %q after %d calls; want it sent again, the key free", resp.StatusCode, got, primary.calls.Load())
		}
	})
}
