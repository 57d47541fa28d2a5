package tracing

import "testing"

// Each kind's gen_ai.provider.name is its dialect's, the semantic
// conventions' well-known value; a kind no dialect has is named as it is.
func TestProviderName(t *testing.T) {
	for kind, want := range map[string]string{
		"openai": "openai", "anthropic": "anthropic", "azure": "azure.ai.openai", "gemini": "gcp.gemini",
		"bedrock": "aws.bedrock", "vertex": "gcp.vertex_ai", "mystery": "mystery",
	} {
		if got := ProviderName(kind); got != want {
			t.Errorf("ProviderName(%q) = %q, want %q", kind, got, want)
		}
	}
}
