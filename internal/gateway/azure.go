package gateway

import (
	"net/url"
	"strings"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/request"
)

// This file holds what the gateway does for Azure OpenAI (kind azure), and
// the seam through which a dialect that names the model in the URL path
// gives the call its model.
//
// Azure takes two URL styles, both forwarded as they come, the api-version
// query parameter kept:
//
//	/openai/deployments/{deployment}/chat/completions?api-version=…
//	    (also /completions, /embeddings, /responses, … under a deployment):
//	    the deployment is the call's model;
//	/openai/v1/chat/completions, /openai/v1/responses: the model is in the
//	    body, as for OpenAI.
//
// The key goes in the api-key header (provider.setKey).

// azureDeployments is the path prefix under which Azure names the
// deployment.
const azureDeployments = "/openai/deployments/"

// callModel returns the model a call names and whether it named it in its
// path, rest being the path below the route's prefix: the path's model
// where the dialect puts it there (pathModel), else the body's "model".
// The engine is given it as sluice.Body's Model and ModelInPath, so that
// breaker names, the attempt log, budgets, rate limits and fallbacks all
// use it.
func callModel(kind, rest string, f request.Fields) (model string, inPath bool) {
	if m := pathModel(kind, rest); m != "" {
		return m, true
	}
	return f.Model, false
}

// pathModel returns the model named in rest, the path below the route's
// prefix, for a dialect that puts it there; "" when it names none. Azure:
// the deployment of /openai/deployments/{deployment}/….
func pathModel(kind, rest string) string {
	switch kind {
	case config.KindAzure:
		m, _, _ := azureDeployment(rest)
		return m
	}
	return ""
}

// withPathModel returns rest, the path below the route's prefix, with the
// model it names replaced by model; ok is false when it names none, and
// rest is then returned as it is.
func withPathModel(kind, rest, model string) (string, bool) {
	switch kind {
	case config.KindAzure:
		if _, start, end := azureDeployment(rest); start >= 0 {
			return rest[:start] + model + rest[end:], true
		}
	}
	return rest, false
}

// azureDeployment returns the deployment named in an Azure path and its
// bounds; start is -1 when the path names none: it must be
// /openai/deployments/{deployment}/{operation…}, the deployment a valid
// model name.
func azureDeployment(p string) (name string, start, end int) {
	rest, ok := strings.CutPrefix(p, azureDeployments)
	if !ok {
		return "", -1, -1
	}
	i := strings.IndexByte(rest, '/')
	if i <= 0 || request.CheckModel(rest[:i]) != nil {
		return "", -1, -1
	}
	start = len(azureDeployments)
	return rest[:i], start, start + i
}

// streamUsageOK reports whether the provider accepts stream_options in a
// streamed chat completion, so that the gateway may ask for the usage
// chunk: OpenAI-compatible servers do; Azure does from api-version
// 2024-07-01-preview on (an older one refuses the field with a 400), and
// on its v1 API, which takes no dated api-version.
func streamUsageOK(kind string, query url.Values) bool {
	switch kind {
	case config.KindOpenAI:
		return true
	case config.KindAzure:
		v := query.Get("api-version")
		if v == "" || v == "preview" || v == "latest" {
			return true
		}
		return len(v) >= len("2024-07-01") && v[:len("2024-07-01")] >= "2024-07-01"
	}
	return false
}
