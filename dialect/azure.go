package dialect

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/internal/request"
)

// Azure is Azure OpenAI: OpenAI's API under two URL styles, both
// forwarded as they come, the api-version query parameter kept:
//
//	/openai/deployments/{deployment}/chat/completions?api-version=…
//	    (also /completions, /embeddings, /responses, … under a deployment):
//	    the deployment is the call's model, whatever the body says;
//	/openai/v1/chat/completions, /openai/v1/responses: the model is in the
//	    body, as for OpenAI.
//
// A 429 says a quota is used up in its own words (quotaWordings); the key
// goes in the api-key header.
var Azure Dialect = azure{}

type azure struct{}

func (azure) Kind() string { return "azure" }

// azureDeployments is the part of a path under which Azure OpenAI names
// the deployment.
const azureDeployments = "/openai/deployments/"

// azureV1 is the prefix of Azure OpenAI's v1 API paths.
const azureV1 = "/openai/v1/"

func (azure) owns(p string) bool {
	return strings.Contains(p, azureDeployments) || strings.HasPrefix(p, azureV1)
}

// address: an Azure OpenAI resource has an address of its own.
func (azure) address(string) (string, bool) { return "", false }

// azureDeployment returns the deployment an Azure OpenAI path names and
// where it lies in p: /openai/deployments/{deployment}/{operation…},
// after any base path (an API gateway in front of Azure); "", -1, -1 when
// p names none.
func azureDeployment(p string) (name string, start, end int) {
	i := strings.Index(p, azureDeployments)
	if i < 0 {
		return "", -1, -1
	}
	start = i + len(azureDeployments)
	n := strings.IndexByte(p[start:], '/')
	if n <= 0 {
		return "", -1, -1
	}
	return p[start : start+n], start, start + n
}

func (azure) Request(path string, body []byte) Request {
	r := bodyRequest(path, body)
	if m, _, _ := azureDeployment(path); m != "" {
		r.Model, r.BadModel = m, request.CheckModel(m)
		if r.BadModel != nil {
			r.Model = ""
		}
	}
	return r
}

func (azure) Retarget(path string, body []byte, model string) (string, []byte, bool) {
	if _, start, end := azureDeployment(path); start >= 0 {
		return path[:start] + model + path[end:], body, true
	}
	return bodyRetarget(path, body, model)
}

// quotaWordings are Azure OpenAI's ways of saying, in a 429, that a quota
// is used up ("Out of call volume quota", "… exceeded call volume quota",
// "Quota exceeded"), in lower case. Its rate limit's 429 is not one:
// "Requests to the … have exceeded token rate limit of your current …
// tier. Please retry after N seconds" (whose link to
// aka.ms/oai/quotaincrease names no used-up quota).
var quotaWordings = []string{"call volume quota", "quota exceeded"}

func (azure) Judge(status int, h http.Header, body []byte) Judgment {
	if status != http.StatusTooManyRequests || !bytes.Contains(body, []byte("uota")) { // Quota, quota: the cheap test first
		return Judgment{}
	}
	lower := bytes.ToLower(body)
	for _, w := range quotaWordings {
		if bytes.Contains(lower, []byte(w)) {
			return Judgment{Quota: true}
		}
	}
	return Judgment{}
}

func (azure) Stream(h http.Header) Stream { return newSSEStream(h, classifyEvent) }

// Usage.

// Azure OpenAI reports usage as OpenAI does.

func (azure) Usage(body []byte) (Usage, bool) { return openAI{}.Usage(body) }

func (azure) StreamUsage() UsageReader { return openAI{}.StreamUsage() }

// Rate limits.

// Windows reads Azure OpenAI's headers: OpenAI's x-ratelimit- headers,
// the reset in bare seconds ("6", "0.5") or as a Go duration, and -1 for a
// window it does not count (Left -1, Size 0).
func (azure) Windows(h http.Header, now time.Time, fn func(Window)) {
	readWindows(h, now, openAIWindows, durationReset, fn)
}

// The gateway's side.

// Azure OpenAI: OpenAI's shapes, the key in api-key, stream_options taken
// from api-version 2024-07-01-preview on.

func (azure) Traits() Traits { return Traits{System: "azure.ai.openai", KeyHeader: "Api-Key"} }

func (azure) Client() Client { return azureClient{} }

// azureClient is OpenAI's, its errors and stream error events OpenAI's,
// but for the key's header and the stream-usage ask.
type azureClient struct{ openAIClient }

func (azureClient) Key(r *http.Request) string         { return clientKey(r, "Api-Key") }
func (azureClient) SetKey(r *http.Request, key string) { setKey(r, "Api-Key", key) }

// azureUsageVersion is the first dated api-version that takes
// stream_options.
const azureUsageVersion = "2024-07-01"

// AsksUsage: Azure takes stream_options in a chat completion from
// api-version 2024-07-01-preview on (an older one refuses the field with a
// 400), and on its v1 API, which takes no dated api-version (none,
// preview, latest).
func (azureClient) AsksUsage(r *http.Request) bool {
	if !isChat(r) {
		return false
	}
	v := r.URL.Query().Get("api-version")
	if v == "" || v == "preview" || v == "latest" {
		return true
	}
	return len(v) >= len(azureUsageVersion) && v[:len(azureUsageVersion)] >= azureUsageVersion
}

// EscapedModel finds none: no path of this dialect holds an escaped "/".
func (azureClient) EscapedModel(p string) (start, end int) { return -1, -1 }
