package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// startRedis runs a private redis-server on a free loopback port, or
// skips the test when none is installed, and returns its URL.
func startRedis(t *testing.T) string { return redistest.Start(t).URL() }

func TestTwoGatewaysOnRedisShareBreakersAndBudgets(t *testing.T) {
	url := startRedis(t)
	up := fake.NewServer("200")
	defer up.Close()
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state: {backend: redis, url: "%s"}
log: {attempts: "-"}
providers:
  openai: {kind: openai, base_url: %s}
routes:
  - {prefix: /openai, provider: openai}
policies:
  interactive:
    retry: {max_attempts: 1}
    breaker: {failures: 2, cool: 1h}
budgets:
  - {name: daily, limit_usd: 1.00, period: day}
prices:
  gpt-4o-mini: {input: 0, output: 20000}
`, url, up.URL)), 0o600)
	gws := []*proc{startSluice(t, nil, "serve", "--config", cfg), startSluice(t, nil, "serve", "--config", cfg)}
	post := func(p *proc, script string) int {
		req, _ := http.NewRequest("POST", "http://"+p.addr+"/openai/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o-mini","max_tokens":5,"messages":[]}`))
		req.Header.Set("Sluice-Fake-Script", script)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// $0.10 calls under a $1.00 cap, spread over both gateways. A 503 is a
	// reservation the ledger could not make in time on a busy machine (the
	// cap fails closed, holding nothing): the client tries that call again.
	var admitted, storeRefusals atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 { // $1.60 asked; more calls only add load to a busy machine
		wg.Go(func() {
			status := post(gws[i%2], "200")
			for try := 0; status == http.StatusServiceUnavailable && try < 5; try++ {
				storeRefusals.Add(1)
				status = post(gws[i%2], "200")
			}
			if status == 200 {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	// Never more than the cap; exactly the cap when the store answered
	// every reservation in time. A reservation that timed out here may
	// still have been taken in Redis: its hold is reclaimed after the
	// policy's total, so each such refusal may leave at most one call
	// short, never one over.
	n, refused := admitted.Load(), storeRefusals.Load()
	if n > 10 || int32(up.Calls()) != n || n < 10-refused {
		t.Fatalf("admitted %d (upstream %d, %d fail-closed refusals tried again) across two gateways, want 10 (at least %d)",
			n, up.Calls(), refused, 10-refused)
	}
	if n < 10 {
		t.Logf("admitted %d: %d reservations timed out under load and fail closed", n, refused)
	}

	// A breaker opened through one gateway fails fast in the other.
	up.Reset()
	cfgNoBudget := strings.Replace(mustRead(t, cfg), "budgets:\n  - {name: daily, limit_usd: 1.00, period: day}\n", "", 1)
	os.WriteFile(cfg, []byte(cfgNoBudget), 0o600)
	a := startSluice(t, nil, "serve", "--config", cfg)
	b := startSluice(t, nil, "serve", "--config", cfg)
	post(a, "500")
	post(a, "500")
	deadline := time.Now().Add(2 * time.Second)
	for post(b, "200") != 503 {
		if time.Now().After(deadline) {
			t.Fatal("the other gateway did not see the open breaker within 2 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustRead(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
