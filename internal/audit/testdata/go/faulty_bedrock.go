// Bedrock Runtime clients that send each call several times through the
// gateway (the AWS SDK ignores x-should-retry) or can hang a worker.
package faulty

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

func defaults(ctx context.Context) (*bedrockruntime.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"))
	if err != nil {
		return nil, err
	}
	return bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) { // want: retries timeout
		o.BaseEndpoint = aws.String(gateway)
	}), nil
}

func zeroIsDefault(ctx context.Context) *bedrockruntime.Client {
	cfg, _ := config.LoadDefaultConfig(ctx, config.WithRetryMaxAttempts(0))
	return bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) { // want: retries
		o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(35 * time.Second)
	})
}

func fiveAttempts(ctx context.Context) *bedrockruntime.Client {
	cfg, _ := config.LoadDefaultConfig(ctx, config.WithRetryMaxAttempts(5), config.WithHTTPClient(&http.Client{Timeout: 35 * time.Second}))
	return bedrockruntime.NewFromConfig(cfg) // want: retries-on
}

var short = bedrockruntime.New(bedrockruntime.Options{ // want: short-timeout
	Region:     "us-east-1",
	Retryer:    aws.NopRetryer{},
	HTTPClient: awshttp.NewBuildableClient().WithTimeout(10 * time.Second),
})

var wrapped = bedrockruntime.New(bedrockruntime.Options{Retryer: retry.AddWithMaxAttempts(retry.NewStandard(), 4)}) // want: retries-on timeout

var standard = bedrockruntime.New(bedrockruntime.Options{Retryer: retry.NewStandard(), HTTPClient: &http.Client{Timeout: time.Minute}}) // want: retries-on
