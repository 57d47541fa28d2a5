package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// keyedConfig writes the config of gateways sharing the state at state
// (a directory, or a Redis URL) in front of upstream, with a 2 s total.
func keyedConfig(t *testing.T, state, upstream string) string {
	t.Helper()
	dir := t.TempDir()
	backend := fmt.Sprintf("{backend: file, dir: %s}", state)
	if strings.HasPrefix(state, "redis://") {
		backend = fmt.Sprintf("{backend: redis, url: %q}", state)
	}
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state: %s
log: {attempts: "-"}
providers:
  openai: {kind: openai, base_url: %s}
routes:
  - {prefix: /openai, provider: openai}
policies:
  interactive:
    timeout: {connect: 500ms, first_byte: 1500ms, idle: 1s, total: 2s}
    retry: {max_attempts: 1}
`, backend, upstream)), 0o600)
	return cfg
}

// postKeyed sends a chat call with an Idempotency-Key to p and returns
// its answer, body read.
func postKeyed(t *testing.T, p *proc, key string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+p.addr+"/openai/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	req.Header.Set("Authorization", "Bearer sk-client")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// Duplicates sent to two gateway processes sharing the state at once make
// one upstream call: the other waits for the first and replays its answer.
func testDuplicatesAcrossGateways(t *testing.T, state string) {
	up := fake.NewServer("slow:400ms")
	defer up.Close()
	cfg := keyedConfig(t, state, up.URL)
	gws := []*proc{startSluice(t, nil, "serve", "--config", cfg), startSluice(t, nil, "serve", "--config", cfg)}
	var wg sync.WaitGroup
	bodies, replayed := make([]string, 6), make([]string, 6)
	for i := range 6 {
		wg.Go(func() {
			resp, b := postKeyed(t, gws[i%2], "webhook-delivery-9")
			if resp.StatusCode != 200 {
				t.Errorf("duplicate %d: %d %s", i, resp.StatusCode, b)
			}
			bodies[i], replayed[i] = b, resp.Header.Get("Idempotent-Replayed")
		})
	}
	wg.Wait()
	if up.Calls() != 1 {
		t.Errorf("%d upstream calls for 6 duplicates over two gateways, want 1", up.Calls())
	}
	n := 0
	for i := range 6 {
		if bodies[i] != bodies[0] {
			t.Errorf("duplicate %d got %q, want the one answer %q", i, bodies[i], bodies[0])
		}
		if replayed[i] == "true" {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d replays, want 5", n)
	}
}

func TestDuplicatesAcrossGatewaysOnFileState(t *testing.T) {
	testDuplicatesAcrossGateways(t, t.TempDir())
}

// A gateway killed with -9 mid-call leaves its mark: a duplicate on the
// other gateway waits for it, then gets 409 with Retry-After, until the
// mark's lease ends; then the duplicate runs the call itself.
func TestKilledOwnerMarkExpires(t *testing.T) {
	up := fake.NewServer("hang,200")
	defer up.Close()
	cfg := keyedConfig(t, t.TempDir(), up.URL)
	a := startSluice(t, nil, "serve", "--config", cfg)
	b := startSluice(t, nil, "serve", "--config", cfg)
	go func() { // its answer never comes: a is killed
		req, _ := http.NewRequest("POST", "http://"+a.addr+"/openai/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
		req.Header.Set("Authorization", "Bearer sk-client")
		req.Header.Set("Idempotency-Key", "nightly-job-3")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for up.Calls() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first call did not reach upstream")
		}
		time.Sleep(5 * time.Millisecond)
	}
	killed := time.Now()
	a.cmd.Process.Kill()
	resp, body := postKeyed(t, b, "nightly-job-3")
	if resp.StatusCode != 409 || !strings.Contains(body, "idempotency_in_progress") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("duplicate while the killed owner's mark lives: %d %q (Retry-After %q), want 409 idempotency_in_progress",
			resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if up.Calls() != 1 {
		t.Errorf("%d upstream calls while the mark lives, want 1", up.Calls())
	}
	// The lease is total + total (4 s) from the mark: past it, the
	// duplicate runs.
	for {
		resp, body = postKeyed(t, b, "nightly-job-3")
		if resp.StatusCode == 200 {
			break
		}
		if resp.StatusCode != 409 || time.Since(killed) > 15*time.Second {
			t.Fatalf("after the lease: %d %q, want the call run (200)", resp.StatusCode, body)
		}
	}
	if up.Calls() != 2 || resp.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("%d upstream calls, replayed %q; want the duplicate's own call", up.Calls(), resp.Header.Get("Idempotent-Replayed"))
	}
}

func TestDuplicatesAcrossGatewaysOnRedis(t *testing.T) {
	testDuplicatesAcrossGateways(t, redistest.Start(t).URL())
}
