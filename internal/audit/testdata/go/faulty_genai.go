// google.golang.org/genai clients that can hang a worker or send each call
// several times through the gateway (the SDK ignores x-should-retry).
package faulty

import (
	"context"
	"time"

	"google.golang.org/genai"
)

func plain(ctx context.Context) (*genai.Client, error) {
	return genai.NewClient(ctx, &genai.ClientConfig{ // want: timeout
		APIKey:      "unused-when-injected",
		HTTPOptions: genai.HTTPOptions{BaseURL: "http://127.0.0.1:8080/gemini"},
	})
}

func defaults(ctx context.Context) (*genai.Client, error) {
	return genai.NewClient(ctx, nil) // want: timeout
}

func retrying(ctx context.Context) (*genai.Client, error) {
	cc := &genai.ClientConfig{
		Backend: genai.BackendVertexAI,
		HTTPOptions: genai.HTTPOptions{
			BaseURL:      "http://127.0.0.1:8080/vertex",
			Timeout:      genai.Ptr(35 * time.Second),
			RetryOptions: &genai.HTTPRetryOptions{},
		},
	}
	return genai.NewClient(ctx, cc) // want: retries-on
}

func short(ctx context.Context) (*genai.Client, error) {
	return genai.NewClient(ctx, &genai.ClientConfig{HTTPOptions: genai.HTTPOptions{ // want: retries-on short-timeout
		Timeout:      genai.Ptr[time.Duration](20 * time.Second),
		RetryOptions: &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](3)},
	}})
}
