package fake

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/nodetest"
)

// nodeDir holds the Node script that drives the official OpenAI Node SDK,
// with its package.json and package-lock.json; "npm ci --prefix" it (as
// ./scripts/test does) to install the pinned SDK.
const nodeDir = "testdata/node"

// TestOfficialNodeSDK runs the official OpenAI Node SDK (pinned in
// testdata/node) against the fake: the Responses API stream helper's
// finalResponse(), a non-streamed response, and chat completions streamed
// (raw and through the helper) and not, and a non-streamed call that the
// overloaded step answers, which the SDK must raise as a 503. It skips when node or the
// installed SDK is missing.
func TestOfficialNodeSDK(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	out := nodetest.Run(t, nodeDir, "check.mjs", nodeDir+"/node_modules/openai/package.json", "npm ci --prefix fake/"+nodeDir,
		"FAKE_BASE_URL="+s.URL+"/v1", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")

	var got struct {
		ResponsesStream struct {
			Events       []string
			Deltas       string
			Status       string
			OutputText   string
			ContentText  string
			OutputTokens int
		}
		Responses struct {
			Status       string
			OutputText   string
			OutputTokens int
		}
		Chat struct {
			Text             string
			CompletionTokens int
		}
		ChatStream struct {
			Text             string
			CompletionTokens int
		}
		ChatStreamHelper struct{ Text, FinishReason string }
		Overloaded       struct {
			Answered, Type, Name string
			Status               int
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", string(out), err)
	}
	const answer = "This is a fake answer."
	rs := got.ResponsesStream
	wantEvents := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed"}
	if !slices.Equal(rs.Events, wantEvents) {
		t.Errorf("responses.stream events:\n got %s\nwant %s", strings.Join(rs.Events, " "), strings.Join(wantEvents, " "))
	}
	if rs.Status != "completed" || rs.OutputText != answer || rs.ContentText != answer || rs.Deltas != answer || rs.OutputTokens != 5 {
		t.Errorf("responses.stream finalResponse = %+v, want completed %q with 5 output tokens", rs, answer)
	}
	if r := got.Responses; r.Status != "completed" || r.OutputText != answer || r.OutputTokens != 5 {
		t.Errorf("responses.create = %+v, want completed %q with 5 output tokens", r, answer)
	}
	if c := got.Chat; c.Text != answer || c.CompletionTokens != 5 {
		t.Errorf("chat.completions.create = %+v, want %q with 5 completion tokens", c, answer)
	}
	if c := got.ChatStream; c.Text != answer || c.CompletionTokens != 5 {
		t.Errorf("chat.completions.create stream = %+v, want %q with 5 completion tokens", c, answer)
	}
	if c := got.ChatStreamHelper; c.Text != answer || c.FinishReason != "stop" {
		t.Errorf("chat.completions.stream finalChatCompletion = %+v, want %q ending in stop", c, answer)
	}
	if o := got.Overloaded; o.Status != 503 || o.Type != "server_error" || o.Name != "InternalServerError" {
		t.Errorf("chat.completions.create with the overloaded step = %+v, want the SDK's InternalServerError, 503 server_error", o)
	}
	if n := s.Calls(); n != 6 {
		t.Errorf("fake received %d calls, want 6 (one per SDK call, no retries)", n)
	}
}
