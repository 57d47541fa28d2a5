package sluice

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
)

// The official SDKs, left at their default retries (2), with a Transport
// as their HTTP client's: the Transport's answers say x-should-retry:
// false, so the SDK does not retry what the Transport already retried.

// sdkPolicy retries quickly: 3 attempts with millisecond backoffs.
func sdkPolicy() Policy {
	p := fastPolicy()
	p.Retry.MaxAttempts = 3
	return p
}

func sdkContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestOpenAISDKRetriesNotMultiplied(t *testing.T) {
	for _, tt := range []struct {
		name  string
		keep  bool
		calls int
	}{
		{"stamped", false, 3},
		{"kept", true, 9}, // the SDK's 3 tries × the Transport's 3
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, "503", sdkPolicy())
			r.tr.KeepShouldRetry = tt.keep
			c := openai.NewClient(
				ooption.WithBaseURL(r.srv.URL+"/v1"),
				ooption.WithAPIKey(testKey),
				ooption.WithHTTPClient(&http.Client{Transport: r.tr}),
			)
			_, err := c.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
				Model:    openai.ChatModelGPT4oMini,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
				t.Fatalf("error %v, want the provider's 503", err)
			}
			if got := r.srv.Calls(); got != tt.calls {
				t.Errorf("upstream calls %d, want %d", got, tt.calls)
			}
		})
	}
}

func TestAnthropicSDKRetriesNotMultiplied(t *testing.T) {
	for _, tt := range []struct {
		name  string
		keep  bool
		calls int
	}{
		{"stamped", false, 3},
		{"kept", true, 9},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, "503", sdkPolicy())
			r.tr.KeepShouldRetry = tt.keep
			c := anthropic.NewClient(
				aoption.WithBaseURL(r.srv.URL),
				aoption.WithAPIKey(testKey),
				aoption.WithHTTPClient(&http.Client{Transport: r.tr}),
			)
			_, err := c.Messages.New(sdkContext(t), anthropic.MessageNewParams{
				Model:     anthropic.Model("claude-haiku-4-5"),
				MaxTokens: 64,
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
			})
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
				t.Fatalf("error %v, want the provider's 503", err)
			}
			if got := r.srv.Calls(); got != tt.calls {
				t.Errorf("upstream calls %d, want %d", got, tt.calls)
			}
		})
	}
}
