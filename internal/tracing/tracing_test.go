package tracing

import "testing"

func TestOperation(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/chat/completions": "chat",
		"/v1/messages":         "chat",
		"/v1/responses":        "chat",
		"/v1/completions":      "text_completion",
		"/v1/embeddings":       "embeddings",
		"/v1beta/models/gemini-2.0-flash:generateContent":       "generate_content",
		"/v1beta/models/gemini-2.0-flash:streamGenerateContent": "generate_content",
		"/v1beta/models/text-embedding-004:embedContent":        "embeddings",
		"/v1/models": "other",
	} {
		if got := Operation(path); got != want {
			t.Errorf("Operation(%q) = %q, want %q", path, got, want)
		}
	}
}

// Each kind's gen_ai.provider.name is its dialect's, the semantic
// conventions' well-known value; a kind no dialect has is named as it is.
func TestProviderName(t *testing.T) {
	for kind, want := range map[string]string{
		"openai": "openai", "anthropic": "anthropic", "azure": "azure.ai.openai", "gemini": "gcp.gemini",
		"mystery": "mystery",
	} {
		if got := ProviderName(kind); got != want {
			t.Errorf("ProviderName(%q) = %q, want %q", kind, got, want)
		}
	}
}
