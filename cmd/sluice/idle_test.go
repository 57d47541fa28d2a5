package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// Two idle gateways leave Redis idle however many keys its database holds:
// nothing they run periodically walks the keyspace (a SCAN over a million
// kept answers, once a second per gateway, held Redis at most of a core).
// A breaker opened through one is still refused by the other within the
// store's refresh (250 ms).
func TestIdleGatewaysLeaveRedisIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s of idle gateways per keyspace size; skipped under -short")
	}
	for _, keys := range []int{100, 1_000_000} {
		t.Run(fmt.Sprintf("%d_keys", keys), func(t *testing.T) { idleGateways(t, keys) })
	}
}

func idleGateways(t *testing.T, keys int) {
	srv := debugRedis(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 2 * time.Minute})
	defer c.Close()
	if err := c.Do(ctx, "DEBUG", "POPULATE", keys, "kept-answer").Err(); err != nil {
		t.Fatalf("DEBUG POPULATE %d: %v", keys, err)
	}
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
    breaker: {failures: 3, cool: 1h}
`, srv.URL(), up.URL)), 0o600)
	a := startSluice(t, nil, "serve", "--config", cfg)
	b := startSluice(t, nil, "serve", "--config", cfg)
	for _, g := range []*proc{a, b} { // three calls each: a record in Redis, its breaker closed, no failure counted
		for _, script := range []string{"500", "200", "200"} {
			postScript(t, g, script)
		}
	}
	if n := c.DBSize(ctx).Val(); n < int64(keys) {
		t.Fatalf("the database holds %d keys, want at least %d", n, keys)
	}

	c.ConfigResetStat(ctx)
	before := redisCPU(t, c)
	const idle = 10 * time.Second
	time.Sleep(idle)
	used := redisCPU(t, c) - before
	calls, _ := c.Info(ctx, "commandstats").Result()
	t.Logf("%d keys: Redis CPU %.2f%% of a core over %v of two idle gateways; commands:\n%s",
		keys, 100*used/idle.Seconds(), idle, strings.TrimSpace(calls))
	if used > 0.02*idle.Seconds() {
		t.Errorf("%d keys: Redis used %.3f s of CPU over %v of two idle gateways (%.1f%% of a core), want at most 2%%",
			keys, used, idle, 100*used/idle.Seconds())
	}
	if strings.Contains(calls, "cmdstat_scan:") || strings.Contains(calls, "cmdstat_keys:") {
		t.Errorf("%d keys: idle gateways walked the keyspace:\n%s", keys, calls)
	}

	// A breaker opened through a is refused by b within its refresh.
	for i := range 3 {
		if status := postScript(t, a, "500"); status != http.StatusInternalServerError {
			t.Fatalf("failure %d through the gateway answered %d, want the provider's 500", i+1, status)
		}
	}
	opened := time.Now() // the third failure opened it before its answer
	for postScript(t, b, "200") != http.StatusServiceUnavailable {
		if time.Since(opened) > 5*time.Second {
			t.Fatal("the other gateway did not refuse calls on the open breaker within 5 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	seen := time.Since(opened)
	t.Logf("%d keys: the other gateway refused calls %v after the breaker opened", keys, seen)
	// 250 ms of refresh, its round trip, and a call to b on a busy machine.
	if seen > 400*time.Millisecond {
		t.Errorf("%d keys: the other gateway refused calls %v after the breaker opened, want within the 250 ms refresh", keys, seen)
	}
	if state := listedState(t, b, "openai"); state != "open" {
		t.Errorf("%d keys: /sluice/breakers on the other gateway says %q, want open", keys, state)
	}
}

// debugRedis starts a redis-server that takes DEBUG POPULATE (Redis 7
// refuses DEBUG unless told otherwise).
func debugRedis(t *testing.T) *redistest.Server {
	t.Helper()
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		t.Skip("redis-server not found: apt-get install -y redis-server")
	}
	if m := regexp.MustCompile(`v=(\d+)\.`).FindSubmatch(out); m != nil {
		if major, _ := strconv.Atoi(string(m[1])); major < 7 {
			return redistest.Start(t)
		}
	}
	return redistest.StartWith(t, "--enable-debug-command", "yes")
}

// redisCPU returns the CPU Redis has used, in seconds: used_cpu_sys plus
// used_cpu_user of INFO cpu.
func redisCPU(t *testing.T, c *redis.Client) float64 {
	t.Helper()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for line := range strings.SplitSeq(info, "\r\n") {
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				total += f
			}
		}
	}
	return total
}

// listedState returns the state GET /sluice/breakers on p gives breaker
// name, or "" when it lists no such breaker.
func listedState(t *testing.T, p *proc, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/sluice/breakers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Breakers []struct{ Name, State string } `json:"breakers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	for _, br := range v.Breakers {
		if br.Name == name {
			return br.State
		}
	}
	return ""
}
