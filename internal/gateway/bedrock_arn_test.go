package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/encoding/httpbinding"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/spend"
)

// bedrockARNs are model ids given as ARNs, one of each kind Bedrock
// takes: the SDKs send each as one path segment, its "/" as %2F.
var bedrockARNs = []string{
	"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0",
	"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6",
	"arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abc123xyz789",
	"arn:aws:bedrock:us-east-1:123456789012:imported-model/k2m4n6p8q0r1",
	"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
}

// rawPaths records the escaped path of each request it passes on to the
// handler set in it, as the upstream received it.
type rawPaths struct {
	mu    sync.Mutex
	next  http.Handler
	paths []string
}

func (p *rawPaths) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.paths = append(p.paths, r.URL.EscapedPath())
	next := p.next
	p.mu.Unlock()
	next.ServeHTTP(w, r)
}

func (p *rawPaths) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.paths...)
}

// TestBedrockSDKModelARN: aws-sdk-go-v2's Bedrock Runtime client,
// pointed at the gateway, calls Converse and ConverseStream with a model
// ARN of every kind. Each call is answered; the ARN reaches the upstream
// escaped as the SDK escapes it (":" as %3A, "/" as %2F), signed by the
// gateway so that the fake's SigV4 check passes; and the gateway reads
// the ARN as the model: each call is priced at the ARN's own price and
// logged under it.
func TestBedrockSDKModelARN(t *testing.T) {
	rec := &rawPaths{}
	up := httptest.NewServer(rec)
	defer up.Close()
	e := newEnv(t, "200", func(c *config.Config) {
		withBedrock(t)(c)
		p := c.Providers["bedrock"]
		p.BaseURL = up.URL
		c.Providers["bedrock"] = p
		c.Prices = map[string]spend.Price{} // each ARN priced by its own name: 5 output tokens for $0.10
		for _, arn := range bedrockARNs {
			c.Prices[arn] = spend.Price{Output: 20000}
		}
		c.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 100, Period: "day", Scope: "all"}}
	})
	rec.mu.Lock()
	rec.next = e.up.Provider
	rec.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs := []types.Message{{Role: types.ConversationRoleUser,
		Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}
	client := bedrockThroughGateway(e, "200")

	var want []string
	for _, arn := range bedrockARNs {
		esc := "/model/" + httpbinding.EscapePath(arn, true)
		want = append(want, esc+"/converse", esc+"/converse-stream")

		out, err := client.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(arn), Messages: msgs})
		if err != nil {
			t.Fatalf("Converse %s: %v", arn, err)
		}
		msg := out.Output.(*types.ConverseOutputMemberMessage).Value
		if got := msg.Content[0].(*types.ContentBlockMemberText).Value; got != "This is a fake answer." {
			t.Errorf("Converse %s: text %q", arn, got)
		}

		st, err := client.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String(arn), Messages: msgs})
		if err != nil {
			t.Fatalf("ConverseStream %s: %v", arn, err)
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
		// aws/aws-sdk-go-v2#2737, as in TestBedrockSDKThroughGateway.
		if err := stream.Err(); err != nil && !(errors.Is(err, net.ErrClosed) && usage != nil) {
			t.Fatalf("stream %s: %v", arn, err)
		}
		stream.Close()
		if text.String() != "This is a fake answer." || usage == nil {
			t.Errorf("ConverseStream %s: text %q usage %+v", arn, text.String(), usage)
		}
		priced := 0
		for l := range strings.Lines(e.logs.String()) {
			if strings.Contains(l, `"model":"`+arn+`"`) && strings.Contains(l, `"cost_usd":0.1,`) {
				priced++
			}
		}
		if priced != 2 {
			t.Errorf("%d attempts logged with model %s at $0.10, want 2:\n%s", priced, arn, e.logs.String())
		}
	}
	got := rec.got()
	if len(got) != len(want) {
		t.Fatalf("upstream calls %d, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("upstream call %d: path %s, want %s", i+1, got[i], want[i])
		}
	}
}

// TestBedrockPathTraversalRefused: on a Bedrock route an escaped "/" is
// taken only inside the model segment, and even there no dot segment,
// empty segment, escaped dot or double encoding passes; on any other
// route none passes. Each gets 400 and nothing goes upstream.
func TestBedrockPathTraversalRefused(t *testing.T) {
	e := newEnv(t, "200", withBedrock(t))
	const arn = "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile"
	for _, p := range []string{
		"/bedrock/x%2Fy/model/" + arn + "%2Fa1/converse",     // before the model
		"/bedrock/model/" + arn + "%2Fa1/converse%2F..",      // after it
		"/bedrock/model/" + arn + "%2F..%2F..%2Fa1/converse", // dot segments in it
		"/bedrock/model/" + arn + "%2F.%2Fa1/converse",
		"/bedrock/model/..%2Fconverse/converse",
		"/bedrock/model/" + arn + "%2F%2Fa1/converse", // an empty segment
		"/bedrock/model/%2e%2e%2Fa1/converse",         // escaped dots
		"/bedrock/model/" + arn + "%252Fa1/converse",  // encoded twice
		"/bedrock/model/" + arn + "%5Ca1/converse",    // a backslash
		"/bedrock/model/" + arn + "%2F..;%2Fa1/converse",
		"/bedrock/%2e%2e/model/" + arn + "%2Fa1/converse",
		"/openai/v1/chat%2Fcompletions",
		"/openai/model/" + arn + "%2Fa1/converse", // a Bedrock path on another dialect's route
	} {
		req, err := http.NewRequest("POST", e.srv.URL+"/x", strings.NewReader(`{"messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = p // sent as written
		req.Header.Set("Authorization", "Bearer "+clientKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d %s; want 400", p, resp.StatusCode, b)
		}
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Errorf("%d upstream calls; want none", n)
	}
}
