package dialect

import "testing"

// Each dialect names what a call does as an attempt's span says it
// (gen_ai.operation.name), from its path.
func TestOperation(t *testing.T) {
	for _, tt := range []struct {
		d          Dialect
		path, want string
	}{
		{OpenAI, "/v1/chat/completions", "chat"},
		{Anthropic, "/v1/messages", "chat"},
		{OpenAI, "/v1/responses", "chat"},
		{OpenAI, "/v1/completions", "text_completion"},
		{OpenAI, "/v1/embeddings", "embeddings"},
		{OpenAI, "/v1/models", "other"},
		{Azure, "/openai/deployments/gpt4o/chat/completions", "chat"},
		{Gemini, "/v1beta/models/gemini-2.0-flash:generateContent", "generate_content"},
		{Gemini, "/v1beta/models/gemini-2.0-flash:streamGenerateContent", "generate_content"},
		{Gemini, "/v1beta/models/text-embedding-004:embedContent", "embeddings"},
		{Gemini, "/v1beta/models/gemini-2.0-flash:countTokens", "other"},
		{Bedrock, "/model/anthropic.claude-3-haiku-20240307-v1:0/converse-stream", "chat"},
		{Bedrock, "/model/m/invoke", "chat"},
		{Vertex, "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent", "generate_content"},
		{Vertex, "/v1/projects/p/locations/us-central1/publishers/anthropic/models/claude-sonnet-4-5:rawPredict", "chat"},
	} {
		if got := tt.d.Request(tt.path, nil).Operation; got != tt.want {
			t.Errorf("%s: Request(%q).Operation = %q, want %q", tt.d.Kind(), tt.path, got, tt.want)
		}
	}
}
