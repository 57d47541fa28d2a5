package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestPoolKeysParse(t *testing.T) {
	c, err := Parse([]byte("providers:\n  openai:\n    api_keys_env: [KEY_A, {env: KEY_B, weight: 3}]\nroutes: [{prefix: /openai, provider: openai}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Providers["openai"].APIKeys
	want := []PoolKey{{Env: "KEY_A", Weight: 1}, {Env: "KEY_B", Weight: 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("APIKeys = %+v, want %+v", got, want)
	}
}

func TestPoolKeysRefused(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"both", "providers: {openai: {api_key_env: K, api_keys_env: [A, B]}}\n",
			"config: providers.openai.api_keys_env: given with api_key_env; keep one: api_keys_env: [K, …] for a pool, or api_key_env alone for one key"},
		{"empty", "providers: {openai: {api_keys_env: []}}\n", "providers.openai.api_keys_env: is empty"},
		{"bad name", "providers: {openai: {api_keys_env: [A, \"$B\"]}}\n", `providers.openai.api_keys_env[1]: "$B" is not an environment variable name`},
		{"twice", "providers: {openai: {api_keys_env: [A, {env: A, weight: 2}]}}\n", "providers.openai.api_keys_env[1]: $A is listed twice"},
		{"zero weight", "providers: {openai: {api_keys_env: [{env: A, weight: 0}]}}\n", "providers.openai.api_keys_env[0].weight: 0: must be at least 1 (default 1) at line 1"},
		{"unknown item key", "providers: {openai: {api_keys_env: [{name: A}]}}\n", "providers.openai.api_keys_env[0].name: unknown key"},
		{"not a list", "providers: {openai: {api_keys_env: A}}\n", "providers.openai.api_keys_env: must be a list"},
		{"non-loopback", "listen: 0.0.0.0:8080\nproviders: {openai: {api_keys_env: [A, B]}}\nroutes: [{prefix: /openai, provider: openai}]\n",
			"providers.openai.api_keys_env: the gateway would hand this provider's key to anyone who reaches 0.0.0.0:8080"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: %v\nwant it to contain %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}
