// Package agent builds go-openai clients that can hang a worker.
package agent

import (
	"net/http"
	"os"

	openai "github.com/sashabaranov/go-openai"
)

var plain = openai.NewClient(os.Getenv("OPENAI_API_KEY")) // want: timeout

func baseURLOnly() *openai.Client {
	cfg := openai.DefaultConfig(os.Getenv("OPENAI_API_KEY"))
	cfg.BaseURL = "http://127.0.0.1:8080/openai/v1"
	return openai.NewClientWithConfig(cfg) // want: timeout
}

func zeroTimeout() *openai.Client {
	cfg := openai.DefaultConfig(os.Getenv("OPENAI_API_KEY"))
	cfg.HTTPClient = &http.Client{Timeout: 0}
	return openai.NewClientWithConfig(cfg) // want: timeout
}

func defaultHTTP() *openai.Client {
	return openai.NewClientWithConfig(openai.ClientConfig{HTTPClient: http.DefaultClient}) // want: timeout
}

func inline() *openai.Client {
	return openai.NewClientWithConfig(openai.DefaultConfig("sk-test")) // want: timeout
}
