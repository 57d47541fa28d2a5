package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

func TestRouteFallback(t *testing.T) {
	backup := fake.NewServer("200")
	defer backup.Close()
	e := newEnv(t, "503", func(c *config.Config) {
		c.Providers["backup"] = config.Provider{Kind: "openai", BaseURL: backup.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 8}
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
	cfg.Providers["other"] = config.Provider{Kind: "openai", BaseURL: "https://other.example", MaxConcurrent: 8}
	cfg.Routes[0].Fallbacks = []config.Target{{Provider: "other", Model: "m"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	_, err := New(cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "providers.other.api_key_env") {
		t.Fatalf("err = %v, want a refusal naming providers.other.api_key_env", err)
	}
}

// A fallback to another model of the same provider (breakers scoped per
// model, the setup DESIGN.md prescribes for it) is counted in
// sluice_fallbacks_total like one to another provider; a call the primary
// answers, even one naming the fallback's model, is not.
func TestSameProviderFallbackCounted(t *testing.T) {
	up := fake.NewServer("200")
	defer up.Close()
	var primary atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"model":"gpt-4o"`) { // the primary model is down
			primary.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		up.Provider.ServeHTTP(w, r)
	}))
	defer front.Close()
	e := newEnv(t, "200", func(c *config.Config) {
		c.Providers["openai"] = config.Provider{Kind: "openai", BaseURL: front.URL, MaxConcurrent: 8}
		c.Routes[0].Fallbacks = []config.Target{{Provider: "openai", Model: "gpt-4o-mini"}}
		for name, p := range c.Policies {
			p.BreakerScope = sluice.ScopeModel
			c.Policies[name] = p
		}
	})
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody) // gpt-4o-mini, the primary answers
	if b := body(t, resp); resp.StatusCode != 200 || up.Calls() != 1 {
		t.Fatalf("the primary's call: %d %s, %d calls", resp.StatusCode, b, up.Calls())
	}
	resp = e.do("POST", "/openai/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if b := body(t, resp); resp.StatusCode != 200 || resp.Header.Get("Sluice-Model") != "gpt-4o-mini" {
		t.Fatalf("%d %s (Sluice-Model %q), want the fallback's answer", resp.StatusCode, b, resp.Header.Get("Sluice-Model"))
	}
	if primary.Load() != 3 || up.Calls() != 2 {
		t.Errorf("calls to the primary model %d, to the fallback %d; want 3, 1", primary.Load(), up.Calls()-1)
	}
	m := body(t, e.do("GET", "/metrics", ""))
	if got := metricLines(m, "sluice_fallbacks_total"); got != `sluice_fallbacks_total{provider="openai",route="/openai"} 1` {
		t.Errorf("sluice_fallbacks_total: %q, want 1 for provider openai", got)
	}
}

// metricLines returns the samples of a metric in a /metrics page, one a
// line.
func metricLines(page, name string) string {
	var out []string
	for l := range strings.SplitSeq(page, "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
