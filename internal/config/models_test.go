package config

import (
	"strings"
	"testing"
)

// providers.X.models: what a model can take, read with its defaults
// (tools, images and a JSON schema taken, no size declared).
func TestModels(t *testing.T) {
	c := mustParse(t, `
providers:
  local:
    kind: openai
    base_url: http://127.0.0.1:8000
    models:
      llama3*: {context: 8192, tools: false}
      "llama3.2-vision": {context: 131072, output: 2048, json_schema: false}
      qwen: ~
routes: [{prefix: /local, provider: local}]
`)
	ms := c.Providers["local"].Models
	want := map[string]ModelLimits{
		"llama3*":         {Context: 8192, Tools: false, Images: true, JSONSchema: true},
		"llama3.2-vision": {Context: 131072, Output: 2048, Tools: true, Images: true, JSONSchema: false},
		"qwen":            {Tools: true, Images: true, JSONSchema: true},
	}
	if len(ms) != len(want) {
		t.Fatalf("models %+v, want %+v", ms, want)
	}
	for k, w := range want {
		if ms[k] != w {
			t.Errorf("models[%q] = %+v, want %+v", k, ms[k], w)
		}
	}
}

// Each mistake in a model's declaration is refused with one line naming
// the key and the fix.
func TestModelsRefused(t *testing.T) {
	for _, tc := range []struct{ name, models, want string }{
		{"unknown capability", `gpt-4o: {image: false}`, `providers.p.models.gpt-4o.image: unknown key (did you mean images?)`},
		{"misspelt capability", `gpt-4o: {json-schema: false}`, `unknown key (did you mean json_schema?)`},
		{"zero context", `gpt-4o: {context: 0}`, `providers.p.models.gpt-4o.context: "0" is not a count of tokens of at least 1 (write e.g. 128000, or leave it out when not known)`},
		{"negative output", `gpt-4o: {output: -5}`, `providers.p.models.gpt-4o.output: "-5" is not a count of tokens of at least 1`},
		{"context not a number", `gpt-4o: {context: 128k}`, `providers.p.models.gpt-4o.context: "128k" is not a count of tokens`},
		{"capability not a bool", `gpt-4o: {tools: no-thanks}`, `providers.p.models.gpt-4o.tools: "no-thanks" is not true or false`},
		{"'*' inside", `"gpt-*-mini": {tools: false}`, `providers.p.models["gpt-*-mini"]: '*' may only end a name, as in gpt-4o*`},
		{"empty name", `"": {tools: false}`, `providers.p.models: an empty model name; name the model`},
		{"not a mapping", `[gpt-4o]`, `providers.p.models: must be a mapping of keys, found a list`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "providers: {p: {kind: openai, base_url: \"https://h.example\", models: {" + strings.Trim(tc.models, "[]") + "}}}\nroutes: [{prefix: /p, provider: p}]\n"
			if tc.name == "not a mapping" {
				src = "providers: {p: {kind: openai, base_url: \"https://h.example\", models: " + tc.models + "}}\nroutes: [{prefix: /p, provider: p}]\n"
			}
			_, err := Parse([]byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v\nwant one line containing %s", err, tc.want)
			}
		})
	}
	// A config built by hand: a size below 0 (0 declares none).
	c := Default()
	pr := c.Providers["openai"]
	pr.Models = map[string]ModelLimits{"gpt-4o": {Context: -1}}
	c.Providers["openai"] = pr
	err := c.Validate()
	if err == nil || err.Error() != "config: providers.openai.models.gpt-4o.context: -1: must be at least 1 token (e.g. 128000), or left out when not known" {
		t.Errorf("a negative context built by hand: %v", err)
	}
}
