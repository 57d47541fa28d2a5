package gateway

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

// inFlightRE reads sluice_ratelimit_in_flight from a /metrics page.
var inFlightRE = regexp.MustCompile(`(?m)^sluice_ratelimit_in_flight\{limit="([^"]+)"\} (\d+)$`)

// slotsHeld returns, per limit, the concurrency slots /metrics says are
// held.
func (e *env) slotsHeld() map[string]int {
	e.t.Helper()
	out := map[string]int{}
	for _, m := range inFlightRE.FindAllStringSubmatch(body(e.t, e.do("GET", "/metrics", "")), -1) {
		n, _ := strconv.Atoi(m[2])
		out[m[1]] = n
	}
	return out
}

// waitSlotsBack waits until /metrics shows every limit's slots back,
// and fails the test if they are not within 10 s.
func (e *env) waitSlotsBack(limits ...string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		held := e.slotsHeld()
		free := true
		for _, l := range limits {
			n, ok := held[l]
			if !ok {
				e.t.Fatalf("/metrics has no sluice_ratelimit_in_flight for %s: %v", l, held)
			}
			free = free && n == 0
		}
		if free {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("slots still held 10 s after the last call: %v", held)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Many calls that fall back past the primary's open breaker keep being
// answered by the fallback, under the provider's max_concurrent and
// under a limits.rates concurrent limit alike: the slot each took for the
// refused primary is given back (it leaked, and call max_concurrent+1 on
// was refused 429 rate_limited with Sluice-Attempts 0).
func TestFallbacksPastOpenBreakerKeepSlots(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit string
		edit  func(*config.Config)
	}{
		{"max_concurrent", config.MaxConcurrentLimit, func(c *config.Config) {
			p := c.Providers["openai"]
			p.MaxConcurrent = 2
			c.Providers["openai"] = p
		}},
		{"limits.rates concurrent", "agents", func(c *config.Config) {
			c.Limits.Rates = append(c.Limits.Rates, limit.Limit{Name: "agents", Scope: "all", Concurrent: 2})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backup := fake.NewServer("200")
			defer backup.Close()
			e := newEnv(t, "503", func(c *config.Config) {
				c.Providers["backup"] = config.Provider{Kind: "openai", BaseURL: backup.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 8}
				c.Routes[0].Fallbacks = []config.Target{{Provider: "backup", Model: "gpt-4o-mini-backup"}}
				pol := c.Policies["interactive"]
				pol.Breaker.Failures, pol.Breaker.Cool = 2, time.Hour
				pol.MaxQueue = 300 * time.Millisecond
				c.Policies["interactive"] = pol
				tc.edit(c)
			})
			const calls = 30
			for i := range calls {
				resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
				got := body(t, resp)
				if resp.StatusCode != 200 || !strings.Contains(got, "gpt-4o-mini-backup") {
					t.Fatalf("call %d: %d %s (Sluice-Attempts %s); want the fallback's answer",
						i+1, resp.StatusCode, got, resp.Header.Get("Sluice-Attempts"))
				}
			}
			if backup.Calls() != calls {
				t.Errorf("fallback answered %d calls, want %d", backup.Calls(), calls)
			}
			e.waitSlotsBack(tc.limit)
		})
	}
}

// Chaos over the attempt paths: calls that stream or not, upstream faults
// of every kind (503, resets, hangs, stalls mid-stream, overloaded first
// events), a breaker that opens and probes, fallbacks, retry-budget and
// spend-cap refusals, and clients that leave at random moments. After it,
// every concurrency slot is back, read through sluice_ratelimit_in_flight,
// and no goroutine is left (newEnv checks).
func TestChaosEverySlotBack(t *testing.T) {
	mix := "mix:503=15%;reset=8%;hang=5%;stall=10%;overloaded=10%;seed="
	backup := fake.NewServer(mix + "2")
	defer backup.Close()
	e := newEnv(t, mix+"1", func(c *config.Config) {
		p := c.Providers["openai"]
		p.MaxConcurrent = 6
		c.Providers["openai"] = p
		c.Providers["backup"] = config.Provider{Kind: "openai", BaseURL: backup.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 4}
		c.Routes[0].Fallbacks = []config.Target{{Provider: "backup", Model: "gpt-4o-mini-backup"}}
		c.Limits.Rates = append(c.Limits.Rates, limit.Limit{Name: "agents", Scope: "all", Concurrent: 8})
		pol := c.Policies["interactive"]
		pol.Breaker.Failures, pol.Breaker.Cool = 4, 50*time.Millisecond
		pol.MaxQueue = 200 * time.Millisecond
		c.Policies["interactive"] = pol
		c.Prices = map[string]spend.Price{"gpt-4o-mini": {Input: 1, Output: 10}, "gpt-4o-mini-backup": {Input: 1, Output: 10}}
		c.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 0.2, Period: "day", Scope: "all"}}
	})
	const workers, calls = 12, 180
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := w; i < calls; i += workers {
				stream := rng.IntN(2) == 0
				b := fmt.Sprintf(`{"model":"gpt-4o-mini","max_tokens":2000,"stream":%v,"messages":[{"role":"user","content":"hi %d"}]}`, stream, i)
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(4) == 0 { // a client that leaves at a random moment
					time.AfterFunc(time.Duration(rng.IntN(600))*time.Millisecond, cancel)
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/openai/v1/chat/completions", strings.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				status := 0
				if resp, err := http.DefaultClient.Do(req); err == nil {
					status = resp.StatusCode
					if rng.IntN(5) == 0 { // or reads a little and goes
						io.CopyN(io.Discard, resp.Body, 16)
					} else {
						io.Copy(io.Discard, resp.Body)
					}
					resp.Body.Close()
				}
				cancel()
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("statuses: %v; upstream calls %d primary, %d fallback", statuses, e.up.Calls(), backup.Calls())
	outcomes := map[string]int{}
	for _, l := range e.logLines() {
		outcomes[fmt.Sprint(l["outcome"])]++
	}
	t.Logf("outcomes: %v", outcomes)
	for _, o := range []string{"circuit_open", "client_cancel", "ok", "retry"} {
		if outcomes[o] == 0 {
			t.Errorf("no %s line: the chaos did not reach that path (outcomes %v)", o, outcomes)
		}
	}
	if backup.Calls() == 0 {
		t.Error("no call fell back")
	}
	e.waitSlotsBack(config.MaxConcurrentLimit, "agents")
}
