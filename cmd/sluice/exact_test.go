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

// Two gateway processes on one state directory, whose primary fails
// until its shared breaker opens, fall back call after call: the slot of
// max_concurrent each call took for the refused primary is given back in
// the shared store, so no call is refused for a slot and none is held in
// either process (or the store) after them.
func TestGatewaysFallBackWithoutLeakingSlots(t *testing.T) {
	up := fake.NewServer("503")
	defer up.Close()
	backup := fake.NewServer("200")
	defer backup.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state: {backend: file, dir: %s}
log: {attempts: "-"}
providers:
  openai: {kind: openai, base_url: %s, max_concurrent: 2, api_key_env: SLUICE_TEST_UPKEY}
  backup: {kind: openai, base_url: %s, max_concurrent: 8, api_key_env: SLUICE_TEST_UPKEY}
routes:
  - {prefix: /openai, provider: openai, fallbacks: [{provider: backup, model: gpt-4o-mini-backup}]}
limits:
  rates: [{name: agents, scope: all, concurrent: 3}]
policies:
  interactive:
    retry: {max_attempts: 1}
    breaker: {failures: 2, cool: 1h}
    max_queue: 1s
`, dir, up.URL, backup.URL)), 0o600)
	env := []string{"SLUICE_TEST_UPKEY=sk-test"}
	gws := []*proc{startSluice(t, env, "serve", "--config", cfg), startSluice(t, env, "serve", "--config", cfg)}
	const calls = 20
	for i := range calls {
		if got := postChat(t, gws[i%2]); got != 200 {
			t.Fatalf("call %d answered %d, want the fallback's 200", i+1, got)
		}
	}
	if backup.Calls() != calls {
		t.Errorf("the fallback answered %d calls, want %d", backup.Calls(), calls)
	}
	for _, p := range gws {
		deadline := time.Now().Add(10 * time.Second)
		for {
			held := slotsHeld(t, p)
			if held == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("gateway %s holds slots after every call ended: %s", p.addr, held)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// slotsHeld reads GET /sluice/limits of p and returns the limits and
// concurrency keys with slots held, "" when none.
func slotsHeld(t *testing.T, p *proc) string {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/sluice/limits")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v struct {
		Stats map[string]struct {
			InFlight int `json:"in_flight"`
		} `json:"stats"`
		Buckets []struct {
			Key      string `json:"key"`
			InFlight int64  `json:"in_flight"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("GET /sluice/limits: %d %s", resp.StatusCode, raw)
	}
	var held []string
	keys := 0
	for name, s := range v.Stats {
		if s.InFlight != 0 {
			held = append(held, fmt.Sprintf("%s=%d", name, s.InFlight))
		}
	}
	for _, b := range v.Buckets {
		if strings.HasSuffix(b.Key, ":concurrent") {
			keys++
			if b.InFlight != 0 {
				held = append(held, fmt.Sprintf("%s=%d", b.Key, b.InFlight))
			}
		}
	}
	if keys == 0 {
		t.Fatalf("GET /sluice/limits lists no concurrency key: %s", raw)
	}
	return strings.Join(held, " ")
}
