// Bedrock Runtime clients through the gateway, each with one attempt and a
// timeout above the gateway's total.
package clean

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
)

const gateway = "http://127.0.0.1:8080/bedrock"

func fromConfig(ctx context.Context) (*bedrockruntime.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"), config.WithRetryMaxAttempts(1))
	if err != nil {
		return nil, err
	}
	return bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		o.BaseEndpoint = aws.String(gateway)
		o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(35 * time.Second)
	}), nil
}

func inOptions(ctx context.Context) *bedrockruntime.Client {
	cfg, _ := config.LoadDefaultConfig(ctx)
	return bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		o.RetryMaxAttempts = 1
		o.HTTPClient = &http.Client{Timeout: 40 * time.Second}
	})
}

func retryer(ctx context.Context) *bedrockruntime.Client {
	cfg, _ := config.LoadDefaultConfig(ctx,
		config.WithRetryer(func() aws.Retryer { return retry.AddWithMaxAttempts(retry.NewStandard(), 1) }),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(time.Minute)))
	return bedrockruntime.NewFromConfig(cfg)
}

var literal = bedrockruntime.New(bedrockruntime.Options{
	Region:       "us-east-1",
	BaseEndpoint: aws.String(gateway),
	Retryer:      aws.NopRetryer{},
	HTTPClient:   awshttp.NewBuildableClient().WithTimeout(35 * time.Second),
})

var standardOne = bedrockruntime.New(bedrockruntime.Options{
	Retryer:    retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 1 }),
	HTTPClient: awshttp.NewBuildableClient().WithReadTimeout(time.Minute),
})

func fromCaller(cfg aws.Config, fns ...func(*bedrockruntime.Options)) *bedrockruntime.Client {
	return bedrockruntime.NewFromConfig(cfg, fns...)
}
