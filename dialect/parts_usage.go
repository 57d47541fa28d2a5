package dialect

import (
	"bytes"
	"encoding/json"

	"github.com/sluice-llm/sluice/internal/sse"
)

// Usage, as each dialect reports it. (To be folded into the dialect files.)

// ---- OpenAI --------------------------------------------------------------

// OpenAI reports an answer's usage in its top-level "usage" object: a chat
// completion's prompt_tokens (cached tokens included), completion_tokens
// and prompt_tokens_details.cached_tokens; a Responses API response's
// input_tokens, output_tokens and input_tokens_details.cached_tokens. A
// stream carries it in the last chat chunk whose "usage" is not null (sent
// only when the request set stream_options.include_usage), or in the
// "response" of response.completed (response.incomplete, response.failed).
//
// The servers that speak OpenAI's API relay Anthropic's answers too, and a
// Transport that names no dialect calls Anthropic's /v1/messages as
// OpenAI: OpenAI's readers read Anthropic's usage as well (objectUsage,
// messagesEvent).

func (openAI) Usage(body []byte) (Usage, bool) { return objectUsage(body) }

func (openAI) StreamUsage() UsageReader { return newSSEUsage(messagesEvent) }

// ---- Azure OpenAI --------------------------------------------------------

// Azure OpenAI reports usage as OpenAI does.

func (azure) Usage(body []byte) (Usage, bool) { return openAI{}.Usage(body) }

func (azure) StreamUsage() UsageReader { return openAI{}.StreamUsage() }

// ---- Anthropic -----------------------------------------------------------

// Anthropic reports a message's usage in its top-level "usage" object:
// input_tokens (cached tokens left out), output_tokens,
// cache_read_input_tokens and cache_creation_input_tokens. A stream
// carries it in message_start's message.usage, then in message_delta's
// usage (mergeDelta). A stream cut before message_delta keeps the output
// count of message_start.

func (anthropic) Usage(body []byte) (Usage, bool) { return objectUsage(body) }

func (anthropic) StreamUsage() UsageReader { return newSSEUsage(messagesEvent) }

// mergeDelta applies the usage of an Anthropic message_delta to what r
// read: output_tokens, which is cumulative, replaces the earlier count when
// present; the other counts replace earlier ones when non-zero.
func mergeDelta(r *sseUsage, w *usageWire) {
	d := w.usage()
	if w.OutputTokens != nil || w.CompletionTokens != 0 {
		r.u.Output = d.Output
	}
	if d.Input != 0 {
		r.u.Input = d.Input
	}
	if d.CacheRead != 0 {
		r.u.CacheRead = d.CacheRead
		r.u.CacheReadInInput = d.CacheReadInInput
	}
	if d.CacheWrite != 0 {
		r.u.CacheWrite = d.CacheWrite
	}
	r.ok = true
}

// ---- Gemini --------------------------------------------------------------

// Google's Gemini API reports usage in a top-level "usageMetadata" object,
// in whole answers and in every stream chunk, cumulatively: the last
// chunk's counts are the answer's.
//
//	promptTokenCount         the prompt, cached tokens included → Input
//	cachedContentTokenCount  the part of the prompt read from the cache → CacheRead
//	candidatesTokenCount     the answer → Output
//	thoughtsTokenCount       the model's thinking, billed as output → Output
//	toolUsePromptTokenCount  tool-use prompt tokens, billed as input → Input

func (gemini) Usage(body []byte) (Usage, bool) { return geminiUsage(body) }

func (gemini) StreamUsage() UsageReader { return newSSEUsage(geminiEvent) }

// geminiEvent reads the usageMetadata of a Gemini stream chunk: the last
// one wins, each being cumulative.
func geminiEvent(r *sseUsage, e sse.Event) {
	if u, ok := geminiUsage(e.Data); ok {
		r.set(u)
	}
}

// usageMetadataKey is searched for before a body is decoded.
var usageMetadataKey = []byte(`"usageMetadata"`)

// geminiUsageWire is Gemini's usageMetadata, counts decoded as numbers of
// any form and clamped by tokenCount.
type geminiUsageWire struct {
	Prompt     float64 `json:"promptTokenCount"`
	Candidates float64 `json:"candidatesTokenCount"`
	Thoughts   float64 `json:"thoughtsTokenCount"`
	Cached     float64 `json:"cachedContentTokenCount"`
	ToolPrompt float64 `json:"toolUsePromptTokenCount"`
}

func (w *geminiUsageWire) usage() Usage {
	return Usage{
		Input:            addCounts(tokenCount(w.Prompt), tokenCount(w.ToolPrompt)),
		Output:           addCounts(tokenCount(w.Candidates), tokenCount(w.Thoughts)),
		CacheRead:        tokenCount(w.Cached),
		CacheReadInInput: true, // promptTokenCount includes the cached tokens
	}
}

// geminiUsage reads the top-level usageMetadata of a Gemini answer or
// stream chunk; ok is false when there is none or b is not a JSON object.
func geminiUsage(b []byte) (u Usage, ok bool) {
	if !bytes.Contains(b, usageMetadataKey) {
		return Usage{}, false
	}
	var v struct {
		UsageMetadata *geminiUsageWire `json:"usageMetadata"`
	}
	if isSyntaxError(json.Unmarshal(b, &v)) || v.UsageMetadata == nil {
		return Usage{}, false
	}
	return v.UsageMetadata.usage(), true
}
