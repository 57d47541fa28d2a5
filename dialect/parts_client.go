package dialect

import "net/http"

// The gateway's side of each dialect: its traits, and the Client that
// reads a client's key, sets the provider's, and shapes the gateway's own
// errors. (To be folded into the dialect files; what they share is in
// client.go.)

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

// AsksUsage: every OpenAI-compatible server takes stream_options.
func (openAIClient) AsksUsage(r *http.Request) bool { return true }

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

// Azure OpenAI: OpenAI's shapes, the key in api-key, stream_options taken
// from api-version 2024-07-01-preview on.

func (azure) Traits() Traits { return Traits{System: "azure.ai.openai", KeyHeader: "Api-Key"} }

func (azure) Client() Client { return azureClient{} }

type azureClient struct{}

func (azureClient) Key(r *http.Request) string         { return clientKey(r, "Api-Key") }
func (azureClient) SetKey(r *http.Request, key string) { setKey(r, "Api-Key", key) }

func (azureClient) Error(h http.Header, status int, code, message string) []byte {
	jsonError(h)
	return openAIErrorBody(code, message)
}

func (azureClient) ErrorEvent(code, message string) []byte {
	return dataEvent("", openAIErrorBody(code, message))
}

// azureUsageVersion is the first dated api-version that takes
// stream_options.
const azureUsageVersion = "2024-07-01"

// AsksUsage: Azure takes stream_options from api-version
// 2024-07-01-preview on (an older one refuses the field with a 400), and
// on its v1 API, which takes no dated api-version (none, preview,
// latest).
func (azureClient) AsksUsage(r *http.Request) bool {
	v := r.URL.Query().Get("api-version")
	if v == "" || v == "preview" || v == "latest" {
		return true
	}
	return len(v) >= len(azureUsageVersion) && v[:len(azureUsageVersion)] >= azureUsageVersion
}

// Gemini: the key in x-goog-api-key or the query (?key=), errors as a
// google.rpc status whose ErrorInfo reason is the gateway's code, a
// stream's error as a data event holding one, with an HTTP status for
// its code, which Google's SDKs raise.

func (gemini) Traits() Traits {
	return Traits{System: "gcp.gemini", KeyHeader: "X-Goog-Api-Key", StrictEnd: true}
}

func (gemini) Client() Client { return geminiClient{} }

type geminiClient struct{}

func (geminiClient) Key(r *http.Request) string {
	if k := clientKey(r, "X-Goog-Api-Key"); k != "" {
		return k
	}
	return queryKey(r.URL) // Google's SDKs may send ?key=
}

func (geminiClient) SetKey(r *http.Request, key string) { setKey(r, "X-Goog-Api-Key", key) }

func (geminiClient) Error(h http.Header, status int, code, message string) []byte {
	jsonError(h)
	return googleErrorBody(status, code, message)
}

func (geminiClient) ErrorEvent(code, message string) []byte {
	return dataEvent("", googleErrorBody(googleStreamStatus(code), code, message))
}

// AsksUsage: Gemini's chunks carry usageMetadata unasked; its API knows
// no stream_options.
func (geminiClient) AsksUsage(r *http.Request) bool { return false }
