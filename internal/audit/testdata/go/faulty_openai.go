// Package agent answers support tickets.
package agent

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/openai/openai-go/v2"
	"github.com/openai/openai-go/v2/option"
)

const retries = 3

var defaultClient = openai.NewClient() // want: retries timeout

func newClient() openai.Client {
	return openai.NewClient( // want: retries-on timeout
		option.WithAPIKey(os.Getenv("OPENAI_API_KEY")),
		option.WithMaxRetries(2),
	)
}

func newPatient() openai.Client {
	return openai.NewClient(option.WithRequestTimeout(30 * time.Second)) // want: retries
}

func newDefaultHTTP() openai.Client {
	return openai.NewClient(option.WithHTTPClient(http.DefaultClient), option.WithMaxRetries(0)) // want: timeout
}

func newFromSlice() openai.Client {
	opts := []option.RequestOption{
		option.WithBaseURL("http://127.0.0.1:8080/openai/v1"),
		option.WithRequestTimeout(20 * time.Second),
	}
	if os.Getenv("DEBUG") != "" {
		opts = append(opts, option.WithMaxRetries(retries))
	}
	return openai.NewClient(opts...) // want: retries-on short-timeout
}

func newBareHTTP() openai.Client {
	hc := &http.Client{Transport: http.DefaultTransport}
	return openai.NewClient(option.WithHTTPClient(hc), option.WithMaxRetries(0)) // want: timeout
}

func ask(ctx context.Context, c openai.Client, prompt string) (string, error) {
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	})
	if err != nil {
		return "", err
	}
	return resp.Choices[0].Message.Content, nil
}
