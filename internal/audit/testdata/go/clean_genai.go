// google.golang.org/genai clients through the gateway with one attempt and
// a timeout above the gateway's total.
package clean

import (
	"context"
	"net/http"
	"time"

	"google.golang.org/genai"
)

func gemini(ctx context.Context) (*genai.Client, error) {
	return genai.NewClient(ctx, &genai.ClientConfig{
		APIKey: "unused-when-injected",
		HTTPOptions: genai.HTTPOptions{
			BaseURL: "http://127.0.0.1:8080/gemini",
			Timeout: genai.Ptr(35 * time.Second),
		},
	})
}

func vertex(ctx context.Context) (*genai.Client, error) {
	return genai.NewClient(ctx, &genai.ClientConfig{
		Backend:     genai.BackendVertexAI,
		HTTPClient:  &http.Client{Timeout: 40 * time.Second},
		HTTPOptions: genai.HTTPOptions{BaseURL: "http://127.0.0.1:8080/vertex", RetryOptions: &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](1)}},
	})
}

func assigned(ctx context.Context, d time.Duration) (*genai.Client, error) {
	cc := genai.ClientConfig{}
	cc.HTTPOptions.Timeout = &d
	return genai.NewClient(ctx, &cc)
}

func fromCaller(ctx context.Context, cc *genai.ClientConfig) (*genai.Client, error) {
	return genai.NewClient(ctx, cc)
}
