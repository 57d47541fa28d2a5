package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
  openai: {kind: openai, base_url: %s, api_key_env: SLUICE_TEST_UPSTREAM_KEY}
routes:
  - {prefix: /openai, provider: openai}
policies:
  interactive:
    timeout: {connect: 500ms, first_byte: 1500ms, idle: 1s, total: 2s}
    retry: {max_attempts: 1}
`, backend, upstream)), 0o600)
	return cfg
}

// The credentials of the keyed tests: the key the gateways inject
// upstream, and the client's own; neither may reach the answer store.
const (
	injectedKey = "sk-injected-secret-77"
	clientKey   = "sk-client-secret-88"
)

var keyedEnv = []string{"SLUICE_TEST_UPSTREAM_KEY=" + injectedKey}

// postKeyed sends a chat call with an Idempotency-Key to p and returns
// its answer, body read.
func postKeyed(t *testing.T, p *proc, key string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+p.addr+"/openai/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	req.Header.Set("Authorization", "Bearer "+clientKey)
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
// Then what the store holds (every file of the state directory, or every
// Redis key and value, read by its own type), returned by stored, holds
// neither credential.
func testDuplicatesAcrossGateways(t *testing.T, state string, stored func() []byte) {
	up := fake.NewServer("slow:400ms")
	defer up.Close()
	cfg := keyedConfig(t, state, up.URL)
	gws := []*proc{startSluice(t, keyedEnv, "serve", "--config", cfg), startSluice(t, keyedEnv, "serve", "--config", cfg)}
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
	all := stored()
	if !bytes.Contains(all, []byte(bodies[0])) {
		t.Fatalf("the store does not hold the kept answer (%d bytes read): the secret check looked at nothing", len(all))
	}
	for _, secret := range []string{injectedKey, clientKey} {
		if bytes.Contains(all, []byte(secret)) {
			t.Errorf("the store holds the credential %q", secret)
		}
	}
}

func TestDuplicatesAcrossGatewaysOnFileState(t *testing.T) {
	dir := t.TempDir()
	testDuplicatesAcrossGateways(t, dir, func() []byte {
		var all []byte
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				b, _ := os.ReadFile(path)
				all = append(append(all, path...), b...)
			}
			return nil
		})
		return all
	})
}

// A gateway killed with -9 mid-call leaves its mark: a duplicate on the
// other gateway waits for it, then gets 409 with Retry-After, until the
// mark's lease ends; then the duplicate runs the call itself.
func TestKilledOwnerMarkExpires(t *testing.T) {
	up := fake.NewServer("hang,200")
	defer up.Close()
	cfg := keyedConfig(t, t.TempDir(), up.URL)
	a := startSluice(t, keyedEnv, "serve", "--config", cfg)
	b := startSluice(t, keyedEnv, "serve", "--config", cfg)
	go func() { // its answer never comes: a is killed
		req, _ := http.NewRequest("POST", "http://"+a.addr+"/openai/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
		req.Header.Set("Authorization", "Bearer "+clientKey)
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
	srv := redistest.Start(t)
	testDuplicatesAcrossGateways(t, srv.URL(), func() []byte {
		return redisContents(t, srv.Client())
	})
}

// redisContents is every key of c and its value, read by the key's type,
// so that no value hides in an encoding (DUMP compresses long strings).
func redisContents(t *testing.T, c *redis.Client) []byte {
	t.Helper()
	ctx := context.Background()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys: %v %v", keys, err)
	}
	var all []byte
	for _, k := range keys {
		all = append(all, k...)
		var vals []string
		switch typ := c.Type(ctx, k).Val(); typ {
		case "string":
			vals = []string{c.Get(ctx, k).Val()}
		case "hash":
			for f, v := range c.HGetAll(ctx, k).Val() {
				vals = append(vals, f, v)
			}
		case "zset":
			vals = c.ZRange(ctx, k, 0, -1).Val()
		case "list":
			vals = c.LRange(ctx, k, 0, -1).Val()
		case "set":
			vals = c.SMembers(ctx, k).Val()
		default:
			t.Errorf("key %q of type %q not read", k, typ)
		}
		for _, v := range vals {
			all = append(all, v...)
		}
	}
	return all
}
