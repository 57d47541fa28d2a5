package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckRefusesWhatServeRefuses: a config serve refuses for its
// environment is refused by check too, with serve's message.
func TestCheckRefusesWhatServeRefuses(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ cfg, want string }{
		{"providers:\n  openai: {kind: openai, base_url: https://api.openai.com, api_key_env: SLUICE_TEST_UNSET_KEY}\n" +
			"routes:\n  - {prefix: /openai, provider: openai}\n",
			"gateway: providers.openai.api_key_env names $SLUICE_TEST_UNSET_KEY, which is empty"},
		{"admin: {token_env: SLUICE_TEST_UNSET_TOKEN}\n",
			"gateway: admin.token_env names $SLUICE_TEST_UNSET_TOKEN, which is empty"},
		{"providers:\n  a: {kind: openai, base_url: https://a.example}\n  b: {kind: openai, base_url: https://b.example}\n" +
			"routes:\n  - {prefix: /a, provider: a, fallbacks: [{provider: b, model: m}]}\n",
			"gateway: route /a: fallbacks[0]: provider b would receive the clients' keys for a"},
	}
	t.Setenv("SLUICE_TEST_UNSET_KEY", "")
	t.Setenv("SLUICE_TEST_UNSET_TOKEN", "")
	for i, tt := range tests {
		path := filepath.Join(dir, "c"+string(rune('0'+i))+".yaml")
		os.WriteFile(path, []byte("state: {backend: memory}\n"+tt.cfg), 0o600)
		code, out, errOut := runCheck(t, "--config", path)
		if code != exitUsage || !strings.Contains(errOut, "sluice check: "+tt.want) || strings.Count(errOut, "\n") != 1 || out != "" {
			t.Errorf("config %q: exit %d, stderr %q, stdout %q; want exit 2 and one line with %q", tt.cfg, code, errOut, out, tt.want)
		}
	}
	t.Setenv("SLUICE_TEST_UNSET_KEY", "sk-test")
	t.Setenv("SLUICE_TEST_UNSET_TOKEN", "tok")
	for i := range 2 {
		path := filepath.Join(dir, "c"+string(rune('0'+i))+".yaml")
		if code, _, errOut := runCheck(t, "--config", path); code == exitUsage {
			t.Errorf("config %d with its variables set: exit 2: %s", i, errOut)
		}
	}
}

// TestMain sets the key testdata/config/fallbacks.yaml injects for its
// fallback provider: serve, and so check, refuses the config without it.
func TestMain(m *testing.M) {
	os.Setenv("SLUICE_TEST_GROQ_KEY", "sk-test")
	os.Exit(m.Run())
}
