package fake

import (
	"encoding/json"
	"net/http"
)

// openAI is the OpenAI chat completions dialect.
type openAI struct{}

// apiError is an OpenAI error object.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func ptr(s string) *string { return &s }

// openAIErrors are the errors OpenAI gives for a status or a step's Error.
var openAIErrors = map[any]apiError{
	"insufficient_quota": {Message: "You exceeded your current quota, please check your plan and billing details.",
		Type: "insufficient_quota", Code: ptr("insufficient_quota")},
	"context_length_exceeded": {Message: "This model's maximum context length is 128000 tokens. However, " +
		"your messages resulted in 200000 tokens. Please reduce the length of the messages.",
		Type: "invalid_request_error", Param: ptr("messages"), Code: ptr("context_length_exceeded")},
	"content_policy": {Message: "Your request was rejected as a result of our safety system.",
		Type: "invalid_request_error", Code: ptr("content_policy_violation")},
	400: {Message: "Invalid request.", Type: "invalid_request_error"},
	401: {Message: "Incorrect API key provided.", Type: "invalid_request_error", Code: ptr("invalid_api_key")},
	403: {Message: "You are not allowed to access this resource.", Type: "invalid_request_error"},
	404: {Message: "The model does not exist or you do not have access to it.",
		Type: "invalid_request_error", Code: ptr("model_not_found")},
	429: {Message: "Rate limit reached for requests. Please try again later.",
		Type: "requests", Code: ptr("rate_limit_exceeded")},
	500: {Message: "The server had an error while processing your request. Sorry about that!", Type: "server_error"},
	503: {Message: "The engine is currently overloaded, please try again later.", Type: "server_error"},
	529: {Message: "The server is overloaded, please try again later.", Type: "server_error", Code: ptr("overloaded")},
}

// openAIError returns the error OpenAI gives for a status and a step's Error.
func openAIError(status int, kind string) apiError {
	if e, ok := openAIErrors[kind]; ok {
		return e
	}
	if e, ok := openAIErrors[status]; ok {
		return e
	}
	if status < 500 {
		return openAIErrors[400]
	}
	return openAIErrors[500]
}

func (openAI) idHeader() string     { return "x-request-id" }
func (openAI) defaultModel() string { return "gpt-4o-mini" }

func (openAI) errorBody(status int, kind, message, _ string) []byte {
	e := openAIError(status, kind)
	if message != "" {
		e.Message = message
	}
	return marshal(map[string]any{"error": e})
}

// chatCompletion is a chat.completion or a chat.completion.chunk.
type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int       `json:"index"`
	Message      any       `json:"message,omitempty"`
	Delta        any       `json:"delta,omitempty"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (r reply) chatUsage() *chatUsage {
	return &chatUsage{r.prompt, len(r.chunks), r.prompt + len(r.chunks)}
}

func (r reply) chat(object string, choices ...chatChoice) chatCompletion {
	if choices == nil {
		choices = []chatChoice{}
	}
	return chatCompletion{ID: "chatcmpl-" + r.id, Object: object, Created: r.created, Model: r.model, Choices: choices}
}

func (openAI) answer(r reply) []byte {
	c := r.chat("chat.completion", chatChoice{
		Message:      map[string]any{"role": "assistant", "content": r.text(), "refusal": nil},
		FinishReason: ptr("stop"),
	})
	c.Usage = r.chatUsage()
	return marshal(c)
}

func (openAI) events(r reply) []event {
	chunk := func(delta map[string]any, finish *string) event {
		return event{data: marshal(r.chat("chat.completion.chunk",
			chatChoice{Delta: delta, FinishReason: finish}))}
	}
	evs := []event{chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)}
	for _, c := range r.chunks {
		evs = append(evs, chunk(map[string]any{"content": c}, nil))
	}
	evs = append(evs, chunk(map[string]any{}, ptr("stop")))
	if r.usage {
		u := r.chat("chat.completion.chunk")
		u.Usage = r.chatUsage()
		evs = append(evs, event{data: marshal(u)})
	}
	return append(evs, event{data: []byte("[DONE]")})
}

func (openAI) failEvent(reply, int) event {
	return event{data: marshal(map[string]any{"error": openAIError(529, "")})}
}

// named returns an event with a name and v as its JSON data.
func named(name string, v any) event { return event{name: name, data: marshal(v)} }

// marshal encodes v, which is built of maps, slices, strings, numbers and
// plain structs only, so that encoding cannot fail.
func marshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// overloadedStatus is the 503 OpenAI answers when its engine is
// overloaded ("The engine is currently overloaded, please try again
// later.").
func (openAI) overloadedStatus() int { return http.StatusServiceUnavailable }
