package gateway

import (
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/config"
)

// With an injected key, no client credential header of any form reaches
// the provider; a client's Forwarded and X-Forwarded-* never do.
func TestClientCredentialAndForwardedHeadersDropped(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		for name, p := range c.Providers {
			p.APIKeyEnv = "UPSTREAM_KEY"
			c.Providers[name] = p
		}
	})
	sent := []string{
		"Authorization", "Bearer " + clientKey,
		"X-Api-Key", clientKey,
		"Api-Key", clientKey,
		"X-Goog-Api-Key", clientKey,
		"X-Forwarded-For", "203.0.113.7",
		"X-Forwarded-Host", "evil.example",
		"X-Forwarded-Proto", "https",
		"X-Forwarded-Port", "443",
		"Forwarded", "for=203.0.113.7;host=evil.example",
		"X-Custom", "kept",
	}
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, sent...))
	body(t, e.do("POST", "/anthropic/v1/messages", msgStream, sent...))
	reqs := e.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(reqs))
	}
	for i, want := range []struct{ header, value string }{
		{"Authorization", "Bearer sk-injected-1234"},
		{"X-Api-Key", "sk-injected-1234"},
	} {
		h := reqs[i].Header
		if got := h.Values(want.header); len(got) != 1 || got[0] != want.value {
			t.Errorf("%s: %s %q, want only the injected key", reqs[i].Path, want.header, got)
		}
		for k, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, clientKey) {
					t.Errorf("%s: the client's key reached upstream in %s", reqs[i].Path, k)
				}
			}
			if k == "Forwarded" || strings.HasPrefix(k, "X-Forwarded-") {
				t.Errorf("%s: the client's %s: %q was forwarded", reqs[i].Path, k, vs)
			}
		}
		if h.Get("X-Custom") != "kept" {
			t.Errorf("%s: an ordinary header was dropped", reqs[i].Path)
		}
	}
}

// Without an injected key the client's key still passes through, and its
// X-Forwarded-* headers still do not.
func TestForwardedHeadersDroppedWithPassThroughKeys(t *testing.T) {
	e := newEnv(t, "200", nil)
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, "X-Forwarded-For", "203.0.113.7", "Forwarded", "for=203.0.113.7"))
	h := e.up.Requests()[0].Header
	if h.Get("Authorization") != "Bearer "+clientKey {
		t.Errorf("the client's key was not passed through: %q", h.Get("Authorization"))
	}
	if h.Get("X-Forwarded-For") != "" || h.Get("Forwarded") != "" {
		t.Errorf("forwarded headers reached upstream: %q %q", h.Get("X-Forwarded-For"), h.Get("Forwarded"))
	}
}
