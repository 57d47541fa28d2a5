package gateway

import (
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

func TestRouteFallback(t *testing.T) {
	backup := fake.NewServer("200")
	defer backup.Close()
	e := newEnv(t, "503", func(c *config.Config) {
		c.Providers["backup"] = config.Provider{Kind: config.KindOpenAI, BaseURL: backup.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 8}
		c.Routes[0].Fallbacks = []config.Target{{Provider: "backup", Model: "gpt-4o-mini-backup"}}
	})
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	got := body(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(got, `"model":"gpt-4o-mini-backup"`) {
		t.Fatalf("%d %q, want the fallback's answer", resp.StatusCode, got)
	}
	if resp.Header.Get("Sluice-Provider") != "backup" || resp.Header.Get("Sluice-Model") != "gpt-4o-mini-backup" {
		t.Errorf("Sluice-Provider %q, Sluice-Model %q", resp.Header.Get("Sluice-Provider"), resp.Header.Get("Sluice-Model"))
	}
	if e.up.Calls() != 3 || backup.Calls() != 1 {
		t.Errorf("calls primary %d, backup %d; want 3, 1", e.up.Calls(), backup.Calls())
	}
	r := backup.Requests()[0]
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-injected-1234" {
		t.Errorf("backup got %s with Authorization %q", r.Path, r.Header.Get("Authorization"))
	}
	if strings.Contains(strings.Join(r.Header.Values("Authorization"), ""), clientKey) {
		t.Error("the client's key for the primary reached the fallback")
	}
	m := body(t, e.do("GET", "/metrics", ""))
	if !strings.Contains(m, `sluice_fallbacks_total{provider="backup",route="/openai"} 1`) {
		t.Error("metrics do not count the fallback")
	}
}

func TestFallbackToAnotherHostNeedsItsOwnKey(t *testing.T) {
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	cfg.Providers["other"] = config.Provider{Kind: config.KindOpenAI, BaseURL: "https://other.example", MaxConcurrent: 8}
	cfg.Routes[0].Fallbacks = []config.Target{{Provider: "other", Model: "m"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	_, err := New(cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "providers.other.api_key_env") {
		t.Fatalf("err = %v, want a refusal naming providers.other.api_key_env", err)
	}
}
