package main

import (
	"strings"
	"testing"
)

// TestServeFakeReload: under --fake every provider of the config, and of
// a config reloaded by SIGHUP, answers from the in-process fake, whatever
// base_url the file gives (here hosts that do not exist).
func TestServeFakeReload(t *testing.T) {
	cfg := writeConfig(t, "https://api.openai.invalid", "")
	p := startSluice(t, nil, "serve", "--fake", "--config", cfg)
	if !strings.Contains(p.stderr.String(), "FAKE UPSTREAM") {
		t.Errorf("the start lines do not say the providers are the fake:\n%s", p.stderr)
	}
	if code := postChat(t, p); code != 200 {
		t.Fatalf("a call under --fake: %d, want 200\n%s", code, p.stderr)
	}
	editConfig(t, cfg, func(c string) string {
		c = strings.Replace(c, "providers:\n", "providers:\n  other: {kind: anthropic, base_url: https://api.anthropic.invalid}\n", 1)
		return strings.Replace(c, "routes:\n", "routes:\n  - {prefix: /v2, provider: other, policy: interactive}\n", 1)
	})
	p.hangUp(t, 1)
	code, got := p.post(t, "/v2/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	if code != 200 || !strings.Contains(got, "This is a fake answer.") {
		t.Errorf("the provider the reload added: %d %s; want the fake's answer\n%s", code, got, p.stderr)
	}
	if strings.Contains(p.stderr.String(), ".invalid") {
		t.Errorf("a route went to the file's base_url:\n%s", p.stderr)
	}
}
