package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
)

// prioConfig writes the config of gateways sharing the state at state (a
// directory, or a Redis URL) in front of upstream, one call in flight to
// it at a time, calls waiting at most 3 s for the slot.
func prioConfig(t *testing.T, state, upstream string) string {
	t.Helper()
	backend := fmt.Sprintf("{backend: file, dir: %s}", state)
	if strings.HasPrefix(state, "redis://") {
		backend = fmt.Sprintf("{backend: redis, url: %q}", state)
	}
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(cfg, fmt.Appendf(nil, `listen: 127.0.0.1:0
state: %s
log: {attempts: "-"}
providers:
  openai: {kind: openai, base_url: %s, max_concurrent: 1}
routes:
  - {prefix: /openai, provider: openai}
policies:
  interactive:
    timeout: {connect: 500ms, first_byte: 3s, idle: 3s, total: 8s}
    retry: {max_attempts: 1}
    max_queue: 3s
`, backend, upstream), 0o600)
	return cfg
}

// prioPost sends a chat call to p with the fake's script and the priority
// given ("" for none) and returns its status.
func prioPost(t *testing.T, p *proc, script, prio string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+p.addr+"/openai/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	req.Header.Set("Authorization", "Bearer sk-client")
	req.Header.Set("Sluice-Fake-Script", script)
	if prio != "" {
		req.Header.Set("Sluice-Priority", prio)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0 // a gateway killed under it
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitingOn returns how many calls wait for the provider's concurrency
// slot at priority, in every process sharing the state, as p's
// /sluice/limits says.
func waitingOn(t *testing.T, p *proc, priority string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/sluice/limits")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Buckets []struct {
			Key     string           `json:"key"`
			Waiting map[string]int64 `json:"waiting"`
		} `json:"buckets"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	for _, b := range v.Buckets {
		if b.Key == "limit:max_concurrent:openai:concurrent" {
			return b.Waiting[priority]
		}
	}
	return -1
}

// A gateway killed with -9 while an interactive call of its waits for the
// provider's one slot leaves no phantom waiter: on a state directory the
// other gateway drops it at once (its process is dead), on Redis when its
// lease ends (the call's max_queue and a second); then the other
// gateway's batch calls take the slot as soon as it is free.
func testKilledWaiter(t *testing.T, state string, within time.Duration) {
	up := fake.NewServer("200")
	defer up.Close()
	cfg := prioConfig(t, state, up.URL)
	a := startSluice(t, nil, "serve", "--config", cfg)
	b := startSluice(t, nil, "serve", "--config", cfg)
	held := make(chan int, 1)
	go func() { held <- prioPost(t, b, "slow:1500ms", "batch") }() // b holds the one slot for 1.5 s
	for up.Calls() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	go prioPost(t, a, "200", "") // a's interactive call waits for it
	deadline := time.Now().Add(5 * time.Second)
	for waitingOn(t, b, "interactive") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the interactive call waiting on the other gateway is not counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.cmd.Process.Kill() // not reaped until the test's end: a zombie is dead to the limiter too
	killed := time.Now()
	for waitingOn(t, b, "interactive") != 0 {
		if time.Since(killed) > within {
			t.Fatalf("the killed gateway's waiter is still counted %v after the kill, want gone within %v", time.Since(killed), within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	gone := time.Since(killed)
	if s := <-held; s != 200 {
		t.Fatalf("the call holding the slot: %d", s)
	}
	start := time.Now()
	if s := prioPost(t, b, "200", "batch"); s != 200 || time.Since(start) > time.Second {
		t.Fatalf("a batch call once the slot is free: %d after %v, want 200 at once", s, time.Since(start))
	}
	t.Logf("the killed gateway's waiter was dropped %v after the kill", gone.Round(time.Millisecond))
}

func TestKilledGatewayLeavesNoWaiterOnFileState(t *testing.T) {
	testKilledWaiter(t, t.TempDir(), time.Second)
}

func TestKilledGatewayLeavesNoWaiterOnRedis(t *testing.T) {
	testKilledWaiter(t, startRedis(t), 5*time.Second)
}
