package dialecttest

import (
	"strconv"
	"strings"

	"github.com/sluice-llm/sluice/fake"
)

// Azure is Azure OpenAI: OpenAI's bodies and streams, the deployment (the
// model) in the path, the api-version in the query, the key in api-key, and
// a used-up quota's 429 in Azure's own words.
var Azure = Speaker{
	Kind:     "azure",
	Model:    "gpt4o-prod",
	Fallback: "gpt4o-backup",
	Call: func(model string, stream bool) Call {
		return Call{Path: azureDeployments + model + "/chat/completions?api-version=2024-10-21",
			Body: `{"max_tokens":` + strconv.Itoa(MaxTokens) + streamField(stream) +
				`,"messages":[{"role":"user","content":"hi"}]}`}
	},
	KeyHeader: "Api-Key",
	Scripts: Scripts{
		Retryable:       "503",
		Invalid:         "400",
		Quota:           "429:insufficient_quota",
		Cut:             "stream:cut-after=3", // the role chunk, then two pieces
		Stall:           "stream:stall-after=3",
		FirstEventError: "overloaded",
	},
	InvalidType: "invalid_request_error",
	Answer:      openAIAnswer,
	Stream:      openAIStream,
	Error:       openAIError,
	Quota: func(body []byte) bool {
		e, err := openAIError(body)
		return err == nil && strings.HasPrefix(e.Message, "Out of call volume quota")
	},
	ModelOf: func(r fake.Request) string {
		rest, ok := strings.CutPrefix(r.Path, azureDeployments)
		dep, _, _ := strings.Cut(rest, "/")
		if !ok {
			return ""
		}
		return dep
	},
}

// azureDeployments is the path under which Azure OpenAI names the
// deployment.
const azureDeployments = "/openai/deployments/"
