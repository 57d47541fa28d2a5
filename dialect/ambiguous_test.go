package dialect

import (
	"errors"
	"testing"

	"github.com/sluice-llm/sluice/internal/request"
)

// TestAmbiguousBody checks that every dialect refuses a body whose
// members it reads are named twice or in another case, where JSON
// parsers disagree on what the body asks, and accepts the same body
// written once.
func TestAmbiguousBody(t *testing.T) {
	const (
		chat     = "/v1/chat/completions"
		gemini   = "/v1beta/models/gemini-2.0-flash:generateContent"
		vertex   = "/v1/projects/p/locations/l/publishers/google/models/gemini-2.0-flash:generateContent"
		vertexA  = "/v1/projects/p/locations/l/publishers/anthropic/models/claude-3-5-haiku:rawPredict"
		converse = "/model/anthropic.claude-3-5-haiku-20241022-v1:0/converse"
	)
	tests := []struct {
		d          Dialect
		path, body string
		ambiguous  bool
	}{
		{OpenAI, chat, `{"model":"cheap","messages":[]}`, false},
		{OpenAI, chat, `{"model":"cheap","model":"expensive","messages":[]}`, true},
		{OpenAI, chat, `{"model":"cheap","Model":"expensive"}`, true},
		{OpenAI, chat, `{"model":"m","stream":false,"stream":true}`, true},
		{OpenAI, chat, `{"model":"m","max_tokens":1,"max_tokens":100000}`, true},
		{OpenAI, chat, `{"model":"m","max_completion_tokens":1,"MAX_COMPLETION_TOKENS":100000}`, true},
		{Anthropic, "/v1/messages", `{"model":"m","max_tokens":1,"max_tokens":100000}`, true},
		{Azure, "/openai/deployments/d/chat/completions", `{"stream":true,"stream":false}`, true},
		{Gemini, gemini, `{"generationConfig":{"maxOutputTokens":1}}`, false},
		{Gemini, gemini, `{"generationConfig":{"maxOutputTokens":1},"generationConfig":{"maxOutputTokens":100000}}`, true},
		{Gemini, gemini, `{"generationConfig":{"maxOutputTokens":1},"generation_config":{"max_output_tokens":100000}}`, true},
		{Gemini, gemini, `{"generationConfig":{"maxOutputTokens":1,"max_output_tokens":100000}}`, true},
		{Vertex, vertex, `{"generationConfig":{"maxOutputTokens":1,"maxOutputTokens":100000}}`, true},
		{Vertex, vertexA, `{"anthropic_version":"vertex-2023-10-16","max_tokens":1,"max_tokens":9}`, true},
		{Vertex, vertexA, `{"anthropic_version":"vertex-2023-10-16","max_tokens":1,"stream":true}`, false},
		{Bedrock, converse, `{"inferenceConfig":{"maxTokens":1}}`, false},
		{Bedrock, converse, `{"inferenceConfig":{"maxTokens":1},"inferenceConfig":{"maxTokens":100000}}`, true},
		{Bedrock, converse, `{"inferenceConfig":{"maxTokens":1,"maxTokens":100000}}`, true},
	}
	for _, tt := range tests {
		r := tt.d.Request(tt.path, []byte(tt.body))
		if got := r.Ambiguous != nil; got != tt.ambiguous || (got && !errors.Is(r.Ambiguous, request.ErrAmbiguous)) {
			t.Errorf("%T %s %s: Ambiguous = %v, want ambiguous %v", tt.d, tt.path, tt.body, r.Ambiguous, tt.ambiguous)
		}
	}
}
