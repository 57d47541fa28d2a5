package dialect

import (
	"cmp"
	"net/http"
	"strings"

	"github.com/sluice-llm/sluice/internal/request"
)

// OpenAI is the OpenAI API and every server that speaks it (vLLM, Ollama,
// OpenRouter, LiteLLM, …): the model in the body, a stream asked for by
// "stream": true and framed as server-sent events ending in data: [DONE]
// (the Responses API's in response.completed), errors as {"error":
// {"type","code"}}, the key as a bearer token.
var OpenAI Dialect = openAI{}

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
	if err != nil {
		r.Model, r.BadModel = "", err
	}
	return r
}

// bodyRetarget puts model in the body's "model".
func bodyRetarget(path string, body []byte, model string) (string, []byte, bool) {
	b, ok := request.WithModel(body, model)
	return path, b, ok
}
