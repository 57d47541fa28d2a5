package agent

import (
	"time"

	claude "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/bedrock"
	opt "github.com/anthropics/anthropic-sdk-go/option"
)

func newClaude() claude.Client {
	return claude.NewClient(opt.WithAPIKey("sk-test")) // want: retries timeout
}

func newBedrock() claude.Client {
	c := claude.NewClient( // want: retries
		bedrock.WithLoadDefaultConfig(nil),
		opt.WithRequestTimeout(time.Minute),
	)
	return c
}

func newNegative() claude.Client {
	return claude.NewClient(opt.WithMaxRetries(-1), opt.WithRequestTimeout(time.Minute)) // want: retries-on
}

var lazy = func() claude.Client {
	base := append([]opt.RequestOption{opt.WithMaxRetries(0)}, opt.WithMaxRetries(5))
	return claude.NewClient(base...) // want: retries-on timeout
}
