package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/config"

	"github.com/sluice-llm/sluice/internal/nodetest"
)

// genaiDir holds the Node script that drives Google's @google/genai SDK,
// with its package.json and package-lock.json; "npm ci --prefix" it (as
// .ci/run does) to install the pinned SDK.
const genaiDir = "testdata/genai"

// TestGoogleGenAINodeSDK runs Google's @google/genai Node SDK against the
// gateway with the fake provider behind it: a plain call, a stream, and a
// stream cut mid-way, which the SDK must raise rather than take for a
// whole answer. The gateway injects the provider's key and authenticates
// the client by the Google key the SDK sends. It skips when node or the
// installed SDK is missing.
func TestGoogleGenAINodeSDK(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		withGemini(c)
		p := c.Providers["gemini"]
		p.APIKeyEnv = "UPSTREAM_KEY"
		c.Providers["gemini"] = p
		c.Auth.Keys = []string{googleKey}
	})

	out := nodetest.Run(t, genaiDir, "check.mjs", genaiDir+"/node_modules/@google/genai/package.json",
		"npm ci --prefix internal/gateway/"+genaiDir,
		"GATEWAY_URL="+e.srv.URL+"/gemini", "GEMINI_KEY="+googleKey,
		"GEMINI_API_KEY=", "GOOGLE_API_KEY=", "GOOGLE_GEMINI_BASE_URL=", "GOOGLE_GENAI_USE_VERTEXAI=")
	var got struct {
		Plain struct {
			Text, FinishReason, ModelVersion string
			OutputTokens                     int
		}
		Stream struct {
			Text, FinishReason   string
			Chunks, OutputTokens int
		}
		Cut struct {
			Text, Error, Message string
			Status               int
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", string(out), err)
	}
	const answer = "This is a fake answer."
	if p := got.Plain; p.Text != answer || p.FinishReason != "STOP" || p.OutputTokens != 5 || p.ModelVersion != "gemini-test" {
		t.Errorf("plain call: %+v", p)
	}
	if s := got.Stream; s.Text != answer || s.Chunks != 5 || s.FinishReason != "STOP" || s.OutputTokens != 5 {
		t.Errorf("stream: %+v", s)
	}
	if c := got.Cut; c.Error != "ApiError" || c.Status != 503 || !strings.Contains(c.Message, "stream_cut") || c.Text != "This is" {
		t.Errorf("cut stream: %+v, want the two chunks' text, then the SDK's ApiError 503 naming stream_cut", c)
	}

	reqs := e.up.Requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream calls %d, want 3", len(reqs))
	}
	// This SDK version calls Gemini's v1beta API.
	paths := []string{"/v1beta/models/gemini-test:generateContent", "/v1beta/models/gemini-test:streamGenerateContent",
		"/v1beta/models/gemini-test:streamGenerateContent"}
	for i, r := range reqs {
		if r.Path != paths[i] || r.Header.Get("X-Goog-Api-Key") != "sk-injected-1234" {
			t.Errorf("call %d: %s with x-goog-api-key %q; want %s with the injected key", i+1, r.Path, r.Header.Get("X-Goog-Api-Key"), paths[i])
		}
	}
	if strings.Contains(e.logs.String(), googleKey) {
		t.Error("the client's key reached the attempt log")
	}
}
