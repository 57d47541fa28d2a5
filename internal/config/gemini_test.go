package config

import (
	"strings"
	"testing"
)

func TestGeminiProvider(t *testing.T) {
	c, err := Parse([]byte("providers:\n  gemini: {api_key_env: GEMINI_API_KEY}\n" +
		"routes:\n  - {prefix: /gemini, provider: gemini}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Providers["gemini"]
	if p.Kind != "gemini" || p.BaseURL != "https://generativelanguage.googleapis.com" ||
		p.APIKeyEnv != "GEMINI_API_KEY" || p.MaxConcurrent != DefaultMaxConcurrent {
		t.Errorf("a provider named gemini: %+v, want the gemini preset with the key", p)
	}
	if _, ok := Default().Providers["gemini"]; ok {
		t.Error("the default config has a gemini provider; the preset is for a provider named gemini only")
	}
	c, err = Parse([]byte("providers:\n  vertex: {kind: gemini, base_url: \"http://127.0.0.1:9/\"}\n" +
		"routes:\n  - {prefix: /g, provider: vertex}\n"))
	if err != nil || c.Providers["vertex"].Kind != "gemini" || c.Providers["vertex"].BaseURL != "http://127.0.0.1:9" {
		t.Errorf("kind gemini under another name: %+v, %v", c.Providers["vertex"], err)
	}
	_, err = Parse([]byte("providers: {g: {kind: gemeni, base_url: \"https://x\"}}\n"))
	if err == nil || !strings.Contains(err.Error(), `unknown kind "gemeni" (did you mean gemini?)`) {
		t.Errorf("a misspelt kind: %v", err)
	}
	_, err = Parse([]byte("providers: {g: {base_url: \"https://x\"}}\n"))
	if err == nil || !strings.Contains(err.Error(), ", gemini") {
		t.Errorf("a missing kind: %v, want the message to list gemini", err)
	}
}
