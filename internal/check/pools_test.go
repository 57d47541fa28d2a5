package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/keypool"
)

// check shows each pool's keys by short hash, weight and share, never the
// key; an empty key variable is refused as serve refuses it.
func TestCheckShowsKeyPools(t *testing.T) {
	const keyA, keyB = "sk-check-pool-key-a", "sk-check-pool-key-b"
	path := filepath.Join(t.TempDir(), "pool.yaml")
	os.WriteFile(path, []byte("state: {backend: memory}\nproviders:\n"+
		"  openai: {kind: openai, base_url: https://api.openai.com, api_keys_env: [SLUICE_TEST_POOL_A, {env: SLUICE_TEST_POOL_B, weight: 3}]}\n"+
		"routes:\n  - {prefix: /openai, provider: openai}\n"), 0o600)
	t.Setenv("SLUICE_TEST_POOL_A", keyA)
	t.Setenv("SLUICE_TEST_POOL_B", keyB)
	code, out, errOut := runCheck(t, "--config", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Key pools:", "$SLUICE_TEST_POOL_A  " + keypool.Hash(keyA) + "  1       25%",
		"$SLUICE_TEST_POOL_B  " + keypool.Hash(keyB) + "  3       75%"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, keyA) || strings.Contains(out, keyB) {
		t.Error("a key is in the output")
	}
	_, js, _ := runCheck(t, "--config", path, "--json")
	var r struct {
		Pools []poolRow `json:"key_pools"`
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil || len(r.Pools) != 2 || r.Pools[1].Hash != keypool.Hash(keyB) || r.Pools[1].Share != 75 {
		t.Errorf("--json key_pools %+v (%v)", r.Pools, err)
	}
	t.Setenv("SLUICE_TEST_POOL_B", "")
	code, out, errOut = runCheck(t, "--config", path)
	if code != exitUsage || !strings.Contains(errOut, "providers.openai.api_keys_env[1] names $SLUICE_TEST_POOL_B, which is empty") || out != "" {
		t.Errorf("with a key variable empty: exit %d, stderr %q", code, errOut)
	}
}
