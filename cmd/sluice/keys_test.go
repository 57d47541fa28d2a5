package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/keypool"
)

// A key's pause is host-wide: two real gateways share one state
// directory; after gateway A's call on key 1 gets a rate-limit 429 (and
// moves to key 2), gateway B's next call goes to key 2 without trying key
// 1. `sluice keys` shows key 1 paused; its reset is seen by gateway B,
// whose next call tries key 1 again.
func TestGatewaysSharePausedKeys(t *testing.T) {
	const key1, key2 = "sk-proc-key-one-111111", "sk-proc-key-two-222222"
	up := fake.NewServer("200")
	up.Provider.KeyScripts = map[string]string{key1: "429:retry-after=60"}
	defer up.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state: {backend: file, dir: %s}
log: {attempts: %s}
providers:
  openai: {kind: openai, base_url: %s, api_keys_env: [SLUICE_TEST_KEY_1, {env: SLUICE_TEST_KEY_2, weight: 1}]}
routes:
  - {prefix: /openai, provider: openai}
`, dir, filepath.Join(dir, "attempts.jsonl"), up.URL)), 0o600)
	env := []string{"SLUICE_TEST_KEY_1=" + key1, "SLUICE_TEST_KEY_2=" + key2}
	a := startSluice(t, env, "serve", "--config", cfg)
	b := startSluice(t, env, "serve", "--config", cfg)
	post := func(p *proc) int { return postChat(t, p) }
	with := func(key string) int {
		n := 0
		for _, r := range up.Requests() {
			if r.Header.Get("Authorization") == "Bearer "+key {
				n++
			}
		}
		return n
	}
	if got := post(a); got != 200 || with(key1) != 1 || with(key2) != 1 {
		t.Fatalf("gateway A: %d; key 1 called %d, key 2 %d; want 200 after one each", got, with(key1), with(key2))
	}
	if got := post(b); got != 200 || with(key1) != 1 || with(key2) != 2 {
		t.Fatalf("gateway B: %d; key 1 called %d, key 2 %d; want 200 from key 2 alone (key 1 still 1)", got, with(key1), with(key2))
	}

	t.Setenv("SLUICE_TEST_KEY_1", key1)
	t.Setenv("SLUICE_TEST_KEY_2", key2)
	h1 := keypool.Hash(key1)
	var out strings.Builder
	if code := run([]string{"keys", "--config", cfg}, strings.NewReader(""), &out, &out); code != 0 ||
		!strings.Contains(out.String(), h1) || !strings.Contains(out.String(), "paused") || strings.Contains(out.String(), key1) {
		t.Fatalf("sluice keys: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"keys", "reset", h1, "--config", cfg}, strings.NewReader(""), &out, &out); code != 0 {
		t.Fatalf("sluice keys reset: exit %d: %s", code, out.String())
	}
	if got := post(b); got != 200 || with(key1) != 2 {
		t.Errorf("after the reset gateway B: %d, key 1 called %d times; want 200 and key 1 tried again (2)", got, with(key1))
	}
	out.Reset()
	if code := run([]string{"keys", "reset", "00000000", "--config", cfg}, strings.NewReader(""), &out, &out); code != exitUsage {
		t.Errorf("reset of an unknown hash: exit %d: %s", code, out.String())
	}
	t.Setenv("SLUICE_TEST_KEY_2", "")
	out.Reset()
	if code := run([]string{"keys", "--config", cfg}, strings.NewReader(""), &out, &out); code != exitUsage || !strings.Contains(out.String(), "$SLUICE_TEST_KEY_2, which is empty") {
		t.Errorf("with a key variable empty: exit %d: %s", code, out.String())
	}
}
