package limit

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
)

// simProvider is a provider's rate limit as a token bucket of burst
// requests refilled at rate a second, started full, for tests at fake
// time: admit takes a request or answers how long until one is there.
// With headers, its answers carry OpenAI's headers as a provider that
// enforces its minute in short intervals sends them: the limit is the
// minute's (rate·60·overstate), remaining what is left of the burst.
type simProvider struct {
	mu        sync.Mutex
	rate      float64
	burst     float64
	level     float64
	at        time.Time
	headers   bool
	overstate float64 // the factor the limit header overstates the minute's limit by (with headers)
	tokens    int     // with headers: the limit is of tokens, each call costing this many (0: of requests)

	ok, limited int
	oks         []time.Duration // when each admitted call came, from start
	start       time.Time
}

func newSimProvider(rate, burst float64) *simProvider {
	now := time.Now()
	return &simProvider{rate: rate, burst: burst, level: burst, at: now, start: now, overstate: 1}
}

// setRate changes the refill rate from now.
func (p *simProvider) setRate(r float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refill(time.Now())
	p.rate = r
}

func (p *simProvider) refill(now time.Time) {
	p.level = min(p.burst, p.level+now.Sub(p.at).Seconds()*p.rate)
	p.at = now
}

// call answers one call: 200 or 429, its header, and a 429's Retry-After
// (whole seconds, at least 1).
func (p *simProvider) call() (int, http.Header, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.refill(now)
	status, ra := http.StatusOK, time.Duration(0)
	if p.level >= 1 {
		p.level--
		p.ok++
		p.oks = append(p.oks, now.Sub(p.start))
	} else {
		p.limited++
		status = http.StatusTooManyRequests
		ra = max(time.Duration(math.Ceil((1-p.level)/p.rate))*time.Second, time.Second)
	}
	var h http.Header
	if p.headers {
		h = http.Header{}
		unit, cost := "requests", 1.0
		if p.tokens > 0 {
			unit, cost = "tokens", float64(p.tokens)
		}
		h.Set("x-ratelimit-limit-"+unit, strconv.Itoa(int(p.rate*60*p.overstate*cost)))
		h.Set("x-ratelimit-remaining-"+unit, strconv.Itoa(int(p.level*cost)))
		h.Set("x-ratelimit-reset-"+unit, strconv.FormatFloat((p.burst-p.level)/p.rate, 'f', 3, 64)+"s")
	}
	return status, h, ra
}

// admittedIn returns how many calls it admitted in [from, to) from start.
func (p *simProvider) admittedIn(from, to time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, at := range p.oks {
		if at >= from && at < to {
			n++
		}
	}
	return n
}

// storm runs agents in closed loops through l against p until end: each
// waits its turn, calls, and after an admitted call's latency (a 429
// answers at once) tells l the answer. Each call asks for p.tokens output
// tokens. The agents' latencies are spread from latency to 1.5 times it,
// as real calls' are, so that they do not all come back at one instant.
func storm(t *testing.T, l *Limiter, p *simProvider, agents int, latency time.Duration, end time.Time) {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	var wg sync.WaitGroup
	for i := range agents {
		latency := latency + latency*time.Duration(i)/time.Duration(2*agents)
		wg.Go(func() {
			for ctx.Err() == nil {
				_, done, err := l.Wait(ctx, hook.Ask{Provider: "p", Model: "m", MaxTokens: int64(p.tokens), MaxWait: time.Minute})
				if err != nil {
					return
				}
				sent := time.Now()
				status, h, ra := p.call()
				if status == http.StatusOK {
					time.Sleep(latency)
				}
				l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "p", Model: "m", Sent: sent, Status: status, Header: h, RetryAfter: ra})
				done(int64(p.tokens))
			}
		})
	}
	wg.Wait()
}

// TestPaceLearnedFromRetryAfterAlone: a provider that tells nothing but
// a 429's Retry-After (Bedrock's and Vertex AI's way), 2 requests a
// second with a burst of 120, and 50 agents: after the burst, the 429s
// teach the pace; over 60 s at most 10 calls are refused and 90% of what
// the provider allows is served.
func TestPaceLearnedFromRetryAfterAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newSimProvider(2, 120)
		l := &Limiter{Scout: true}
		storm(t, l, p, 50, 300*time.Millisecond, time.Now().Add(60*time.Second))
		allowed := 120 + 2*60
		t.Logf("429s %d, admitted %d of %d allowed", p.limited, p.ok, allowed)
		if p.limited > 10 || p.ok < allowed*9/10 {
			t.Fatalf("%d 429s and %d of %d allowed served; want ≤ 10 and ≥ 90%%", p.limited, p.ok, allowed)
		}
	})
}

// TestPaceOnATokenLimit: a provider whose limit is of tokens, 60,000 a
// minute enforced in bursts of 5,000, each call 500 tokens (2 calls a
// second, bursts of 10), telling it in OpenAI's token headers; 50 agents,
// the gateway's scout on: its 429s teach the pace as a requests limit's
// do, and a spent tokens window holds the calls for one token's refill,
// not until the minute's reset: over 60 s at most 10 calls are refused
// and 90% of what the provider allows is served.
func TestPaceOnATokenLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newSimProvider(2, 10)
		p.headers, p.tokens = true, 500
		l := &Limiter{Scout: true}
		storm(t, l, p, 50, 300*time.Millisecond, time.Now().Add(60*time.Second))
		allowed := 10 + 2*60
		t.Logf("429s %d, admitted %d of %d allowed", p.limited, p.ok, allowed)
		if p.limited > 10 || p.ok < allowed*9/10 {
			t.Fatalf("%d 429s and %d of %d allowed served; want ≤ 10 and ≥ 90%%", p.limited, p.ok, allowed)
		}
	})
}

// TestPaceConvergesFromTenTimesTooHigh: a provider enforcing its minute
// in bursts of 10 (2 a second) whose headers tell a limit ten times too
// high: from the first 429 the pace is cut to the rate measured, within
// 5 s and 6 refusals, and then stays: at most 4 more 429s in the next
// 55 s, and at least 90% of the provider's rate served after the fifth
// second.
func TestPaceConvergesFromTenTimesTooHigh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newSimProvider(2, 10)
		p.headers, p.overstate = true, 10
		l := &Limiter{Scout: true}
		start := time.Now()
		storm(t, l, p, 50, 300*time.Millisecond, start.Add(5*time.Second))
		early := p.limited
		storm(t, l, p, 50, 300*time.Millisecond, start.Add(60*time.Second))
		late := p.admittedIn(5*time.Second, 60*time.Second)
		t.Logf("429s: %d in the first 5 s, %d after; admitted after 5 s: %d of %d", early, p.limited-early, late, 2*55)
		if early > 8 || p.limited-early > 4 || late < 2*55*9/10 {
			t.Fatalf("429s: %d in the first 5 s (want ≤ 8), %d after (want ≤ 4); %d admitted after 5 s (want ≥ 99)", early, p.limited-early, late)
		}
	})
}

// TestPaceRecoversWhenTheProviderRaisesItsLimit: once the pace has
// learned 2 a second, the provider doubles its rate; the pace rises to
// it (1% a second while its calls succeed): from 90 s after the raise the
// calls run at 80% of the new rate or more.
func TestPaceRecoversWhenTheProviderRaisesItsLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newSimProvider(2, 10)
		l := &Limiter{Scout: true}
		start := time.Now()
		storm(t, l, p, 50, 300*time.Millisecond, start.Add(30*time.Second))
		p.setRate(4)
		storm(t, l, p, 50, 300*time.Millisecond, start.Add(150*time.Second))
		got := p.admittedIn(120*time.Second, 150*time.Second)
		t.Logf("admitted in the last 30 s: %d (the provider allows %d); 429s %d", got, 4*30, p.limited)
		if got < 4*30*8/10 {
			t.Fatalf("admitted %d in the last 30 s at 4 a second, want ≥ 96", got)
		}
	})
}

// TestConfiguredLimitWins: a pace learned from the 429s never lets the
// calls above a configured limit. A provider at 1 call a second teaches
// its pace under a configured 2 a second; when it raises its own rate to
// 10 a second, the pace rises, but the calls stay at the configured 2,
// which the scope then shows as what holds it.
func TestConfiguredLimitWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newSimProvider(1, 5)
		l := &Limiter{Scout: true, Limits: []Limit{{Name: "rpm", Scope: "provider", Requests: Rate{Limit: 120, Per: time.Minute}}}}
		start := time.Now()
		storm(t, l, p, 20, 300*time.Millisecond, start.Add(30*time.Second))
		if p.limited == 0 {
			t.Fatal("no 429 taught a pace")
		}
		p.setRate(10)
		storm(t, l, p, 20, 300*time.Millisecond, start.Add(150*time.Second))
		got := p.admittedIn(120*time.Second, 150*time.Second)
		t.Logf("429s %d; admitted in the last 30 s: %d (the limit allows 60)", p.limited, got)
		if got > 61 || got < 54 {
			t.Errorf("admitted %d in the last 30 s, want the configured 2 a second (54 to 61)", got)
		}
		bs, err := l.Buckets()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.Key == PauseKey("p", "m") {
				if pd := l.PacedOf(b); pd.SetBy != "limit" || pd.PerSecond != 2 {
					t.Errorf("the scope shows %+v, want held by the configured limit at 2/s", pd)
				}
				return
			}
		}
		t.Errorf("no pause of the scope among %+v", bs)
	})
}

// TestPaceReleasesWaitersOneByOne: when a pause ends, the calls waiting
// for it leave at the pace, one interval apart, never together.
func TestPaceReleasesWaitersOneByOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{}
		// Nothing known: a 429 with Retry-After 2s pauses the model and
		// sets the pace to one call per 2 s.
		l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "p", Model: "m", Sent: time.Now(), Status: http.StatusTooManyRequests, RetryAfter: 2 * time.Second})
		start := time.Now()
		var mu sync.Mutex
		var ats []time.Duration
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if _, _, err := l.Wait(context.Background(), hook.Ask{Provider: "p", Model: "m", MaxWait: time.Minute}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ats = append(ats, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		for k, want := range []time.Duration{2, 4, 6, 8, 10} {
			if ats[k] != want*time.Second {
				t.Fatalf("the waiters left at %v, want one every 2 s from the pause's end", ats)
			}
		}
	})
}

// TestScoutGoesAlone: with no configured rate (a concurrency limit does
// not pace), the first call of a scope
// this process has no answer for goes alone; the calls that come
// meanwhile wait for its answer (a herd would meet a provider's burst
// limit before anything could be learned). A scout whose attempt ends
// unanswered lets them go too.
func TestScoutGoesAlone(t *testing.T) {
	for _, answered := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			l := &Limiter{Scout: true, Limits: []Limit{{Name: "conc", Concurrent: 100}}}
			start := time.Now()
			_, scoutDone, err := l.Wait(context.Background(), hook.Ask{Provider: "p", Model: "m", MaxWait: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var ats, waits []time.Duration
			var wg sync.WaitGroup
			for range 5 {
				wg.Go(func() {
					waited, done, err := l.Wait(context.Background(), hook.Ask{Provider: "p", Model: "m", MaxWait: time.Minute})
					if err != nil {
						t.Error(err)
						return
					}
					done(0)
					mu.Lock()
					ats, waits = append(ats, time.Since(start)), append(waits, waited)
					mu.Unlock()
				})
			}
			time.Sleep(300 * time.Millisecond) // the scout's latency
			synctest.Wait()
			if len(ats) != 0 {
				t.Fatalf("calls went at %v while the scout was out", ats)
			}
			if answered {
				l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "p", Model: "m", Sent: start, Status: http.StatusOK})
			} else {
				scoutDone(0) // a timeout, a cut connection: no answer
			}
			wg.Wait()
			if len(ats) != 5 || ats[0] != 300*time.Millisecond || ats[4] != 300*time.Millisecond {
				t.Fatalf("answered %v: the held calls went at %v, want all 5 at the scout's end, 300ms", answered, ats)
			}
			for _, w := range waits {
				if w != 300*time.Millisecond {
					t.Fatalf("answered %v: the held calls reported waits of %v, want 300ms each: held for the scout is a wait", answered, waits)
				}
			}
			if _, done, _ := l.Wait(context.Background(), hook.Ask{Provider: "p", Model: "m"}); done == nil {
				t.Fatal("no done")
			}
		})
	}
}

// TestScoutsStartSlowly: behind a scope's scout, an answer that teaches
// nothing (a 200 without headers) lets two more calls go, a call that
// ends one more, and an answer that teaches the pace (a 429) ends the
// start: the calls still held then leave at the pace, one by one.
func TestScoutsStartSlowly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Scout: true}
		start := time.Now()
		_, scoutDone, err := l.Wait(context.Background(), hook.Ask{Provider: "p", Model: "m", MaxWait: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var went []time.Duration
		var dones []func(int64)
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				_, done, err := l.Wait(context.Background(), hook.Ask{Provider: "p", Model: "m", MaxWait: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				went, dones = append(went, time.Since(start)), append(dones, done)
				mu.Unlock()
			})
		}
		count := func() int {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return len(went)
		}
		time.Sleep(300 * time.Millisecond)
		if n := count(); n != 0 {
			t.Fatalf("%d calls went while the scout was out", n)
		}
		l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "p", Model: "m", Sent: start, Status: http.StatusOK})
		if n := count(); n != 2 {
			t.Fatalf("after an answer that teaches nothing %d calls went, want 2", n)
		}
		scoutDone(0)
		if n := count(); n != 3 {
			t.Fatalf("after the scout's call ended %d calls went, want 3", n)
		}
		l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "p", Model: "m", Sent: start.Add(300 * time.Millisecond), Status: http.StatusTooManyRequests, RetryAfter: time.Second})
		wg.Wait()
		for _, d := range dones {
			d(0)
		}
		if len(went) != 10 {
			t.Fatalf("%d calls went, want 10", len(went))
		}
		for i := 4; i < len(went); i++ {
			if went[i]-went[i-1] < 900*time.Millisecond {
				t.Fatalf("after the 429 the held calls went at %v, want one a second (the pace it taught)", went[3:])
			}
		}
	})
}

// TestPaceSharedInFile: two Limiters on one state directory (two
// gateways) share the pace: a 429 one of them learns cuts the pace the
// other's calls are held to, and the answers of either raise it.
func TestPaceSharedInFile(t *testing.T) {
	f := newFileStore(t)
	a, b := &Limiter{Store: f}, &Limiter{Store: f}
	sent := time.Now()
	a.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "p", Model: "m", Sent: sent, Status: http.StatusTooManyRequests, RetryAfter: 2 * time.Second})
	lr, err := f.Learned(PauseKey("p", "m"))
	if err != nil || lr.Pace.Interval != int64(2*time.Second) || lr.Pace.Steady {
		t.Fatalf("after a 429 with Retry-After 2s: %+v (%v), want one call per 2 s, probing", lr.Pace, err)
	}
	// b reads the pace at its next call, and counts its answer in it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := b.Wait(ctx, hook.Ask{Provider: "p", Model: "m", MaxWait: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	b.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "p", Model: "m", Sent: time.Now(), Status: http.StatusOK})
	if lr, err = f.Learned(PauseKey("p", "m")); err != nil || lr.Pace.OK != 1 {
		t.Fatalf("after b's answer: %+v (%v), want 1 answer counted", lr.Pace, err)
	}
	if p := a.PacedOf(Bucket{Key: PauseKey("p", "m"), Pace: lr.Pace}); p.SetBy != "429" || p.PerSecond != 1 {
		t.Fatalf("PacedOf: %+v, want 1/s (0.5 + 0.5 for the answer) set by a 429", p)
	}
}

// TestScoutsBounded: scopes starting by the thousand (a distinct model
// per call) are kept track of up to maxGuesses; past it they go freely,
// and this process holds no more starts.
func TestScoutsBounded(t *testing.T) {
	l := &Limiter{Scout: true}
	for i := range maxGuesses + 500 {
		if _, _, err := l.Wait(context.Background(), hook.Ask{Provider: "p", Model: "m" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	l.scouts.mu.Lock()
	n := len(l.scouts.out)
	l.scouts.mu.Unlock()
	if n != maxGuesses {
		t.Errorf("%d starts kept, want %d at most", n, maxGuesses)
	}
}
