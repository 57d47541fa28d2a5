package fake

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oresponses "github.com/openai/openai-go/v3/responses"
)

// goSDKClient is the official OpenAI Go SDK pointed at s, without retries.
func goSDKClient(t *testing.T, s *Server) openai.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithAPIKey("sk-fake"),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
}

func responseParams() oresponses.ResponseNewParams {
	return oresponses.ResponseNewParams{
		Model: "gpt-test",
		Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	}
}

// TestResponsesGoSDK checks the Responses answers with the official Go
// SDK: the non-streamed response, and the stream fed event by event to the
// SDK's ResponseAccumulator, which must rebuild the same response from
// the item and part events (the message item is known before
// response.completed arrives).
func TestResponsesGoSDK(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	c := goSDKClient(t, s)
	const answer = "This is a fake answer."

	resp, err := c.Responses.New(t.Context(), responseParams())
	if err != nil {
		t.Fatalf("Responses.New: %v", err)
	}
	if resp.Status != "completed" || resp.OutputText() != answer || resp.Usage.OutputTokens != 5 {
		t.Errorf("Responses.New = status %q, text %q, %d output tokens; want completed, %q, 5",
			resp.Status, resp.OutputText(), resp.Usage.OutputTokens, answer)
	}

	stream := c.Responses.NewStreaming(t.Context(), responseParams())
	defer stream.Close()
	var acc oresponses.ResponseAccumulator
	var deltas string
	for stream.Next() {
		ev := stream.Current()
		if ev.Type == "response.output_text.delta" {
			deltas += ev.Delta
		}
		if ev.Type == "response.completed" {
			// Before the terminal event, the item events alone must have
			// built the message, as a client showing progress sees it.
			if snap := acc.Snapshot(); len(snap.Output) != 1 || snap.Output[0].Type != "message" || snap.Output[0].Text[0] != answer {
				t.Errorf("accumulated before response.completed: %+v, want one message item with %q", snap.Output, answer)
			}
		}
		var sev oresponses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &sev); err != nil {
			t.Fatalf("event %s: %v", ev.RawJSON(), err)
		}
		if err := acc.AddEvent(sev); err != nil {
			t.Fatalf("ResponseAccumulator.AddEvent(%s): %v", ev.Type, err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	snap := acc.Snapshot()
	if snap.TerminalEvent != "response.completed" || snap.OutputText() != answer || deltas != answer {
		t.Errorf("accumulated: terminal %q, text %q, deltas %q; want response.completed, %q",
			snap.TerminalEvent, snap.OutputText(), deltas, answer)
	}
	if len(snap.Output) != 1 || snap.Output[0].Type != "message" || snap.Output[0].ItemID == "" {
		t.Errorf("accumulated output %+v, want one message item", snap.Output)
	}
	final, err := acc.ReconstructedResponse()
	if err != nil {
		t.Fatalf("ReconstructedResponse: %v", err)
	}
	if final.Status != "completed" || final.OutputText() != answer || final.Usage.OutputTokens != 5 {
		t.Errorf("reconstructed = status %q, text %q, %d output tokens; want completed, %q, 5",
			final.Status, final.OutputText(), final.Usage.OutputTokens, answer)
	}
}
