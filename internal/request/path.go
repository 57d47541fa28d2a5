package request

import "strings"

// Two APIs name the model in the URL path rather than in the body:
// Google's Gemini (/v1beta/models/{model}:generateContent, GeminiPath)
// and Azure OpenAI's deployments (/openai/deployments/{deployment}/chat/
// completions, the deployment standing for the model). Where a path names
// the model, that is the model the provider serves, whatever the body
// says.

// ModelInPath returns the model the URL path p names, for the APIs that
// name it there; "" when p names none. The model is returned as written:
// check it with CheckModel before it names anything.
func ModelInPath(p string) string {
	if m, _ := GeminiPath(p); m != "" {
		return m
	}
	m, _, _ := azureDeployment(p)
	return m
}

// WithModelInPath returns the URL path p with the model it names replaced
// by model, and true; p itself and false when p names none (ModelInPath).
func WithModelInPath(p, model string) (string, bool) {
	if q, ok := withGeminiModel(p, model); ok {
		return q, true
	}
	if _, start, end := azureDeployment(p); start >= 0 {
		return p[:start] + model + p[end:], true
	}
	return p, false
}

// azureDeployments is the part of a path under which Azure OpenAI names
// the deployment.
const azureDeployments = "/openai/deployments/"

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
