package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// clusterConfig writes a config on the state of a Redis Cluster reached
// through one seed node, with extra appended.
func clusterConfig(t *testing.T, seed, upstream, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(path, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state: {backend: redis, redis: {mode: cluster, addrs: ["%s"]}}
log: {attempts: "-"}
providers:
  openai: {kind: openai, base_url: %s}
routes:
  - {prefix: /openai, provider: openai}
%s`, seed, upstream, extra)), 0o600)
	return path
}

// postScript posts a chat call with a fake script to p and returns the
// status.
func postScript(t *testing.T, p *proc, script string) int {
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

// noRedirects fails the test when a gateway logged a cluster redirect or a
// cross-slot script. (A fallback to local state is allowed: on a busy
// machine a call to Redis can outlast its 100 ms bound.)
func noRedirects(t *testing.T, gws ...*proc) {
	t.Helper()
	for i, g := range gws {
		for _, bad := range []string{"CROSSSLOT", "MOVED", "ASK "} {
			if strings.Contains(g.stderr.String(), bad) {
				t.Errorf("gateway %d logged %s:\n%s", i, bad, g.stderr.String())
			}
		}
	}
}

// Two gateways on a three-master Redis Cluster, given one seed node: the
// spend cap, the breaker's single probe, the shared rate limit and the key
// pauses all hold, with no MOVED or CROSSSLOT anywhere.
func TestTwoGatewaysOnRedisCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	seed := cl.Addrs()[1]

	t.Run("spend cap", func(t *testing.T) {
		up := fake.NewServer("200")
		defer up.Close()
		cfg := clusterConfig(t, seed, up.URL, `policies:
  interactive: {retry: {max_attempts: 1}}
budgets:
  - {name: daily, limit_usd: 1.00, period: day}
prices:
  gpt-4o-mini: {input: 0, output: 20000}
`)
		gws := []*proc{startSluice(t, nil, "serve", "--config", cfg), startSluice(t, nil, "serve", "--config", cfg)}
		var admitted, refused atomic.Int32
		var wg sync.WaitGroup
		for i := range 64 { // 64 × $0.10 asked under $1.00
			wg.Go(func() {
				switch postScript(t, gws[i%2], "200") {
				case 200:
					admitted.Add(1)
				case 503:
					refused.Add(1) // a reservation not answered in time: fails closed
				}
			})
		}
		wg.Wait()
		// Exactly 10 when the ledger answered every reservation in time. On
		// a busy machine a reservation can time out (a 503: the cap fails
		// closed) after Redis took it: its hold stays until reclaimed, so
		// each such refusal may leave one call short — never one over.
		n, r := admitted.Load(), refused.Load()
		if n > 10 || int32(up.Calls()) != n || n < 10-r {
			t.Fatalf("admitted %d, upstream %d (%d fail-closed refusals); want exactly 10 (at least %d)", n, up.Calls(), r, 10-r)
		}
		if r > 0 {
			t.Logf("admitted %d: %d reservations timed out under load and failed closed", n, r)
		}
		noRedirects(t, gws...)
	})

	t.Run("one probe", func(t *testing.T) {
		up := fake.NewServer("200")
		defer up.Close()
		cfg := clusterConfig(t, seed, up.URL, `policies:
  interactive:
    retry: {max_attempts: 1}
    breaker: {failures: 2, cool: 1s}
`)
		a, b := startSluice(t, nil, "serve", "--config", cfg), startSluice(t, nil, "serve", "--config", cfg)
		postScript(t, a, "500")
		postScript(t, a, "500")
		if got := postScript(t, b, "200"); got != 503 {
			// b's cache is refreshed every 250 ms: give it the time.
			time.Sleep(400 * time.Millisecond)
			if got = postScript(t, b, "200"); got != 503 {
				t.Fatalf("the other gateway answered %d with the breaker open, want 503", got)
			}
		}
		var out strings.Builder // sluice breakers reads the registry and the breakers on their masters
		if code := run([]string{"breakers", "--config", cfg}, strings.NewReader(""), &out, &out); code != 0 ||
			!regexp.MustCompile(`(?m)^openai +open `).MatchString(out.String()) {
			t.Errorf("sluice breakers on the cluster: exit %d\n%s", code, out.String())
		}
		time.Sleep(1200 * time.Millisecond) // past cool
		up.Reset()
		var ok, fast atomic.Int32
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				switch postScript(t, []*proc{a, b}[i%2], "slow:500ms") {
				case 200:
					ok.Add(1)
				case 503:
					fast.Add(1)
				}
			})
		}
		wg.Wait()
		if up.Calls() != 1 || ok.Load() != 1 || fast.Load() != 19 {
			t.Fatalf("half open: upstream %d, 200s %d, 503s %d; want one probe, 19 refused", up.Calls(), ok.Load(), fast.Load())
		}
		noRedirects(t, a, b)
	})

	t.Run("rate limit", func(t *testing.T) {
		up := fake.NewServer("200")
		defer up.Close()
		cfg := clusterConfig(t, seed, up.URL, `policies:
  interactive: {retry: {max_attempts: 1}, max_queue: 100ms}
limits:
  rates:
    - {name: rpm, requests_per_minute: 5}
`)
		gws := []*proc{startSluice(t, nil, "serve", "--config", cfg), startSluice(t, nil, "serve", "--config", cfg)}
		var ok, limited atomic.Int32
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				switch postScript(t, gws[i%2], "200") {
				case 200:
					ok.Add(1)
				case 429:
					limited.Add(1)
				}
			})
		}
		wg.Wait()
		if ok.Load() > 5 || ok.Load() < 1 || int32(up.Calls()) != ok.Load() || ok.Load()+limited.Load() != 20 {
			t.Fatalf("20 calls at 5 a minute: %d passed, %d limited, upstream %d; want at most 5 passed, the rest 429",
				ok.Load(), limited.Load(), up.Calls())
		}
		noRedirects(t, gws...)
	})

	t.Run("kept answers", func(t *testing.T) {
		up := fake.NewServer("slow:400ms")
		defer up.Close()
		cfg := clusterConfig(t, seed, up.URL, "policies:\n  interactive: {retry: {max_attempts: 1}}\n")
		gws := []*proc{startSluice(t, nil, "serve", "--config", cfg), startSluice(t, nil, "serve", "--config", cfg)}
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				if resp, b := postKeyed(t, gws[i%2], "webhook-delivery-cluster"); resp.StatusCode != 200 {
					t.Errorf("duplicate %d: %d %s", i, resp.StatusCode, b)
				}
			})
		}
		wg.Wait()
		if up.Calls() != 1 {
			t.Errorf("%d upstream calls for 6 duplicates over two gateways, want 1", up.Calls())
		}
		noRedirects(t, gws...)
	})

	t.Run("key pause", func(t *testing.T) {
		const key1, key2 = "sk-cluster-key-one-111111", "sk-cluster-key-two-222222"
		up := fake.NewServer("200")
		up.Provider.KeyScripts = map[string]string{key1: "429:retry-after=60"}
		defer up.Close()
		path := filepath.Join(t.TempDir(), "sluice.yaml")
		os.WriteFile(path, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state: {backend: redis, redis: {mode: cluster, addrs: ["%s"]}}
log: {attempts: "-"}
providers:
  openai: {kind: openai, base_url: %s, api_keys_env: [SLUICE_TEST_KEY_1, {env: SLUICE_TEST_KEY_2, weight: 1}]}
routes:
  - {prefix: /openai, provider: openai}
`, seed, up.URL)), 0o600)
		env := []string{"SLUICE_TEST_KEY_1=" + key1, "SLUICE_TEST_KEY_2=" + key2}
		a, b := startSluice(t, env, "serve", "--config", path), startSluice(t, env, "serve", "--config", path)
		with := func(key string) int {
			n := 0
			for _, r := range up.Requests() {
				if r.Header.Get("Authorization") == "Bearer "+key {
					n++
				}
			}
			return n
		}
		if got := postChat(t, a); got != 200 || with(key1) != 1 || with(key2) != 1 {
			t.Fatalf("gateway A: %d; key 1 called %d, key 2 %d; want 200 after one each", got, with(key1), with(key2))
		}
		if got := postChat(t, b); got != 200 || with(key1) != 1 || with(key2) != 2 {
			t.Fatalf("gateway B: %d; key 1 called %d, key 2 %d; want key 2 alone", got, with(key1), with(key2))
		}
		noRedirects(t, a, b)
	})
}
