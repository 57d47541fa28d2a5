package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// What an asynchronous failover loses of the breakers and the limiter,
// measured with real processes: two gateways on a master watched by three
// sentinels, the master killed with SIGKILL.
//
// Two kinds of writes are made before the kill. Those of the "natural"
// providers (pa, la) are made with the replicas running, and the replicas
// are stopped (SIGSTOP) right after: whatever replicated by then is what
// a kill at that instant would leave. Those of the "lost" providers (pb,
// lb) are made while the replicas are stopped, so the promoted replica
// never has them: the worst case, written down in the README. The test
// asserts the bounds of the worst case:
//
//   - breaker pb, opened on the master and lost: the next failing calls
//     reopen it within its failure threshold (2), so at most 2 calls reach
//     the failing provider per breaker lost;
//   - limit lb (6 a minute, one call every 10 s): the fleet passes at most
//     as many calls over the limit as the master admitted that the replica
//     never received;
//   - both gateways said they ran on local state (the log line and
//     sluice_state_store_degraded) and came back within 5 s of the
//     promotion, and the one that had seen pb open says Redis lost it
//     ("a breaker's shared record went back").
func TestSentinelFailoverLoss(t *testing.T) {
	h := redistest.StartSentinel(t, time.Second)
	up := fake.NewServer("200")
	defer up.Close()
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	var provs, routes strings.Builder
	for _, p := range []string{"pa", "pb", "la", "lb"} {
		fmt.Fprintf(&provs, "  %s: {kind: openai, base_url: %s}\n", p, up.URL)
		fmt.Fprintf(&routes, "  - {prefix: /%s, provider: %s}\n", p, p)
	}
	os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state: {backend: redis, redis: {mode: sentinel, addrs: [%s], master: %s}}
log: {attempts: "-"}
providers:
%sroutes:
%spolicies:
  interactive:
    timeout: {connect: 500ms, first_byte: 1500ms, idle: 1s, total: 2s}
    retry: {max_attempts: 1}
    breaker: {failures: 2, cool: 1h}
    max_queue: 100ms
limits:
  rates:
    - {name: ra, provider: la, requests_per_minute: 6}
    - {name: rb, provider: lb, requests_per_minute: 6}
`, strings.Join(h.Addrs(), ", "), redistest.MasterName, provs.String(), routes.String())), 0o600)
	gws := []*proc{startSluice(t, nil, "serve", "--config", cfg), startSluice(t, nil, "serve", "--config", cfg)}
	call := func(p *proc, prov, script string) int {
		req, _ := http.NewRequest("POST", "http://"+p.addr+"/"+prov+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","max_tokens":5,"messages":[]}`))
		req.Header.Set("Sluice-Fake-Script", script)
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			t.Errorf("a call to %s got no answer: %v", prov, err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// burst makes n calls to prov over both gateways and returns how many
	// passed (200); every other answer must be 429.
	burst := func(prov string, n int) int {
		passed := 0
		for i := range n {
			switch code := call(gws[i%2], prov, "200"); code {
			case 200:
				passed++
			case 429:
			default:
				t.Errorf("a call to limited %s: %d, want 200 or 429", prov, code)
			}
		}
		return passed
	}
	open := func(prov string) {
		for range 2 {
			call(gws[0], prov, "500")
		}
		if code := call(gws[0], prov, "200"); code != 503 {
			t.Fatalf("breaker %s after 2 failures: %d, want 503", prov, code)
		}
	}
	ctx := context.Background()
	mc := h.Master.Client()
	breakerState := func(c *redis.Client, prov string) string {
		s, err := c.HGet(ctx, "sluice:breaker:{"+prov+"}", "s").Result()
		if err == redis.Nil {
			return "none (closed)"
		}
		return map[string]string{"0": "closed", "1": "open", "2": "half-open"}[s] + err2s(err)
	}

	// The natural writes, then the replicas stopped.
	open("pa")
	naturalPassed := burst("la", 1)
	start := time.Now() // the limits' window starts here: one call every 10 s
	for _, r := range h.Replicas {
		r.Freeze()
	}
	// Their links cut at the master: what it had sent is in their sockets
	// and read once they run again; nothing after this reaches them.
	if n, err := mc.ClientKillByFilter(ctx, "TYPE", "replica").Result(); err != nil || n != 2 {
		t.Fatalf("cutting the replicas' links: %d cut, %v", n, err)
	}
	// The lost writes: the master has them, the replicas never will.
	open("pb")
	lostPassed := burst("lb", 4)
	if naturalPassed != 1 || lostPassed != 1 {
		t.Fatalf("first calls at 6 a minute: la %d, lb %d passed; want 1 each", naturalPassed, lostPassed)
	}
	t.Logf("on the master before the kill: breaker pa %s, pb %s", breakerState(mc, "pa"), breakerState(mc, "pb"))
	old := h.MasterAddr()
	h.Master.Kill() // SIGKILL
	killed := time.Now()
	for _, r := range h.Replicas {
		r.Thaw()
	}
	promoted := h.WaitPromotion(old, 30*time.Second)
	promotedAt := time.Now()
	for i, g := range gws {
		for !metricIs(g, "sluice_state_store_degraded", "0") {
			if time.Since(promotedAt) > 5*time.Second {
				t.Fatalf("gateway %d still on local state 5 s after the promotion:\n%s", i, g.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(g.stderr.String(), "redis unreachable, using local breakers") ||
			!strings.Contains(g.stderr.String(), "redis reachable again, using shared breakers") {
			t.Errorf("gateway %d did not say it ran on local breakers during the failover:\n%s", i, g.stderr.String())
		}
	}
	resumed := time.Since(promotedAt)
	nc := redis.NewClient(&redis.Options{Addr: promoted})
	defer nc.Close()
	paNew, pbNew := breakerState(nc, "pa"), breakerState(nc, "pb")
	if pbNew != "none (closed)" {
		t.Fatalf("breaker pb is %s on the new master; the drill meant it lost (opened after the replicas' links were cut)", pbNew)
	}
	if paNew != "open" {
		t.Errorf("breaker pa, opened before the replicas stopped, is %s on the new master; want open (replicated)", paNew)
	}

	// Breakers: the lost one reopens within its threshold, through the
	// other gateway, once that has read the new master (Refresh 250 ms).
	time.Sleep(600 * time.Millisecond)
	reached := 0
	for {
		code := call(gws[1], "pb", "500")
		if code == 503 {
			break
		}
		reached++
		if reached > 2 {
			t.Fatalf("breaker pb lost in the failover: %d calls reached the failing provider after the promotion, want at most 2 (its threshold)", reached)
		}
	}
	// The gateway that had seen pb open says Redis lost it, and names no
	// breaker Redis kept.
	var lost []string
	for line := range strings.SplitSeq(gws[0].stderr.String(), "\n") {
		if strings.Contains(line, "shared record went back") {
			lost = append(lost, line)
		}
	}
	if len(lost) != 1 || !strings.Contains(lost[0], "breaker=pb was=open") {
		t.Errorf("gateway 0 did not say that breaker pb, only pb, was lost in the failover: %q", lost)
	}
	paReached := 0
	for call(gws[1], "pa", "500") != 503 && paReached < 3 {
		paReached++
	}

	// Limits: at 6 a minute, at most one call starts in 10 s; whatever
	// passes now, within those 10 s, is over the limit.
	laAfter, lbAfter := burst("la", 4), burst("lb", 4)
	window := time.Since(start)
	if window >= 10*time.Second {
		t.Fatalf("the drill took %v from the first limited call; the limit's 10 s window is over, nothing can be measured", window)
	}
	overA, overB := naturalPassed+laAfter-1, lostPassed+lbAfter-1
	if overB > lostPassed {
		t.Fatalf("limit lb: %d calls over the limit after the failover; want at most %d, the admissions the replica never received", overB, lostPassed)
	}
	if overA != 0 {
		t.Errorf("limit la, its admission replicated: %d calls over the limit after the failover, want 0", overA)
	}
	t.Logf("failover loss: promotion %v after the kill, shared state resumed %v after it; "+
		"breaker opened before the replicas stopped (pa): %s on the new master, %d calls reached the provider before it reopened; "+
		"breaker opened only on the master (pb): %s on the new master, %d calls reached the provider before it reopened (threshold 2); "+
		"limit, admission replicated (la): %d over the limit; limit, admission only on the master (lb): %d over the limit (bound %d); window %v",
		promotedAt.Sub(killed).Round(time.Millisecond), resumed.Round(time.Millisecond),
		paNew, paReached, pbNew, reached, overA, overB, lostPassed, window.Round(time.Millisecond))
}

// err2s is "" for nil, else " (err)".
func err2s(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}
