package tracing

import (
	"testing"

	"github.com/sluice-llm/sluice/dialect"
)

// Each dialect's gen_ai.provider.name is the semantic conventions'
// well-known value.
func TestProviderName(t *testing.T) {
	for kind, want := range map[string]string{
		"openai": "openai", "anthropic": "anthropic", "azure": "azure.ai.openai", "gemini": "gcp.gemini",
		"bedrock": "aws.bedrock", "vertex": "gcp.vertex_ai",
	} {
		d, _ := dialect.Lookup(kind)
		if got := d.Traits().System; got != want {
			t.Errorf("%s: System %q, want %q", kind, got, want)
		}
	}
}
