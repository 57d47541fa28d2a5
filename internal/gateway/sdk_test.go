package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/sluice-llm/sluice/internal/config"
)

// The official SDKs, left at their default retries, as real clients of the
// gateway in front of the fake provider.

const fakeAnswer = "This is a fake answer."

// sdkTimeout bounds every SDK call: the test policies end any call within
// 2 s, so an SDK still waiting after this is a hang.
const sdkTimeout = 5 * time.Second

// sdkHTTPClient is an http.Client of the test's own, so that its idle
// connections are closed before the leak check runs.
func sdkHTTPClient(t *testing.T) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func (e *env) openaiClient() openai.Client {
	return openai.NewClient(
		ooption.WithBaseURL(e.srv.URL+"/openai/v1"),
		ooption.WithAPIKey("sk-test"),
		ooption.WithHTTPClient(sdkHTTPClient(e.t)),
		ooption.WithRequestTimeout(sdkTimeout),
	)
}

func (e *env) anthropicClient() anthropic.Client {
	return anthropic.NewClient(
		aoption.WithBaseURL(e.srv.URL+"/anthropic"),
		aoption.WithAPIKey("sk-ant-test"),
		aoption.WithHTTPClient(sdkHTTPClient(e.t)),
		aoption.WithRequestTimeout(sdkTimeout),
	)
}

func sdkContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*sdkTimeout)
	t.Cleanup(cancel)
	return ctx
}

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
}

func messageParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model("claude-haiku-4-5"),
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}
}

func TestOpenAISDKChat(t *testing.T) {
	e := newEnv(t, "200", nil)
	c := e.openaiClient()
	got, err := c.Chat.Completions.New(sdkContext(t), chatParams())
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != fakeAnswer {
		t.Fatalf("choices %+v, want one with %q", got.Choices, fakeAnswer)
	}
	u := got.Usage
	if u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v, want positive tokens that add up", u)
	}
	if e.up.Calls() != 1 {
		t.Errorf("upstream calls %d, want 1", e.up.Calls())
	}
}

func TestOpenAISDKStream(t *testing.T) {
	e := newEnv(t, "200", nil)
	c := e.openaiClient()
	stream := c.Chat.Completions.NewStreaming(sdkContext(t), chatParams())
	defer stream.Close()
	var text strings.Builder
	chunks := 0
	for stream.Next() {
		chunks++
		for _, ch := range stream.Current().Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream ended with %v, want a clean end", err)
	}
	if text.String() != fakeAnswer || chunks < 3 {
		t.Errorf("streamed %q in %d chunks, want %q in several", text.String(), chunks, fakeAnswer)
	}
}

func TestOpenAISDKStallRaisesError(t *testing.T) {
	e := newEnv(t, "stream:stall-after=3", nil)
	c := e.openaiClient()
	stream := c.Chat.Completions.NewStreaming(sdkContext(t), chatParams())
	defer stream.Close()
	var text strings.Builder
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	err := stream.Err()
	if err == nil {
		t.Fatalf("a stalled stream ended cleanly after %q; want an error", text.String())
	}
	if !strings.Contains(err.Error(), "stream_stalled") {
		t.Errorf("stream error %q, want the gateway's stream_stalled event", err)
	}
	if text.Len() == 0 || text.String() == fakeAnswer {
		t.Errorf("text before the stall %q, want a part of the answer", text.String())
	}
	if e.up.Calls() != 1 {
		t.Errorf("upstream calls %d, want 1", e.up.Calls())
	}
}

// TestOpenAISDKDefaultRetriesNotMultiplied: the SDK's own 2 retries would
// make 9 upstream calls of the gateway's 3 if it ignored x-should-retry.
func TestOpenAISDKDefaultRetriesNotMultiplied(t *testing.T) {
	for _, status := range []int{503, 429} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			e := newEnv(t, strconv.Itoa(status), nil)
			c := e.openaiClient()
			_, err := c.Chat.Completions.New(sdkContext(t), chatParams())
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != status {
				t.Fatalf("error %v, want an API error with status %d", err, status)
			}
			if got := e.up.Calls(); got != 3 {
				t.Errorf("upstream calls %d, want max_attempts 3", got)
			}
		})
	}
}

func TestOpenAISDKProviderDownNotRetried(t *testing.T) {
	e := newEnv(t, "503", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Breaker.Failures = 1
		p.Breaker.Cool = 30 * time.Second
		c.Policies["interactive"] = p
	})
	c := e.openaiClient()
	if _, err := c.Chat.Completions.New(sdkContext(t), chatParams()); err == nil {
		t.Fatal("the first call succeeded against a 503 provider")
	}
	before, logged := e.up.Calls(), len(e.logLines())
	if before == 0 {
		t.Fatal("the first call never reached the provider")
	}
	_, err := c.Chat.Completions.New(sdkContext(t), chatParams())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "provider_down" {
		t.Fatalf("error %v, want the gateway's 503 provider_down", err)
	}
	if got := e.up.Calls(); got != before {
		t.Errorf("upstream calls went from %d to %d while the breaker was open, want no change", before, got)
	}
	e.gw.log.Flush() // a refusal within a second of the last is folded until then
	if l := e.logLines()[logged:]; len(l) != 1 || l[0]["outcome"] != "circuit_open" || l[0]["refused"] != 1.0 {
		t.Errorf("log lines of the second call %v, want one circuit_open refused 1 (the SDK asked once)", l)
	}
}

func TestAnthropicSDKMessage(t *testing.T) {
	e := newEnv(t, "200", nil)
	c := e.anthropicClient()
	msg, err := c.Messages.New(sdkContext(t), messageParams())
	if err != nil {
		t.Fatalf("messages.new: %v", err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != fakeAnswer {
		t.Fatalf("content %+v, want %q", msg.Content, fakeAnswer)
	}
	if msg.Usage.InputTokens <= 0 || msg.Usage.OutputTokens <= 0 {
		t.Errorf("usage %+v, want positive tokens", msg.Usage)
	}
}

// anthropicStream reads a whole stream: its text, its event types in
// order and its error.
func anthropicStream(t *testing.T, c *anthropic.Client) (text string, types []string, err error) {
	stream := c.Messages.NewStreaming(sdkContext(t), messageParams())
	defer stream.Close()
	var b strings.Builder
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" {
			b.WriteString(ev.Delta.Text)
		}
	}
	return b.String(), types, stream.Err()
}

func TestAnthropicSDKStream(t *testing.T) {
	e := newEnv(t, "200", nil)
	c := e.anthropicClient()
	text, types, err := anthropicStream(t, &c)
	if err != nil {
		t.Fatalf("stream ended with %v, want a clean end", err)
	}
	if text != fakeAnswer {
		t.Errorf("streamed %q, want %q", text, fakeAnswer)
	}
	if len(types) == 0 || types[0] != "message_start" || types[len(types)-1] != "message_stop" {
		t.Errorf("events %v, want message_start … message_stop", types)
	}
}

func TestAnthropicSDKOverloadedFirstEventRetried(t *testing.T) {
	e := newEnv(t, "overloaded,200", nil)
	c := e.anthropicClient()
	text, types, err := anthropicStream(t, &c)
	if err != nil {
		t.Fatalf("stream ended with %v, want the retried, clean answer", err)
	}
	if text != fakeAnswer || types[len(types)-1] != "message_stop" {
		t.Errorf("streamed %q, events %v; want %q ending in message_stop", text, types, fakeAnswer)
	}
	if e.up.Calls() != 2 {
		t.Errorf("upstream calls %d, want 2", e.up.Calls())
	}
}

func TestAnthropicSDKStallRaisesError(t *testing.T) {
	e := newEnv(t, "stream:stall-after=3", nil)
	c := e.anthropicClient()
	text, types, err := anthropicStream(t, &c)
	if err == nil {
		t.Fatalf("a stalled stream ended cleanly (events %v, text %q); want an error", types, text)
	}
	if !strings.Contains(err.Error(), "stream_stalled") {
		t.Errorf("stream error %q, want the gateway's stream_stalled event", err)
	}
	for _, typ := range types {
		if typ == "message_stop" {
			t.Errorf("a stalled stream got a message_stop: %v", types)
		}
	}
	if e.up.Calls() != 1 {
		t.Errorf("upstream calls %d, want 1", e.up.Calls())
	}
}

func TestAnthropicSDKDefaultRetriesNotMultiplied(t *testing.T) {
	e := newEnv(t, "529", nil)
	c := e.anthropicClient()
	_, err := c.Messages.New(sdkContext(t), messageParams())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 {
		t.Fatalf("error %v, want an API error with status 529", err)
	}
	if got := e.up.Calls(); got != 3 {
		t.Errorf("upstream calls %d, want max_attempts 3", got)
	}
}
