package sluice_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/fake"
)

// A request to the real API carries its key and content type; the
// Transport adds the timeouts, retries and breaker. Here the provider is a
// fake that fails once with 503.
func ExampleTransport_request() {
	provider := fake.NewServer("503,200") // in production: https://api.openai.com
	defer provider.Close()

	policy := sluice.Interactive()
	policy.Retry.Base = 10 * time.Millisecond // short backoffs for the example
	client := &http.Client{Transport: &sluice.Transport{Provider: "openai", Policy: policy}}

	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost,
		provider.URL+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+"sk-…") // os.Getenv("OPENAI_API_KEY")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	fmt.Println(resp.StatusCode, "after", resp.Header.Get("Sluice-Attempts"), "attempts")
	// Output: 200 after 2 attempts
}

// The official Go SDKs take the Transport through their HTTP client option.
// Their own retries are set to 0: the Transport retries, once, in one
// place; their timeout is left a little above the policy's total.
func ExampleTransport_officialSDKs() {
	provider := fake.NewServer("503,200") // in production: the SDKs' default base URLs
	defer provider.Close()

	policy := sluice.Interactive()
	policy.Retry.Base = 10 * time.Millisecond // short backoffs for the example
	httpClient := &http.Client{Transport: &sluice.Transport{Policy: policy}}

	oai := openai.NewClient(
		option.WithBaseURL(provider.URL+"/v1"), // omit in production
		option.WithAPIKey("sk-…"),              // or OPENAI_API_KEY
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(35*time.Second),
	)
	chat, err := oai.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		fmt.Println("openai error:", err)
		return
	}
	fmt.Println("openai:", chat.Choices[0].Message.Content != "")

	claude := anthropic.NewClient(
		aoption.WithBaseURL(provider.URL), // omit in production
		aoption.WithAPIKey("sk-ant-…"),    // or ANTHROPIC_API_KEY
		aoption.WithHTTPClient(httpClient),
		aoption.WithMaxRetries(0),
		aoption.WithRequestTimeout(35*time.Second),
	)
	msg, err := claude.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model:     anthropic.Model("claude-haiku-4-5"),
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil {
		fmt.Println("anthropic error:", err)
		return
	}
	fmt.Println("anthropic:", len(msg.Content) > 0)
	fmt.Println(provider.Calls(), "upstream calls")
	// Output:
	// openai: true
	// anthropic: true
	// 3 upstream calls
}
