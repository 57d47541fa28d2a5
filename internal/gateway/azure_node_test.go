package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/nodetest"
)

// TestAzureNodeSDK runs the official OpenAI Node SDK's AzureOpenAI client
// (pinned in fake/testdata/node) against the gateway's azure route, the
// fake behind it: a call whose model the SDK puts in the path as the
// deployment, and a stream through a client bound to a deployment. The
// first attempt of each fails (503, then a stream stalled before its
// first event) and is retried invisibly. It skips when node or the
// installed SDK is missing.
func TestAzureNodeSDK(t *testing.T) {
	e := newAzureEnv(t, "503,200,stream:stall-after=0,200", nil)

	out := nodetest.Run(t, "testdata/azure-node", "azure.mjs", "../../fake/testdata/node/node_modules/openai/package.json",
		"npm ci --prefix fake/testdata/node",
		"AZURE_ENDPOINT="+e.srv.URL+"/azure",
		"AZURE_OPENAI_API_KEY=", "OPENAI_BASE_URL=", "OPENAI_API_VERSION=", "AZURE_OPENAI_ENDPOINT=")
	var got struct {
		Chat struct {
			Text             string
			CompletionTokens int
		}
		Stream struct {
			Text   string
			Chunks int
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", string(out), err)
	}
	if got.Chat.Text != fakeAnswer || got.Chat.CompletionTokens != 5 {
		t.Errorf("chat: %+v", got.Chat)
	}
	if got.Stream.Text != fakeAnswer || got.Stream.Chunks != 8 {
		t.Errorf("stream: %+v, want Azure's prompt filter results, then the answer in 7 chunks", got.Stream)
	}
	reqs := e.up.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d upstream calls, want 4", len(reqs))
	}
	for i, dep := range []string{"gpt4o-prod", "gpt4o-prod", "gpt4o-mini-prod", "gpt4o-mini-prod"} {
		r := reqs[i]
		if want := "/openai/deployments/" + dep + "/chat/completions"; r.Path != want {
			t.Errorf("call %d: path %s, want %s", i+1, r.Path, want)
		}
		if r.Header.Get("Api-Key") != "sk-injected-1234" || strings.Contains(strings.Join(r.Header.Values("Api-Key"), ""), "az-sdk-key") {
			t.Errorf("call %d: api-key %q, want the injected key alone", i+1, r.Header.Get("Api-Key"))
		}
	}
	models := map[any]int{}
	for _, l := range e.logLines() {
		models[l["model"]]++
	}
	if models["gpt4o-prod"] != 2 || models["gpt4o-mini-prod"] != 2 {
		t.Errorf("log models %v, want 2 lines for each deployment", models)
	}
}
