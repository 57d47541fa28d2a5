package sluice

import (
	"net/http"

	"github.com/sluice-llm/sluice/internal/request"
)

// Gemini (/v1beta/models/{model}:generateContent) and Azure OpenAI
// (/openai/deployments/{deployment}/chat/completions) name the model in
// the URL path. There it is the model the provider serves, whatever the
// body says: it names the call's breaker, log lines, budget and limits,
// and a fallback's Model goes into the path, the body sent as it came.

// pathModel returns the model the URL path p names, or "" when it names
// none or names one that fails request.CheckModel (a client's raw,
// invalid name never names a breaker or reaches a log).
func pathModel(p string) string {
	m := request.ModelInPath(p)
	if m == "" || request.CheckModel(m) != nil {
		return ""
	}
	return m
}

// withPathModel replaces the model r's URL path names by model, and
// reports true; false when the path names none. r is a copy the call
// owns; its URL is copied before it changes.
func withPathModel(r *http.Request, model string) bool {
	p, ok := request.WithModelInPath(r.URL.Path, model)
	if !ok {
		return false
	}
	u := *r.URL
	u.Path, u.RawPath = p, ""
	r.URL = &u
	return true
}
