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

// TestServeFakeNeedsNoKeys: a config whose providers inject keys from
// variables that are not set refuses to serve, but under --fake it serves,
// the fake taking a placeholder for each key (one key and a pool here).
func TestServeFakeNeedsNoKeys(t *testing.T) {
	cfg := writeConfig(t, "https://api.openai.invalid", "")
	editConfig(t, cfg, func(c string) string {
		return strings.Replace(c, "base_url: https://api.openai.invalid}",
			"base_url: https://api.openai.invalid, api_key_env: SLUICE_TEST_UNSET_KEY}\n"+
				"  pooled: {kind: anthropic, base_url: https://api.anthropic.invalid, api_keys_env: [SLUICE_TEST_UNSET_A, SLUICE_TEST_UNSET_B]}", 1)
	})
	editConfig(t, cfg, func(c string) string {
		return strings.Replace(c, "routes:\n", "routes:\n  - {prefix: /pooled, provider: pooled, policy: interactive}\n", 1)
	})
	env := []string{"SLUICE_TEST_UNSET_KEY=", "SLUICE_TEST_UNSET_A=", "SLUICE_TEST_UNSET_B="}
	var out strings.Builder
	if code := run([]string{"serve", "--config", cfg}, nil, &out, &out); code != exitUsage || !strings.Contains(out.String(), "SLUICE_TEST_UNSET_KEY") {
		t.Fatalf("without --fake: exit %d, %s; want 2 naming the unset variable", code, out.String())
	}
	p := startSluice(t, env, "serve", "--fake", "--config", cfg)
	if code := postChat(t, p); code != 200 {
		t.Errorf("the provider with an unset api_key_env under --fake: %d, want 200\n%s", code, p.stderr)
	}
	code, got := p.post(t, "/pooled/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	if code != 200 || !strings.Contains(got, "This is a fake answer.") {
		t.Errorf("the pool of unset keys under --fake: %d %s\n%s", code, got, p.stderr)
	}
}
