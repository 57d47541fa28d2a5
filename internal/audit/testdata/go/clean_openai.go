package agent

import (
	"net/http"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
)

const (
	noRetries = 0
	timeout   = 30 * time.Second
)

var httpClient = &http.Client{Timeout: 45 * time.Second}

// NewGatewayClient returns a client that lets the gateway retry.
func NewGatewayClient() oai.Client {
	return oai.NewClient(
		option.WithBaseURL("http://127.0.0.1:8080/openai/v1"),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(timeout),
	)
}

func newWithHTTPClient() oai.Client {
	return oai.NewClient(option.WithHTTPClient(httpClient), option.WithMaxRetries(noRetries))
}

func newInlineHTTPClient() oai.Client {
	return oai.NewClient(
		option.WithHTTPClient(&http.Client{Timeout: time.Minute}),
		option.WithMaxRetries(0),
	)
}

func newFieldTimeout() oai.Client {
	hc := &http.Client{}
	hc.Timeout = 20 * time.Second
	return oai.NewClient(option.WithHTTPClient(hc), option.WithMaxRetries(0))
}

func newAzure(endpoint string) oai.Client {
	var opts []option.RequestOption
	opts = append(opts, azure.WithEndpoint(endpoint, "2024-06-01"))
	opts = append(opts, option.WithMaxRetries(0), option.WithRequestTimeout(timeout))
	return oai.NewClient(opts...)
}

// NewWith passes the caller's options through: the caller decides.
func NewWith(extra ...option.RequestOption) oai.Client {
	opts := append([]option.RequestOption{option.WithMaxRetries(0)}, extra...)
	return oai.NewClient(opts...)
}

func fromHelper() oai.Client {
	return oai.NewClient(gatewayOptions()...)
}

func gatewayOptions() []option.RequestOption {
	return []option.RequestOption{option.WithMaxRetries(0), option.WithRequestTimeout(timeout)}
}

// The string "oai.NewClient()" and this comment, oai.NewClient(), are not calls.
var doc = "oai.NewClient() without option.WithMaxRetries(0)"

// A maintenance tool that talks to the provider directly.
var direct = oai.NewClient() // sluice:ignore: not behind the gateway
