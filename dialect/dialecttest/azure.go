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
	KeyHeader:   "Api-Key",
	Scripts:     azureScripts(), // the fake answers Azure as OpenAI, in Azure's words
	InvalidType: OpenAI.InvalidType,
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

// azureScripts are OpenAI's, but for a stream cut or stalled after its
// two pieces: Azure's streams begin with the prompt's filter results, an
// event before OpenAI's role chunk.
func azureScripts() Scripts {
	s := OpenAI.Scripts
	s.Cut, s.Stall = "stream:cut-after=4", "stream:stall-after=4"
	return s
}
