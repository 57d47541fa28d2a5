package fake

import "cmp"

// anthropic is the Anthropic messages dialect.
type anthropic struct{}

// anthropicTypes are the error types Anthropic gives per status; other
// statuses give invalid_request_error (4xx) or api_error (5xx).
var anthropicTypes = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	402: "billing_error",
	403: "permission_error",
	404: "not_found_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	504: "timeout_error",
	529: "overloaded_error",
}

// anthropicMessages are the messages that go with a type or a step's Error.
var anthropicMessages = map[string]string{
	"invalid_request_error": "Invalid request.",
	"authentication_error":  "invalid x-api-key",
	"billing_error":         "Your credit balance is too low to access the Anthropic API.",
	"permission_error":      "Your API key does not have permission to use the specified resource.",
	"not_found_error":       "Not found",
	"request_too_large":     "Request exceeds the maximum allowed number of bytes.",
	"rate_limit_error":      "Number of requests has exceeded your rate limit. Please try again later.",
	"api_error":             "Internal server error",
	"timeout_error":         "Request timed out",
	"overloaded_error":      "Overloaded",
	"insufficient_quota": "Your credit balance is too low to access the Anthropic API. " +
		"Please go to Plans & Billing to upgrade or purchase credits. (insufficient_quota)",
	"context_length_exceeded": "prompt is too long: 210000 tokens > 200000 maximum",
	"content_policy":          "Output blocked by content filtering policy",
}

// anthropicError returns the type and message Anthropic gives for a status
// and a step's Error.
func anthropicError(status int, kind string) (typ, message string) {
	typ, ok := anthropicTypes[status]
	switch {
	case ok:
	case status < 500:
		typ = "invalid_request_error"
	default:
		typ = "api_error"
	}
	if m, ok := anthropicMessages[kind]; ok {
		return typ, m
	}
	return typ, anthropicMessages[typ]
}

func (anthropic) idHeader() string     { return "request-id" }
func (anthropic) defaultModel() string { return "claude-haiku-4-5" }

// anthropicErr is Anthropic's error body, in its field order.
type anthropicErr struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id,omitempty"`
}

func newAnthropicErr(typ, message, requestID string) anthropicErr {
	e := anthropicErr{Type: "error", RequestID: requestID}
	e.Error.Type, e.Error.Message = typ, message
	return e
}

func (anthropic) errorBody(status int, kind, message, requestID string) []byte {
	typ, msg := anthropicError(status, kind)
	return marshal(newAnthropicErr(typ, cmp.Or(message, msg), requestID))
}

func (r reply) message(content []any, stop any, output int) map[string]any {
	return map[string]any{
		"id": "msg_" + r.id, "type": "message", "role": "assistant", "model": r.model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": r.prompt, "output_tokens": output},
	}
}

func (anthropic) answer(r reply) []byte {
	text := map[string]any{"type": "text", "text": r.text()}
	return marshal(r.message([]any{text}, "end_turn", len(r.chunks)))
}

func (anthropic) events(r reply) []event {
	evs := []event{
		named("message_start", map[string]any{"type": "message_start", "message": r.message([]any{}, nil, 1)}),
		named("content_block_start", map[string]any{
			"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""},
		}),
	}
	for _, c := range r.chunks {
		evs = append(evs, named("content_block_delta", map[string]any{
			"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": c},
		}))
	}
	return append(evs,
		named("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}),
		named("message_delta", map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]int{"output_tokens": len(r.chunks)},
		}),
		named("message_stop", map[string]any{"type": "message_stop"}),
	)
}

func (anthropic) failEvent(reply, int) event {
	return named("error", newAnthropicErr("overloaded_error", "Overloaded", ""))
}

// overloadedStatus is Anthropic's 529, whose body is overloaded_error.
func (anthropic) overloadedStatus() int { return 529 }
