package gateway

import (
	"net/url"

	"github.com/sluice-llm/sluice/internal/config"
)

// This file holds what the gateway does for Azure OpenAI (kind azure).
//
// Azure takes two URL styles, both forwarded as they come, the api-version
// query parameter kept:
//
//	/openai/deployments/{deployment}/chat/completions?api-version=…
//	    (also /completions, /embeddings, /responses, … under a deployment):
//	    the deployment is the call's model (the engine reads it from the
//	    path);
//	/openai/v1/chat/completions, /openai/v1/responses: the model is in the
//	    body, as for OpenAI.
//
// The key goes in the api-key header (provider.setKey).

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
