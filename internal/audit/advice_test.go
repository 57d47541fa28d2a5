package audit

import (
	"strings"
	"testing"
)

// TestTimeoutAdvice checks the timeout advice of every language: a little
// above the gateway's total, with the SDK's retries at 0, so that the
// gateway's own 504 reaches the caller before the SDK gives up (an SDK
// timeout under the gateway's total cuts the gateway off mid-retry and,
// with SDK retries on, starts the whole chain again).
func TestTimeoutAdvice(t *testing.T) {
	tests := []struct {
		name, file, src, retriesZero string
	}{
		{"python", "a.py", "from openai import OpenAI\nc = OpenAI(max_retries=0)\n", "max_retries=0"},
		{"javascript", "a.ts", "import OpenAI from 'openai';\nconst c = new OpenAI({ maxRetries: 0 });\n", "maxRetries: 0"},
		{"go", "a.go", "package a\nimport (\n\"github.com/openai/openai-go/v3\"\n\"github.com/openai/openai-go/v3/option\"\n)\nvar c = openai.NewClient(option.WithMaxRetries(0))\n", "option.WithMaxRetries(0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(tree(t, map[string]string{tt.file: tt.src}))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("findings %+v, want one timeout finding", got)
			}
			fix := got[0].Fix
			for _, want := range []string{"a little above the gateway's total", "total + 5 s", tt.retriesZero} {
				if !strings.Contains(fix, want) {
					t.Errorf("fix %q does not say %q", fix, want)
				}
			}
			if strings.Contains(fix, "no longer than") {
				t.Errorf("fix %q still says the SDK timeout should not exceed the gateway's total", fix)
			}
		})
	}
}

// TestDirectClients checks that clients of AWS Bedrock and Google Vertex
// AI, which sign their own requests and cannot go through the gateway,
// are not told to set their retries to 0 and let the gateway retry, yet
// still get a finding for a missing timeout, worded for a direct client.
func TestDirectClients(t *testing.T) {
	tests := []struct {
		name, file, src, service string
	}{
		{"python bedrock", "a.py", "from anthropic import AnthropicBedrock\nc = AnthropicBedrock(aws_region='us-east-1')\n", "AWS Bedrock"},
		{"python async vertex", "a.py", "import anthropic\nc = anthropic.AsyncAnthropicVertex(region='us-east5', max_retries=4)\n", "Google Vertex AI"},
		{"js bedrock", "a.mjs", "import { AnthropicBedrock } from '@anthropic-ai/bedrock-sdk';\nconst c = new AnthropicBedrock({ awsRegion: 'us-east-1' });\n", "AWS Bedrock"},
		{"ts vertex", "a.ts", "import AnthropicVertex from '@anthropic-ai/vertex-sdk';\nconst c = new AnthropicVertex({ maxRetries: 5 });\n", "Google Vertex AI"},
		{"go bedrock", "a.go", "package a\nimport (\n\"github.com/anthropics/anthropic-sdk-go\"\n\"github.com/anthropics/anthropic-sdk-go/bedrock\"\n)\nvar c = anthropic.NewClient(bedrock.WithLoadDefaultConfig(nil))\n", "AWS Bedrock"},
		{"go vertex", "a.go", "package a\nimport (\n\"github.com/anthropics/anthropic-sdk-go\"\n\"github.com/anthropics/anthropic-sdk-go/vertex\"\n)\nvar c = anthropic.NewClient(vertex.WithGoogleAuth(nil, \"r\", \"p\"))\n", "Google Vertex AI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(tree(t, map[string]string{tt.file: tt.src}))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Line != 2 && got[0].Line != 6 {
				t.Fatalf("findings %+v, want one, for the missing timeout", got)
			}
			f := got[0]
			if !strings.Contains(f.Problem, "no explicit timeout") || !strings.Contains(f.Problem, "calls "+tt.service+" directly") {
				t.Errorf("problem %q, want a missing timeout on a client that calls %s directly", f.Problem, tt.service)
			}
			if strings.Contains(f.Fix, "let the gateway retry") || strings.Contains(f.Fix, "gateway's total") || !strings.Contains(f.Fix, "cannot front this client") {
				t.Errorf("fix %q, want advice for a client the gateway cannot front", f.Fix)
			}
		})
	}
	// Azure OpenAI goes through the gateway: it gets the usual advice.
	got, err := Scan(tree(t, map[string]string{"az.py": "from openai import AzureOpenAI\nc = AzureOpenAI()\n"}))
	if err != nil || len(got) != 2 || got[0].Fix != python.setRetries {
		t.Errorf("AzureOpenAI() findings %+v, %v; want retries and timeout with the gateway advice", got, err)
	}
}
