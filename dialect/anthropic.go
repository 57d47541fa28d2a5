package dialect

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Anthropic is Anthropic's Messages API: the model in the body, a stream
// asked for by "stream": true and framed as named server-sent events
// ending in message_stop, errors as {"type":"error","error":{"type":
// "overloaded_error"}} (an "event: error" in a stream), the key in
// x-api-key.
var Anthropic Dialect = anthropic{}

type anthropic struct{}

func (anthropic) Kind() string { return "anthropic" }

// owns claims the Messages API's path, for a caller that names no
// dialect.
func (anthropic) owns(p string) bool { return strings.HasSuffix(p, "/messages") }

// address: Anthropic's API has one address, not one per region.
func (anthropic) address(string) (string, bool) { return "", false }

func (anthropic) Request(path string, body []byte) Request { return bodyRequest(path, body) }

func (anthropic) Retarget(path string, body []byte, model string) (string, []byte, bool) {
	return bodyRetarget(path, body, model)
}

func (anthropic) Judge(status int, h http.Header, body []byte) Judgment { return Judgment{} }

func (anthropic) Stream(h http.Header) Stream { return newSSEStream(h, classifyEvent) }

// Usage.

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

// Rate limits.

// anthropicWindows are Anthropic's rate-limit headers: requests, tokens,
// input tokens and output tokens, each with what is left
// (anthropic-ratelimit-*-remaining), when it is full again (-reset: an
// RFC 3339 time) and its size (-limit).
var anthropicWindows = []headerWindow{
	{true, "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Requests-Limit"},
	{false, "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset", "Anthropic-Ratelimit-Tokens-Limit"},
	{false, "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset", "Anthropic-Ratelimit-Input-Tokens-Limit"},
	{false, "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset", "Anthropic-Ratelimit-Output-Tokens-Limit"},
}

// Windows reads Anthropic's anthropic-ratelimit- headers, the reset an
// RFC 3339 time.
func (anthropic) Windows(h http.Header, now time.Time, fn func(Window)) {
	readWindows(h, now, anthropicWindows, timeReset, fn)
}

// The gateway's side.

// Anthropic: the key in x-api-key, errors as {"type":"error","error":{…}},
// a stream's error as an "event: error".

func (anthropic) Traits() Traits {
	return Traits{System: "anthropic", KeyHeader: "X-Api-Key", SettlesUnused: true}
}

func (anthropic) Client() Client { return anthropicClient{} }

type anthropicClient struct{}

func (anthropicClient) Key(r *http.Request) string         { return clientKey(r, "X-Api-Key") }
func (anthropicClient) SetKey(r *http.Request, key string) { setKey(r, "X-Api-Key", key) }

func (anthropicClient) Error(h http.Header, status int, code, message string) []byte {
	jsonError(h)
	return anthropicErrorBody(code, message)
}

func (anthropicClient) ErrorEvent(code, message string) []byte {
	return dataEvent("error", anthropicErrorBody(code, message))
}

// AsksUsage: Anthropic's streams report usage unasked, and its API
// refuses stream_options.
func (anthropicClient) AsksUsage(r *http.Request) bool { return false }

// EscapedModel finds none: no path of this dialect holds an escaped "/".
func (anthropicClient) EscapedModel(p string) (start, end int) { return -1, -1 }

// anthropicErrorBody is a gateway error in Anthropic's shape:
// {"type":"error","error":{"type":code,"message":…}}.
func anthropicErrorBody(code, message string) []byte {
	msg, _ := json.Marshal(message)
	b := make([]byte, 0, len(msg)+len(code)+64)
	b = append(b, `{"type":"error","error":{"type":"`...)
	b = append(b, code...)
	b = append(b, `","message":`...)
	b = append(b, msg...)
	return append(b, "}}"...)
}
