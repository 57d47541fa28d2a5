package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

// TestLearnedPacePerInferenceProfile: for a signing kind, what a 429
// teaches is scoped as Bedrock scopes its limits, by the model id the
// call names — an inference profile, or a profile's ARN — so a throttled
// profile's pace holds nothing of another's calls.
func TestLearnedPacePerInferenceProfile(t *testing.T) {
	e := newEnv(t, "200", withBedrock(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const (
		throttled = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/batchjobs01"
		other     = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
	)
	msgs := []types.Message{{Role: types.ConversationRoleUser,
		Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}
	converse := func(model, script string) {
		t.Helper()
		if _, err := bedrockThroughGateway(e, script).Converse(ctx, &bedrockruntime.ConverseInput{
			ModelId: aws.String(model), Messages: msgs}); err != nil {
			t.Fatalf("Converse %s: %v", model, err)
		}
	}
	converse(throttled, "throttled,200")
	start := time.Now()
	converse(other, "200")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the other profile's call took %v: held by the throttled one's pace", d)
	}
	buckets, raw := e.learnedBuckets()
	paces := map[string]string{}
	for k, b := range buckets {
		if b.LearnedPerSecond > 0 {
			paces[k] = b.SetBy
		}
	}
	if paces["pause:bedrock/"+throttled] != "429" {
		t.Errorf("no pace set by a 429 for the throttled profile's ARN in %s", raw)
	}
	if by, ok := paces["pause:bedrock/"+other]; ok {
		t.Errorf("the other profile has a pace set by %s: %s", by, raw)
	}
	if n := e.up.Calls(); n != 3 {
		t.Errorf("upstream calls %d, want 3 (the throttled call retried once)", n)
	}
}
