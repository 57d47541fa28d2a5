package main

import (
	"context"
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

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// The failover drill: two gateways on a master watched by three
// sentinels, under load, when the master is killed with SIGKILL. Every
// call ends within its bound; the spend cap (100 calls of $0.01 under
// $1.00) is never crossed; within 5 s of the promotion both gateways are
// on the new master and a breaker opened through one is seen open by the
// other.
func TestSentinelFailoverDrill(t *testing.T) {
	h := redistest.StartSentinel(t, time.Second)
	up := fake.NewServer("slow:100ms")
	defer up.Close()
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state: {backend: redis, redis: {mode: sentinel, addrs: [%s], master: %s}}
log: {attempts: "-"}
providers:
  openai: {kind: openai, base_url: %s}
routes:
  - {prefix: /openai, provider: openai}
policies:
  interactive:
    timeout: {connect: 500ms, first_byte: 1500ms, idle: 1s, total: 2s}
    retry: {max_attempts: 1}
    breaker: {failures: 2, cool: 1h}
budgets:
  - {name: daily, limit_usd: 1.00, period: day}
prices:
  gpt-4o-mini: {input: 0, output: 2000}
  free: {input: 0, output: 0}
`, strings.Join(h.Addrs(), ", "), redistest.MasterName, up.URL)), 0o600)
	gws := []*proc{startSluice(t, nil, "serve", "--config", cfg), startSluice(t, nil, "serve", "--config", cfg)}
	call := func(p *proc, model, script string) (int, time.Duration) {
		start := time.Now()
		req, _ := http.NewRequest("POST", "http://"+p.addr+"/openai/v1/chat/completions",
			strings.NewReader(`{"model":"`+model+`","max_tokens":5,"messages":[]}`))
		req.Header.Set("Sluice-Fake-Script", script)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, time.Since(start)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}

	// Load: six workers over both gateways, each call $0.01.
	const bound = 3 * time.Second // the policy's total, 2 s, and a second
	var admitted, refused, calls atomic.Int32
	var slowest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, took := call(gws[i%2], "gpt-4o-mini", "slow:100ms")
				calls.Add(1)
				if int64(took) > slowest.Load() {
					slowest.Store(int64(took))
				}
				if took > bound {
					t.Errorf("a call took %v during the drill, past its bound %v", took, bound)
				}
				switch code {
				case 200:
					admitted.Add(1)
				case 0:
					t.Error("a call got no answer at all")
				default:
					refused.Add(1)
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(700 * time.Millisecond)
	old := h.MasterAddr()
	before := admitted.Load()
	h.Master.Kill() // SIGKILL
	killed := time.Now()
	promoted := h.WaitPromotion(old, 30*time.Second)
	promotedAt := time.Now()
	t.Logf("master %s killed; %s promoted after %v; %d calls admitted before the kill", old, promoted, promotedAt.Sub(killed).Round(time.Millisecond), before)

	// Both gateways back on the shared state within 5 s of the promotion.
	for i, g := range gws {
		for !metricIs(g, "sluice_state_store_degraded", "0") {
			if time.Since(promotedAt) > 5*time.Second {
				t.Fatalf("gateway %d still on local breakers 5 s after the promotion:\n%s", i, g.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	resumed := time.Since(promotedAt)
	time.Sleep(1500 * time.Millisecond) // let the load run on the new master
	close(stop)
	wg.Wait()

	// The cap held: at most 100 calls of $0.01, and what Redis counts is
	// what was admitted, less what the failover may have lost.
	n := admitted.Load()
	if n > 100 || int32(up.Calls()) < n {
		t.Fatalf("%d calls admitted (upstream %d) under a $1.00 cap of $0.01 calls, want at most 100", n, up.Calls())
	}
	nc := redis.NewClient(&redis.Options{Addr: promoted})
	defer nc.Close()
	spent, _ := nc.HGet(context.Background(), "sluice:ledger:{budget:daily:all:"+time.Now().UTC().Format("2006-01-02")+"}", "spent").Int64()
	kept := strings.Count(gws[0].stderr.String()+gws[1].stderr.String(), "a settlement Redis did not confirm is kept")
	t.Logf("drill: %d calls, %d admitted, %d refused (fail closed while the master was gone, then the cap), slowest %v; "+
		"shared state resumed %v after the promotion; Redis counts $%.2f spent for $%.2f admitted; %d settlements kept to send again",
		calls.Load(), n, refused.Load(), time.Duration(slowest.Load()).Round(time.Millisecond), resumed.Round(time.Millisecond),
		float64(spent)/1e9, float64(n)/100, kept)
	if spent > 1e9 {
		t.Fatalf("Redis counts $%.2f spent under a $1.00 cap", float64(spent)/1e9)
	}

	// A breaker opened through one gateway is open in the other.
	for range 2 {
		call(gws[0], "free", "500")
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		if code, _ := call(gws[1], "free", "200"); code == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other gateway did not see the shared breaker open within 2 s, after the failover")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metricIs reports whether p's /metrics has the line "name value".
func metricIs(p *proc, name, value string) bool {
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && (f[0] == name || strings.HasPrefix(f[0], name+"{")) {
			return f[1] == value
		}
	}
	return false
}
