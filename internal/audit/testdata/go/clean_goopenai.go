// Package agent builds go-openai clients the careful way.
package agent

import (
	"net/http"
	"os"
	"time"

	gpt "github.com/sashabaranov/go-openai"
)

func gatewayClient() *gpt.Client {
	cfg := gpt.DefaultConfig(os.Getenv("OPENAI_API_KEY"))
	cfg.BaseURL = "http://127.0.0.1:8080/openai/v1"
	cfg.HTTPClient = &http.Client{Timeout: 35 * time.Second}
	return gpt.NewClientWithConfig(cfg)
}

func literalConfig() *gpt.Client {
	return gpt.NewClientWithConfig(gpt.ClientConfig{
		BaseURL:    "http://127.0.0.1:8080/openai/v1",
		HTTPClient: &http.Client{Timeout: 35 * time.Second},
	})
}

var shared = &http.Client{Timeout: time.Minute}

func sharedHTTP() *gpt.Client {
	c := gpt.DefaultAzureConfig(os.Getenv("AZURE_KEY"), "http://127.0.0.1:8080/azure")
	c.HTTPClient = shared
	return gpt.NewClientWithConfig(c)
}

// fromCaller cannot be judged here: its config comes from the caller.
func fromCaller(cfg gpt.ClientConfig) *gpt.Client {
	return gpt.NewClientWithConfig(cfg)
}

// Other functions of the package are not constructors.
var req = gpt.ChatCompletionRequest{Model: gpt.GPT4oMini}

func suppressed() *gpt.Client {
	return gpt.NewClient("sk-test") // sluice:ignore a one-off script
}
