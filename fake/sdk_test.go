package fake

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	asdk "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
)

// TestOverloadedWithOfficialSDKs: a drill's overloaded step is an error to
// the official Go SDKs, streamed or not, so that a drill never looks like
// a pass. Not streamed, the SDK raises the provider's status (Anthropic
// 529, OpenAI 503) with its error type; streamed, the Anthropic SDK
// raises the overloaded error event. Retries are off: one call each.
func TestOverloadedWithOfficialSDKs(t *testing.T) {
	s := NewServer("overloaded")
	defer s.Close()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	claude := asdk.NewClient(aoption.WithBaseURL(s.URL), aoption.WithAPIKey("sk-ant-fake"),
		aoption.WithHTTPClient(hc), aoption.WithMaxRetries(0))
	params := asdk.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 64,
		Messages: []asdk.MessageParam{asdk.NewUserMessage(asdk.NewTextBlock("hi"))}}
	msg, err := claude.Messages.New(ctx, params)
	var aerr *asdk.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != 529 || aerr.Type() != "overloaded_error" {
		t.Errorf("Anthropic Messages.New: %+v, %v; want a 529 overloaded_error", msg, err)
	}

	stream := claude.Messages.NewStreaming(ctx, params)
	var events int
	for stream.Next() {
		events++
	}
	stream.Close()
	if err := stream.Err(); events != 0 || err == nil || !strings.Contains(err.Error(), "overloaded_error") {
		t.Errorf("Anthropic stream: %d events, then %v; want the overloaded_error event as its error", events, err)
	}

	oai := openai.NewClient(ooption.WithBaseURL(s.URL+"/v1"), ooption.WithAPIKey("sk-fake"),
		ooption.WithHTTPClient(hc), ooption.WithMaxRetries(0))
	chat, err := oai.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != 503 || oerr.Type != "server_error" {
		t.Errorf("OpenAI Chat.Completions.New: %+v, %v; want a 503 server_error", chat, err)
	}
	if n := s.Calls(); n != 3 {
		t.Errorf("the fake received %d calls, want 3 (no retries)", n)
	}
}
