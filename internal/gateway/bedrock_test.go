package gateway

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

// bedrockClientKey is the access key id a client's AWS SDK signs with:
// the gateway takes it for the client's token.
const bedrockClientKey = "AKIACLIENTSLUICE0001"

// bedrockModel is a Bedrock model id, with the "." and ":" real ids have.
const bedrockModel = "anthropic.claude-3-haiku-20240307-v1:0"

// withBedrock adds a provider of kind bedrock on the fake and a route
// /bedrock to it, the gateway's own AWS credentials (the fake's) in the
// standard chain's environment variables, and the client's access key id
// as a client token.
func withBedrock(t *testing.T) func(*config.Config) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_ACCESS_KEY_ID", fake.DefaultAWS.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", fake.DefaultAWS.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "")
	return func(c *config.Config) {
		c.Providers["bedrock"] = config.Provider{Kind: "bedrock", BaseURL: c.Providers["openai"].BaseURL,
			Region: fake.DefaultAWS.Region, MaxConcurrent: 64}
		c.Routes = append(c.Routes, config.Route{Prefix: "/bedrock", Provider: "bedrock", Policy: "interactive", RetrySafe: true})
		c.Auth.Keys = append(c.Auth.Keys, bedrockClientKey)
	}
}

// bedrockThroughGateway is the official Bedrock Runtime client pointed at
// the gateway's /bedrock route, its own retries off, signing with the
// client's key, each call carrying the fake's script.
func bedrockThroughGateway(e *env, script string) *bedrockruntime.Client {
	return bedrockruntime.New(bedrockruntime.Options{
		Region:       fake.DefaultAWS.Region,
		BaseEndpoint: aws.String(e.srv.URL + "/bedrock"),
		Credentials:  credentials.NewStaticCredentialsProvider(bedrockClientKey, "client-secret-never-used", ""),
		Retryer:      aws.NopRetryer{},
		APIOptions:   scriptOption(script),
	})
}

// TestBedrockSDKThroughGateway: aws-sdk-go-v2's own Bedrock Runtime
// client, pointed at the gateway, gets Converse's and ConverseStream's
// answers; the gateway authenticates the client by its access key id,
// signs upstream with its own credentials (the fake verifies the
// signature), and retries a throttled stream's first frame unseen.
func TestBedrockSDKThroughGateway(t *testing.T) {
	e := newEnv(t, "200", withBedrock(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msgs := []types.Message{{Role: types.ConversationRoleUser,
		Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}

	out, err := bedrockThroughGateway(e, "503,200").Converse(ctx, &bedrockruntime.ConverseInput{
		ModelId: aws.String(bedrockModel), Messages: msgs,
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(64)}})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	if got := msg.Content[0].(*types.ContentBlockMemberText).Value; got != "This is a fake answer." ||
		aws.ToInt32(out.Usage.OutputTokens) != 5 {
		t.Errorf("Converse: text %q usage %+v", got, out.Usage)
	}

	st, err := bedrockThroughGateway(e, "throttled,200").ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String(bedrockModel), Messages: msgs})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	stream := st.GetStream()
	var text strings.Builder
	var usage *types.TokenUsage
	for ev := range stream.Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			text.WriteString(v.Value.Delta.(*types.ContentBlockDeltaMemberText).Value)
		case *types.ConverseStreamOutputMemberMetadata:
			usage = v.Value.Usage
		}
	}
	// aws-sdk-go-v2's event-stream reader may report a read on a closed
	// connection once the last event is delivered, under load
	// (aws/aws-sdk-go-v2#2737): with the metadata in hand, the stream was whole.
	if err := stream.Err(); err != nil && !(errors.Is(err, net.ErrClosed) && usage != nil) {
		t.Fatalf("stream: %v", err)
	}
	stream.Close()
	if text.String() != "This is a fake answer." || usage == nil || aws.ToInt32(usage.OutputTokens) != 5 {
		t.Errorf("ConverseStream: text %q usage %+v", text.String(), usage)
	}

	reqs := e.up.Requests()
	if len(reqs) != 4 {
		t.Fatalf("upstream calls %d, want 4 (a 503 and a throttled first frame retried)", len(reqs))
	}
	for i, r := range reqs {
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential="+fake.DefaultAWS.AccessKeyID+"/") ||
			strings.Contains(auth, bedrockClientKey) || !strings.Contains(r.Path, "/model/") {
			t.Errorf("call %d: %s signed %q; want the gateway's own signature", i+1, r.Path, auth)
		}
	}
	if strings.Contains(e.logs.String(), bedrockClientKey) {
		t.Error("the client's key reached the attempt log")
	}
}

// TestBedrockSDKUnknownClientRefused: a client whose access key id is
// not a client token gets the gateway's 401 in Bedrock's shape, which the
// SDK raises as an AccessDeniedException; nothing goes upstream.
func TestBedrockSDKUnknownClientRefused(t *testing.T) {
	e := newEnv(t, "200", withBedrock(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := bedrockruntime.New(bedrockruntime.Options{
		Region:       fake.DefaultAWS.Region,
		BaseEndpoint: aws.String(e.srv.URL + "/bedrock"),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAUNKNOWNCLIENT001", "x", ""),
		Retryer:      aws.NopRetryer{},
	})
	_, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel),
		Messages: []types.Message{{Role: types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}})
	var denied *types.AccessDeniedException
	if !errors.As(err, &denied) {
		t.Fatalf("Converse: %v; want an AccessDeniedException", err)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Errorf("%d upstream calls; want none", n)
	}
}

// scriptOption puts the fake's script on each call an AWS SDK client
// makes.
func scriptOption(script string) []func(*middleware.Stack) error {
	return []func(*middleware.Stack) error{smithyhttp.AddHeaderValue(fake.ScriptHeader, script)}
}
