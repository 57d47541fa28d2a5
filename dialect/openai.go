package dialect

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/internal/request"
)

// OpenAI is the OpenAI API and every server that speaks it (vLLM, Ollama,
// OpenRouter, LiteLLM, …): the model in the body, a stream asked for by
// "stream": true and framed as server-sent events ending in data: [DONE]
// (the Responses API's in response.completed), errors as {"error":
// {"type","code"}}, the key as a bearer token.
var OpenAI Dialect = openAI{}

// owns: OpenAI's paths are shared by the servers that speak its API.
func (openAI) owns(string) bool { return false }

// address: an OpenAI-compatible API is wherever its server is.
func (openAI) address(string) (string, bool) { return "", false }

type openAI struct{}

func (openAI) Kind() string { return "openai" }

func (openAI) Request(path string, body []byte) Request { return bodyRequest(path, body) }

func (openAI) Retarget(path string, body []byte, model string) (string, []byte, bool) {
	return bodyRetarget(path, body, model)
}

func (openAI) Judge(status int, h http.Header, body []byte) Judgment { return Judgment{} }

func (openAI) Stream(h http.Header) Stream { return newSSEStream(h, classifyEvent) }

// modelCallSuffixes end the paths of model calls in the dialects that
// name the model in the body.
var modelCallSuffixes = [...]string{"/chat/completions", "/completions", "/messages", "/responses", "/embeddings"}

// operations are the gen_ai.operation.name of each of
// modelCallSuffixes.
var operations = [len(modelCallSuffixes)]string{"chat", "text_completion", "chat", "chat", "embeddings"}

// modelCall returns the operation of a path that ends as a model call's
// does, "" for any other.
func modelCall(p string) string {
	for i, s := range modelCallSuffixes {
		if strings.HasSuffix(p, s) {
			return operations[i]
		}
	}
	return ""
}

// bodyRequest reads a request that names its model in the body.
func bodyRequest(path string, body []byte) Request {
	f, err := request.Scan(body)
	op := modelCall(path)
	r := Request{Model: f.Model, Stream: f.Stream, StreamOptions: f.StreamOptions, MaxTokens: f.MaxTokens,
		ModelCall: op != "", Operation: cmp.Or(op, "other")}
	switch {
	case errors.Is(err, request.ErrAmbiguous):
		r.Ambiguous = err
	case err != nil:
		r.Model, r.BadModel = "", err
	}
	return r
}

// bodyRetarget puts model in the body's "model".
func bodyRetarget(path string, body []byte, model string) (string, []byte, bool) {
	b, ok := request.WithModel(body, model)
	return path, b, ok
}

// Usage.

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

// Rate limits.

// openAIWindows are OpenAI's rate-limit headers: a window of requests and
// one of tokens, each with what is left (x-ratelimit-remaining-*), when it
// is full again (x-ratelimit-reset-*: a Go duration, "6m0s", "250ms") and
// its size (x-ratelimit-limit-*).
var openAIWindows = []headerWindow{
	{true, "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests", "X-Ratelimit-Limit-Requests"},
	{false, "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens", "X-Ratelimit-Limit-Tokens"},
}

// Windows reads OpenAI's x-ratelimit- headers. A reset in bare seconds is
// read too, as some OpenAI-compatible servers send it.
func (openAI) Windows(h http.Header, now time.Time, fn func(Window)) {
	readWindows(h, now, openAIWindows, durationReset, fn)
}

// The gateway's side.

// OpenAI: the key as a bearer token, errors as {"error":{…}}, a stream's
// error as a data event holding one, which the OpenAI SDKs raise.

func (openAI) Traits() Traits { return Traits{System: "openai", KeyHeader: "Authorization"} }

func (openAI) Client() Client { return openAIClient{} }

type openAIClient struct{}

func (openAIClient) Key(r *http.Request) string         { return clientKey(r, "Authorization") }
func (openAIClient) SetKey(r *http.Request, key string) { setKey(r, "Authorization", key) }

func (openAIClient) Error(h http.Header, status int, code, message string) []byte {
	jsonError(h)
	return openAIErrorBody(code, message)
}

func (openAIClient) ErrorEvent(code, message string) []byte {
	return dataEvent("", openAIErrorBody(code, message))
}

// AsksUsage: every OpenAI-compatible server takes stream_options in a
// chat completion.
func (openAIClient) AsksUsage(r *http.Request) bool { return isChat(r) }

// EscapedModel finds none: no path of this dialect holds an escaped "/".
func (openAIClient) EscapedModel(p string) (start, end int) { return -1, -1 }

// isChat reports whether r is a chat completion, the call whose stream
// takes stream_options.
func isChat(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/chat/completions") }

// openAIErrorBody is a gateway error in OpenAI's shape:
// {"error":{"message":…,"type":code,"code":code,"param":null}}.
func openAIErrorBody(code, message string) []byte {
	msg, _ := json.Marshal(message) // a string always marshals
	b := make([]byte, 0, len(msg)+2*len(code)+64)
	b = append(b, `{"error":{"message":`...)
	b = append(b, msg...)
	b = append(b, `,"type":"`...)
	b = append(b, code...)
	b = append(b, `","code":"`...)
	b = append(b, code...)
	return append(b, `","param":null}}`...)
}
