package fake

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// azure is Azure OpenAI: OpenAI's chat completions or Responses API
// answers, with Azure's 429s. A rate limit's 429 says, in Azure's words,
// "Requests to the … Operation under Azure OpenAI API version … have
// exceeded token rate limit of your current OpenAI S0 pricing tier.
// Please retry after N seconds. …" with code "429", and carries both
// retry-after-ms and Retry-After; a quota's 429 (the insufficient_quota
// error) says "Out of call volume quota …", a wording that names no code
// OpenAI uses.
type azure struct {
	dialect
	operation string // as Azure names it in its 429s: ChatCompletions_Create, …
	version   string // the request's api-version, "" for the v1 API
}

// azureDefaultWait is the wait a 429 asks for when its step gives none.
const azureDefaultWait = time.Second

// azureDialectFor returns the Azure dialect of a request, or nil: a path
// under /openai/deployments/{deployment}/ (chat/completions, responses),
// or under /openai/v1/ when the request says it is for Azure (an
// api-version query parameter or an api-key header), which keeps the fake's
// plain OpenAI answers for an OpenAI base URL that happens to end in
// /openai/v1.
func azureDialectFor(r *http.Request) dialect {
	p := r.URL.Path
	i := strings.Index(p, "/openai/")
	if i < 0 {
		return nil
	}
	rest := p[i+len("/openai/"):]
	switch {
	case strings.HasPrefix(rest, "deployments/"):
		dep, op, ok := strings.Cut(rest[len("deployments/"):], "/")
		if !ok || dep == "" {
			return nil
		}
		rest = op
	case strings.HasPrefix(rest, "v1/"):
		if r.URL.Query().Get("api-version") == "" && r.Header.Get("Api-Key") == "" {
			return nil
		}
		rest = rest[len("v1/"):]
	default:
		return nil
	}
	a := azure{version: r.URL.Query().Get("api-version")}
	switch rest {
	case "chat/completions":
		a.dialect, a.operation = openAI{}, "ChatCompletions_Create"
	case "responses":
		a.dialect, a.operation = responses{}, "Responses_Create"
	default:
		return nil
	}
	return a
}

// azurePromptFilter is the first event of Azure OpenAI's chat completion
// streams: no choices, an empty id, model and object, and the prompt's
// content filter results.
const azurePromptFilter = `{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,` +
	`"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},` +
	`"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}}]}`

// leadingEvents begins a chat completion stream with its prompt's filter
// results, as Azure does; a Responses API stream with nothing.
func (a azure) leadingEvents() []event {
	if _, ok := a.dialect.(openAI); !ok {
		return nil
	}
	return []event{{data: []byte(azurePromptFilter)}}
}

// azureError is Azure's error object: a code and a message.
type azureError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// rateMessage is Azure's 429 text for a wait of secs seconds.
func (a azure) rateMessage(secs int) string {
	v := a.version
	if v == "" {
		v = "v1"
	}
	return fmt.Sprintf("Requests to the %s Operation under Azure OpenAI API version %s have exceeded token rate limit "+
		"of your current OpenAI S0 pricing tier. Please retry after %d seconds. Please go here: "+
		"https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.", a.operation, v, secs)
}

// azureQuotaMessage is the text of Azure's quota 429.
const azureQuotaMessage = "Out of call volume quota for this Azure OpenAI resource. Quota will be replenished in 2.00:00:00."

func (a azure) errorBody(status int, kind, message, id string) []byte {
	switch {
	case status == http.StatusTooManyRequests && kind == "insufficient_quota":
		return marshal(map[string]any{"error": azureError{Code: "429", Message: azureQuotaMessage}})
	case status == http.StatusTooManyRequests && kind == "":
		if message == "" {
			message = a.rateMessage(int(azureDefaultWait / time.Second))
		}
		return marshal(map[string]any{"error": azureError{Code: "429", Message: message}})
	}
	return a.dialect.errorBody(status, kind, message, id)
}

// hinted gives a rate-limit 429 its hints: the step's, else a wait of
// azureDefaultWait, always as both retry-after-ms and Retry-After, as
// Azure sends them; it returns the message that names that wait. A quota
// 429 names no wait.
func (a azure) hinted(h http.Header, status int, kind string) string {
	if status != http.StatusTooManyRequests || kind != "" {
		return ""
	}
	wait := azureDefaultWait
	if v, ok := retryAfterOf(h); ok {
		wait = v
	}
	if h.Get("retry-after-ms") == "" {
		h.Set("retry-after-ms", strconv.FormatInt(wait.Milliseconds(), 10))
	}
	if h.Get("Retry-After") == "" {
		h.Set("Retry-After", strconv.Itoa(ceilSeconds(wait)))
	}
	return a.rateMessage(ceilSeconds(wait))
}

// retryAfterOf reads the wait the hints set: retry-after-ms first, then
// Retry-After in seconds.
func retryAfterOf(h http.Header) (time.Duration, bool) {
	if v, err := strconv.Atoi(h.Get("retry-after-ms")); err == nil {
		return time.Duration(v) * time.Millisecond, true
	}
	if v, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
		return time.Duration(v) * time.Second, true
	}
	return 0, false
}

func ceilSeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// limitHeaders sets OpenAI's x-ratelimit- headers as Azure sends them,
// the reset in whole seconds ("6"), and on a refused call retry-after-ms
// beside the Retry-After refuse sets.
func (a azure) limitHeaders(h http.Header, q quota) {
	a.dialect.limitHeaders(h, q)
	reset := strconv.Itoa(ceilSeconds(q.resetAt.Sub(q.now)))
	for _, k := range []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"} {
		if h.Get(k) != "" {
			h.Set(k, reset)
		}
	}
	if !q.admitted {
		h.Set("retry-after-ms", strconv.FormatInt(max(q.wait, time.Millisecond).Milliseconds(), 10))
	}
}

func (a azure) limitError(q quota, _ string) []byte {
	return marshal(map[string]any{"error": azureError{Code: "429", Message: a.rateMessage(q.retryAfter())}})
}
